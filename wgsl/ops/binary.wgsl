// The loop's compute(a, b) for two-input operators: ops/<name>.wgsl defines fn op(a: InElem, b: InElem) -> OutElem
// over lanes, as one-input operators do (unary.wgsl): a and b hold one input word each, and the result has each
// lane's result in that lane. The element path (loop/grids/flat.wgsl: run_elements) passes one element in every
// lane and keeps only the lowest lane's result.
const HAS_B: bool = true;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a, b);
}
