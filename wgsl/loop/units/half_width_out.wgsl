// Units of narrow_units.wgsl for an output half as wide as the input (float16 -> uint8, unary): two input chunks give
// the output chunk, output word k from input words 2k and 2k + 1 (a stepped output's unit: one input chunk, two
// output words).
fn results_of_two(w0: u32, w1: u32) -> u32 {
    return word_results(w0, 0u).x | (word_results(w1, 0u).x << 16u);
}

fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    let a0 = load_chunk(OPERAND_A, A_LINEAR, 0u, first, offsets, in_row);
    var out = vec4<u32>(results_of_two(a0.x, a0.y), results_of_two(a0.z, a0.w), 0u, 0u);
    if (UNIT == 2u * IN_PER_CHUNK) {  // a whole output chunk (a stepped output's unit is its first half)
        let a1 = load_chunk(OPERAND_A, A_LINEAR, 1u, first, offsets, in_row);
        out.z = results_of_two(a1.x, a1.y);
        out.w = results_of_two(a1.z, a1.w);
    }
    return out;
}
