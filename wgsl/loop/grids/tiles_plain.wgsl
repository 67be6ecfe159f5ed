// TILES (tiles.wgsl) where the operation keeps nothing in workgroup memory: the workgroup's tile, then (TILE_LOOPS)
// the others it takes.
fn run_workgroup(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    run_tile(group, lane);
    run_later_tiles(group, groups, lane);
}
