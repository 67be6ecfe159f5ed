// The entry point of kernels whose output stores are staged (out_staged.wgsl): a strided 8/16-bit output of one
// dimension. Each round of a workgroup runs WORKGROUP_SIZE consecutive units, staging their output words in
// workgroup memory, then writes the staged words from adjacent invocations. Every invocation reaches every barrier:
// the rounds' count is a constant and units past the end only skip their work.
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    clear_stage(lane);
    workgroupBarrier();
    prepare_workgroup(lane);  // lib/divide_*.wgsl: tables in workgroup memory, if the kernel has any
    let block = group.y * groups.x + group.x;  // a 2-D grid, as in entry.wgsl
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        let round_first_unit = block * (WORKGROUP_SIZE * UNITS_PER_INVOCATION) + i * WORKGROUP_SIZE;
        stage_origin = (params.base[OPERAND_OUT] + round_first_unit * UNIT * STAGE_STRIDE) / OUT_PER_WORD;
        let unit = round_first_unit + lane;
        if (unit < params.unit_count) {
            run_unit(unit);
        }
        workgroupBarrier();
        flush_stage(lane);
        workgroupBarrier();
    }
}
