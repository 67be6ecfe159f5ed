// Units of narrow.wgsl for an output a quarter as wide as the input (float32 -> uint8, unary) in ROWS kernels:
// four input chunks give the output chunk, output word k from input chunk k. (A broadcast row's chunks come from
// the cache, so the gaps this leaves between a warp's loads cost little, and a unit four times as large pays its
// fixed cost once for 16 elements: on an H200 the one-word unit held a broadcast IS_NAN to 39% of packed.)
fn word_of_chunk(first: u32, offsets: vec3<u32>, in_row: bool, c: u32) -> u32 {
    let a = load_chunk(OPERAND_A, A_LINEAR, c, first, offsets, in_row);
    return word_results(a.x, 0u).x | (word_results(a.y, 0u).x << 8u) | (word_results(a.z, 0u).x << 16u)
        | (word_results(a.w, 0u).x << 24u);
}

fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    return vec4<u32>(word_of_chunk(first, offsets, in_row, 0u), word_of_chunk(first, offsets, in_row, 1u),
                     word_of_chunk(first, offsets, in_row, 2u), word_of_chunk(first, offsets, in_row, 3u));
}
