// Units of narrow.wgsl for an output twice as wide as the input (float16 -> uint32, unary): half an input chunk
// gives the output chunk, two output words from each input word.
// The unit's two input words. They are read as words: the
// input's chunk view may end before the chunk that holds them, and the gaps between invocations come from L1.
fn load_half(operand: u32, linear: bool, first: u32, first_offsets: vec3<u32>, in_row: bool) -> vec2<u32> {
    let start = contiguous_start(operand, linear, first, first_offsets, in_row);
    if (units_whole(operand, linear) || start != NO_START) {
        return vec2<u32>(in_word(operand, start / IN_PER_WORD), in_word(operand, start / IN_PER_WORD + 1u));
    }
    return gather_words(operand, 0u, UNIT, first, first_offsets, in_row).xy;
}

fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    let a = load_half(OPERAND_A, A_LINEAR, first, offsets, in_row);
    return vec4<u32>(word_results(a.x, 0u), word_results(a.y, 0u));
}
