// The REPLICATED_ROWS grid (loop/rows.wgsl): every input is the same on every row, so an invocation computes its
// unit's results once and stores them to each of the ROW_GROUP rows of its group.
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
        let out = unit_results(first, offsets + column * step, true);
        for (var r = 0u; r < ROW_GROUP; r += 1u) {
            let row = first_row + r;
            if (row >= params.row_count) {
                break;  // the last group's surplus
            }
            store_unit(row * row_size + column, UnitStart(row_offsets(row) + column * step, true), out);
        }
    }
}
