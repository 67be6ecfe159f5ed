// Adapter for one-input operators: ops/<name>.wgsl defines fn op(x: InElem) -> OutElem.
// (The prelude defines in_chunk / in_word: where each input lives.)
const HAS_B: bool = false;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a);
}
