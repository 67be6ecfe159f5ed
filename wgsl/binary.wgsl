// Adapter for two-input operators: ops/<name>.wgsl defines fn op(a: InElem, b: InElem) -> OutElem over lanes, as
// one-input operators do (unary.wgsl): a and b hold one input word each, and the result has each lane's result in
// that lane. The element paths pass one element in the lowest lane and keep only that lane of the result.
// (The prelude defines in_chunk / in_word: where each input lives.)
const HAS_B: bool = true;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a, b);
}

// DIVISOR_ROWS (plan.Grid.DIVISOR_ROWS): b alone is the same on every row (zero strides outside its rows), so an
// invocation loads its unit of b once and divides the unit's column in the group's four rows (ROW_GROUP, 4 wherever
// DIVISOR_ROWS is set) by it. The four rows' dividends are loaded before any is divided: with b read from the
// cache, a warp that loaded one row's unit at a time kept too few loads in flight to cover the memory's latency
// (the operator row's TypePolicy.divisor_rows). The entry point comes here before the workgroup is prepared
// (prepare_workgroup: the 8-bit division table), which happens after the loads, so that the table's fill and its
// barrier run while the loads are in flight. Every invocation reaches the barrier: a lane past its row's end loads
// the row's last unit and stores nothing. A partial last group takes its last row again in place of the rows it
// lacks: the same results to the same place, stored by the one invocation that owns them. Those stores are not
// skipped, because a branch around them lets the shader compiler move the loads after the first rows' work.
fn run_divisor_rows(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    if (DIVISOR_ROWS_LOOPED) {
        run_divisor_rows_looped(group, groups, lane);
        return;
    }
    let first_row = group_first_row(group, groups);
    if (first_row >= params.row_count) {
        return;  // the grid's surplus: whole workgroups, before the barrier
    }
    let row_size = dim_size(RANK - 1u);
    let step = dim_strides(RANK - 1u);
    let last = params.row_count - 1u;
    let rows = min(vec4<u32>(first_row) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(last));
    let offsets0 = row_offsets(rows.x);
    let offsets1 = row_offsets(rows.y);
    let offsets2 = row_offsets(rows.z);
    let offsets3 = row_offsets(rows.w);
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        let column_wanted = row_unit_column(group, lane, i);
        let column = min(column_wanted, row_size - UNIT);
        let firsts = rows * row_size + vec4<u32>(column);
        let s0 = UnitStart(offsets0 + column * step, true);
        let s1 = UnitStart(offsets1 + column * step, true);
        let s2 = UnitStart(offsets2 + column * step, true);
        let s3 = UnitStart(offsets3 + column * step, true);
        let b = unit_input(OPERAND_B, B_LINEAR, firsts.x, s0.offsets);
        let a0 = unit_input(OPERAND_A, A_LINEAR, firsts.x, s0.offsets);
        let a1 = unit_input(OPERAND_A, A_LINEAR, firsts.y, s1.offsets);
        let a2 = unit_input(OPERAND_A, A_LINEAR, firsts.z, s2.offsets);
        let a3 = unit_input(OPERAND_A, A_LINEAR, firsts.w, s3.offsets);
        if (i == 0u) {
            prepare_workgroup(lane);
        }
        if (column_wanted < row_size) {
            store_unit(firsts.x, s0, unit_results_of(a0, b));
            store_unit(firsts.y, s1, unit_results_of(a1, b));
            store_unit(firsts.z, s2, unit_results_of(a2, b));
            store_unit(firsts.w, s3, unit_results_of(a3, b));
        }
    }
}

// DIVISOR_ROWS_LOOPED (plan.Grid.DIVISOR_ROWS_LOOPED: float16): the group's rows one after the other, b's unit
// loaded once before them. The rows are not written out one by one as in run_divisor_rows: float16's lane-by-lane
// fallback (lib/f16_bits.wgsl) would then be copied for every lane of every row, and the registers it takes cost
// more warps than the shared loads save; looped, the kernel keeps one copy. What it saves is b's load and the
// unit's addressing per row: NVIDIA's compiler does not move b's own work (its conversion, reciprocal and checks)
// out of the loop, so every row still computes it. The loop's count is the group's rows, known only at run time.
// No workgroup memory, so no barrier: a partial last group simply runs fewer rows.
fn run_divisor_rows_looped(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
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
