// Adapter for one-input operators: ops/<name>.wgsl defines fn op(x: InElem) -> OutElem over lanes: x holds one
// input word (every element of it, one per lane; a 64-bit element is one lane), and the result has each lane's
// result in that lane. A lane of zeros gives zero: the element paths pass one element with the other lanes zero.
// (The prelude defines in_chunk / in_word: where each input lives.)
const HAS_B: bool = false;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a);
}

// A one-input operator has no divisor, and its kernels never set DIVISOR_ROWS: common.wgsl's call of this
// (binary.wgsl's) is a branch on that constant, never taken here.
fn run_divisor_rows(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
}
