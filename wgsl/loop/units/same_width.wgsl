// Units of narrow_units.wgsl when input and output have the same width (every operator but IS_NAN / IS_INFINITY on
// float16, and those on float32 -> uint32): one input chunk per operand gives the output chunk (half a chunk gives
// two words where a stepped output halves the unit).
fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    let a = load_chunk(OPERAND_A, A_LINEAR, 0u, first, offsets, in_row);
    var b = vec4<u32>();
    if (HAS_B) {
        b = load_chunk(OPERAND_B, B_LINEAR, 0u, first, offsets, in_row);
    }
    return unit_results_of(a, b);
}

// The unit's results from its input words (what load_chunk gives).
fn unit_results_of(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    if (UNIT < IN_PER_CHUNK) {  // half a chunk (a stepped output's unit): two words
        return vec4<u32>(word_results(a.x, b.x).x, word_results(a.y, b.y).x, 0u, 0u);
    }
    return vec4<u32>(word_results(a.x, b.x).x, word_results(a.y, b.y).x, word_results(a.z, b.z).x,
                     word_results(a.w, b.w).x);
}
