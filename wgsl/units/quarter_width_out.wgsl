// Units of narrow.wgsl for an output a quarter as wide as the input (float32 -> uint8, unary): one input chunk
// gives one output word. (Units of a whole output chunk, four input chunks each, ran slower on an H200: a warp's
// loads then leave gaps of three chunks.)
fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    let a = load_chunk(OPERAND_A, A_LINEAR, 0u, first, offsets, in_row);
    let word = word_results(a.x, 0u).x | (word_results(a.y, 0u).x << 8u) | (word_results(a.z, 0u).x << 16u)
        | (word_results(a.w, 0u).x << 24u);
    return vec4<u32>(word, 0u, 0u, 0u);
}
