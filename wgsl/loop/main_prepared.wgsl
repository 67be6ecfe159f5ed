// The entry point of a kernel whose operation keeps a table in workgroup memory (prepare_workgroup, from the
// operation's library), on a grid that prepares it before any work: FLAT, ROWS, REPLICATED_ROWS. (The grids that
// prepare it after their first loads, DIVISOR_ROWS and TILES, have prepared work of their own.)
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    prepare_workgroup(lane);
    run_workgroup(group, groups, lane);
}
