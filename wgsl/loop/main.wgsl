// The entry point of a kernel whose operation keeps nothing in workgroup memory: the grid's work
// (run_workgroup, from the grid's file).
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    run_workgroup(group, groups, lane);
}
