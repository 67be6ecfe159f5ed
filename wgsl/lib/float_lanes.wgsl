// Lane predicates (see narrow.wgsl) of float32 and float16, from the bits: EXPONENT_LANES (from the dtype file)
// is an all-ones exponent in every lane. NaN: magnitude above it; infinity: magnitude equal to it.
fn lanes_is_nan(x: u32) -> u32 {
    return lanes_low_bits_above(x, EXPONENT_LANES);
}

fn lanes_is_inf(x: u32) -> u32 {
    return lanes_zero((x & LANE_LOW) ^ EXPONENT_LANES);
}

fn lanes_is_zero(x: u32) -> u32 {
    return lanes_zero(x & LANE_LOW);  // +0 and -0
}

fn lanes_is_negative(x: u32) -> u32 {
    return lanes_high_bit(x);
}
