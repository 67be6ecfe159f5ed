// Adapter for two-input operators: ops/<name>.wgsl defines fn op(a: InElem, b: InElem) -> OutElem.
const HAS_B: bool = true;

fn in_word(operand: u32, index: u32) -> InWord {
    if (operand == OPERAND_B) {
        return b_buf[index];
    }
    return a_buf[index];
}

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a, b);
}
