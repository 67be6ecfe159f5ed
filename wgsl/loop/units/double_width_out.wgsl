// Units of narrow_units.wgsl for an output twice as wide as the input (float16 -> uint32, unary): half an input
// chunk gives the output chunk, two output words from each input word. Those two input words are read as words
// (narrow_units.wgsl's load_chunk for units of half a chunk): the input's chunk view may end before the chunk that
// holds them, and the gaps between invocations come from L1.
fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    let a = load_chunk(OPERAND_A, A_LINEAR, 0u, first, offsets, in_row);
    return vec4<u32>(word_results(a.x, 0u), word_results(a.y, 0u));
}
