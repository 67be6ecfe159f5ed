// TILES (tiles.wgsl) where the operation keeps a table in workgroup memory: prepared after the first tile's loads,
// so that the table's fill runs while they are in flight, and before the barrier that ends the tile's fill.
fn run_workgroup(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    let first = tile_at(group);
    fill_tiles(first.origin, lane, first.columns, first.rows);
    prepare_workgroup(lane);
    workgroupBarrier();
    run_tile_work(first.origin, lane, first.columns, first.rows);
    run_later_tiles(group, groups, lane);
}
