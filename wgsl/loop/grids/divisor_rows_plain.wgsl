// DIVISOR_ROWS (divisor_rows.wgsl) where the operation keeps nothing in workgroup memory.
fn run_workgroup(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    let first_row = group_first_row(group, groups);
    if (first_row >= params.row_count) {
        return;  // the grid's surplus
    }
    let g = divisor_rows(first_row);
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        store_divisor_units(load_divisor_units(g, group, lane, i));
    }
}
