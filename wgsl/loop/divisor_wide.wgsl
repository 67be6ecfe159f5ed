// The divisor-row grids' loads (grids/divisor_rows*.wgsl) of 64-bit elements (wide_units.wgsl).

// An operand's unit, in a row.
fn unit_input(operand: u32, linear: bool, first: u32, offsets0: vec3<u32>) -> vec4<u32> {
    return load_unit(operand, linear, offsets0, unit_element_offsets(first, 1u, offsets0, true), true);
}
