// The entry point of every kernel but those that stage their output (entry_staged.wgsl).
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    prepare_workgroup(lane);  // lib/divide_*.wgsl: tables in workgroup memory, if the kernel has any
    if (ROWS) {
        run_row_units(group, groups, lane);
        return;
    }
    // A 2-D grid, because one dimension holds at most 65535 workgroups.
    let block = group.y * groups.x + group.x;
    let first_unit = block * (WORKGROUP_SIZE * UNITS_PER_INVOCATION) + lane;
    // Consecutive invocations take consecutive units, so every memory access of a warp is coalesced.
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        let unit = first_unit + i * WORKGROUP_SIZE;
        if (unit >= params.unit_count) {
            return;
        }
        run_unit(unit);
    }
}
