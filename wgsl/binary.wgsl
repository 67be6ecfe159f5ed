// Adapter for two-input operators: ops/<name>.wgsl defines fn op(a: InElem, b: InElem) -> OutElem over lanes, as
// one-input operators do (unary.wgsl): a and b hold one input word each, and the result has each lane's result in
// that lane. The element paths pass one element in the lowest lane and keep only that lane of the result.
// (The prelude defines in_chunk / in_word: where each input lives.)
const HAS_B: bool = true;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a, b);
}

// DIVISOR_ROWS (KernelKey.divisor_rows): b alone is the same on every row (zero strides outside its rows), so an
// invocation loads its unit of b once and divides the unit's column in the group's four rows (ROW_GROUP, 4 wherever
// DIVISOR_ROWS is set) by it. The four rows' dividends are loaded before any is divided: with b read from the
// cache, a warp that loaded one row's unit at a time kept too few loads in flight to cover the memory's latency
// (gpuops/shaders.py: DIVISOR_ROW_TYPES). A partial last group takes its last row again in place of the rows it
// lacks: the same results to the same place, stored by the one invocation that owns them. The stores are not
// skipped there, because a branch around them let the shader compiler move the loads after the first rows' work
// (int8 MODULUS_TRUNCATE ran 2811-2819 -> 2946-2962 GB/s on an H200 without the branches).
fn run_divisor_rows(first_row: u32, column: u32, offsets: vec3<u32>, step: vec3<u32>) {
    let row_size = dim_size(RANK - 1u);
    let last = params.row_count - 1u;
    let rows = min(vec4<u32>(first_row) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(last));
    let firsts = rows * row_size + vec4<u32>(column);
    let s0 = UnitStart(offsets + column * step, true);
    let s1 = UnitStart(row_offsets(rows.y) + column * step, true);
    let s2 = UnitStart(row_offsets(rows.z) + column * step, true);
    let s3 = UnitStart(row_offsets(rows.w) + column * step, true);
    let b = unit_input(OPERAND_B, B_LINEAR, firsts.x, s0.offsets);
    let a0 = unit_input(OPERAND_A, A_LINEAR, firsts.x, s0.offsets);
    let a1 = unit_input(OPERAND_A, A_LINEAR, firsts.y, s1.offsets);
    let a2 = unit_input(OPERAND_A, A_LINEAR, firsts.z, s2.offsets);
    let a3 = unit_input(OPERAND_A, A_LINEAR, firsts.w, s3.offsets);
    store_unit(firsts.x, s0, unit_results_of(a0, b));
    store_unit(firsts.y, s1, unit_results_of(a1, b));
    store_unit(firsts.z, s2, unit_results_of(a2, b));
    store_unit(firsts.w, s3, unit_results_of(a3, b));
}
