// The entry point of a kernel whose operation keeps a table in workgroup memory, on a grid that prepares it before
// any work (as main_prepared.wgsl), and reports what it noted (Operation.error_flags): the invocation's report
// (finish_invocation, lib/error_flags.wgsl) after the grid's work.
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    prepare_workgroup(lane);
    run_workgroup(group, groups, lane);
    finish_invocation();
}
