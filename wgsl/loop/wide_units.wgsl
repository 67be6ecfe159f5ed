// Units (loop/units.wgsl) of 64-bit elements: a unit is one chunk, two elements, moved whole where its memory is
// one aligned chunk and element by element elsewhere; its results are stored by stores/wide_*.wgsl.

fn load_unit(operand: u32, linear: bool, offsets0: vec3<u32>, offsets1: vec3<u32>, in_row: bool) -> vec4<u32> {
    if (units_whole(operand, linear) || unit_is_chunk(operand, offsets0, in_row)) {
        return in_chunk(operand, offsets0[operand] / 2u);
    }
    return vec4<u32>(load_element(operand, offsets0[operand]), load_element(operand, offsets1[operand]));
}

// The results of the unit of elements first .. first + UNIT - 1 whose first offsets are `offsets0`: one chunk.
fn unit_results(first: u32, offsets0: vec3<u32>, in_row: bool) -> vec4<u32> {
    let offsets1 = unit_element_offsets(first, 1u, offsets0, in_row);
    let a = load_unit(OPERAND_A, A_LINEAR, offsets0, offsets1, in_row);
    var b = vec4<u32>();
    if (HAS_B) {
        b = load_unit(OPERAND_B, B_LINEAR, offsets0, offsets1, in_row);
    }
    return unit_results_of(a, b);
}

// The unit's results from its input words (what load_unit gives).
fn unit_results_of(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(compute(a.xy, b.xy), compute(a.zw, b.zw));
}
