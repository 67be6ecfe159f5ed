// Adapter for two-input operators: ops/<name>.wgsl defines fn op(a: InElem, b: InElem) -> OutElem.
// (The prelude defines in_chunk / in_word: where each input lives.)
const HAS_B: bool = true;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a, b);
}
