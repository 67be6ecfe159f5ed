// The ROWS grid (loop/rows.wgsl): strided layouts whose innermost dimension holds whole units, at least a
// workgroup's worth; a unit's offsets are its row's plus a step along the row.
fn run_workgroup(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    let first_row = group_first_row(group, groups);
    if (first_row >= params.row_count) {
        return;  // the grid's surplus
    }
    let row_size = dim_size(RANK - 1u);
    let step = dim_strides(RANK - 1u);
    let offsets = row_offsets(first_row);
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        let column = row_unit_column(group, lane, i);
        if (column >= row_size) {
            return;
        }
        let first = first_row * row_size + column;
        run_full_unit(first, UnitStart(offsets + column * step, true));
    }
}
