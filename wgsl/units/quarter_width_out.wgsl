// Units of narrow.wgsl for an output a quarter as wide as the input (float32 -> uint8, unary): four input chunks
// give the output chunk, output word k from input chunk k.
fn results_of_four(w: vec4<u32>) -> u32 {
    return word_results(w.x, 0u).x | (word_results(w.y, 0u).x << 8u) | (word_results(w.z, 0u).x << 16u)
        | (word_results(w.w, 0u).x << 24u);
}

fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    return vec4<u32>(results_of_four(load_chunk(OPERAND_A, A_LINEAR, 0u, first, offsets, in_row)),
                     results_of_four(load_chunk(OPERAND_A, A_LINEAR, 1u, first, offsets, in_row)),
                     results_of_four(load_chunk(OPERAND_A, A_LINEAR, 2u, first, offsets, in_row)),
                     results_of_four(load_chunk(OPERAND_A, A_LINEAR, 3u, first, offsets, in_row)));
}
