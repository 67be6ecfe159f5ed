// The entry point of a kernel whose operation reports what it noted (Operation.error_flags) and keeps nothing in
// workgroup memory, or has it prepared inside the grid's work (DIVISOR_ROWS, TILES): the grid's work
// (run_workgroup, from the grid's file), then the invocation's report (finish_invocation, lib/error_flags.wgsl).
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    run_workgroup(group, groups, lane);
    finish_invocation();
}
