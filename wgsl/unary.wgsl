// Adapter for one-input operators: ops/<name>.wgsl defines fn op(x: InElem) -> OutElem over lanes: x holds one
// input word (every element of it, one per lane; a 64-bit element is one lane), and the result has each lane's
// result in that lane. A lane of zeros gives zero: the element paths pass one element with the other lanes zero.
// (The prelude defines in_chunk / in_word: where each input lives.)
const HAS_B: bool = false;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a);
}

// A one-input operator has no divisor, and its kernels never set DIVISOR_ROWS (binary.wgsl): each row's unit on
// its own, as ROW_GROUP 1 runs it.
fn run_divisor_rows(first_row: u32, column: u32, offsets: vec3<u32>, step: vec3<u32>) {
    let row_size = dim_size(RANK - 1u);
    for (var r = 0u; r < ROW_GROUP; r += 1u) {
        let row = first_row + r;
        if (row >= params.row_count) {
            break;
        }
        run_full_unit(row * row_size + column, UnitStart(row_offsets(row) + column * step, true));
    }
}
