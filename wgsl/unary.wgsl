// Adapter for one-input operators: ops/<name>.wgsl defines fn op(x: InElem) -> OutElem.
const HAS_B: bool = false;

fn in_chunk(operand: u32, index: u32) -> vec4<u32> {
    return a_chunks[index];
}

fn in_word(operand: u32, index: u32) -> u32 {
    return a_words[index];
}

fn compute(a: InElem, b: InElem) -> OutElem {
    return op(a);
}
