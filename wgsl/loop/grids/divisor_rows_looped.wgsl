// The DIVISOR_ROWS_LOOPED grid (loop/rows.wgsl; gpuops/kernel.py: Grid.DIVISOR_ROWS_LOOPED, float16): the group's
// rows one after the other, b's unit loaded once before them. The rows are not written out one by one as in
// DIVISOR_ROWS (divisor_rows.wgsl): float16's lane-by-lane fallback (lib/f16_bits.wgsl) would then be copied for
// every lane of every row, and the registers it takes cost more warps than the shared loads save; looped, the
// kernel keeps one copy. What it saves is b's load and the unit's addressing per row: NVIDIA's compiler does not
// move b's own work (its conversion, reciprocal and checks) out of the loop, so every row still computes it. The
// loop's count is the group's rows, known only at run time. No workgroup memory, so no barrier: a partial last
// group simply runs fewer rows.
fn run_workgroup(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    let first_row = group_first_row(group, groups);
    if (first_row >= params.row_count) {
        return;  // the grid's surplus
    }
    let rows = min(ROW_GROUP, params.row_count - first_row);
    let row_size = dim_size(RANK - 1u);
    let step = dim_strides(RANK - 1u);
    let first_offsets = row_offsets(first_row);
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        let column = row_unit_column(group, lane, i);
        if (column >= row_size) {
            return;
        }
        let b = unit_input(OPERAND_B, B_LINEAR, first_row * row_size + column, first_offsets + column * step);
        for (var r = 0u; r < rows; r += 1u) {
            let row = first_row + r;
            let first = row * row_size + column;
            let start = UnitStart(row_offsets(row) + column * step, true);
            store_unit(first, start, unit_results_of(unit_input(OPERAND_A, A_LINEAR, first, start.offsets), b));
        }
    }
}
