// Adapter for one-input operators: ops/<name>.wgsl defines fn op(x: InElem) -> OutElem.
const HAS_B: bool = false;

fn in_word(operand: u32, index: u32) -> InWord {
    return a_buf[index];
}

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a);
}
