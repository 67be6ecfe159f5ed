// Adapter for two-input operators: ops/<name>.wgsl defines fn op(a: InElem, b: InElem) -> OutElem.
const HAS_B: bool = true;

fn in_chunk(operand: u32, index: u32) -> vec4<u32> {
    if (operand == OPERAND_B) {
        return b_chunks[index];
    }
    return a_chunks[index];
}

fn in_word(operand: u32, index: u32) -> u32 {
    if (operand == OPERAND_B) {
        return b_words[index];
    }
    return a_words[index];
}

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a, b);
}
