// The loop's compute(a, b) for one-input operators: ops/<name>.wgsl defines fn op(x: InElem) -> OutElem over
// lanes: x holds one input word (every element of it, one per lane; a 64-bit element is one lane), and the result
// has each lane's result in that lane. A lane of zeros gives zero: the element paths pass one element with the
// other lanes zero.
const HAS_B: bool = false;

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a);
}
