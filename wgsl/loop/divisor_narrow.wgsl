// The divisor-row grids' loads (grids/divisor_rows*.wgsl) of 8/16/32-bit elements (narrow_units.wgsl, same
// width in and out: the operators that divide).

// An operand's unit, in a row.
fn unit_input(operand: u32, linear: bool, first: u32, offsets: vec3<u32>) -> vec4<u32> {
    return load_chunk(operand, linear, 0u, first, offsets, true);
}
