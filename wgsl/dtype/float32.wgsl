// FLOAT32 elements as their bit patterns (see README.md for the interface).
const ELEM_ZERO: u32 = 0u;
const ELEM_ONE: u32 = 0x3f800000u;
const ELEM_MINUS_ONE: u32 = 0xbf800000u;
const EXPONENT_LANES: u32 = 0x7f800000u;  // lanes: see lib/float_lanes.wgsl

fn elem_is_nan(x: u32) -> bool {
    return (x & 0x7fffffffu) > 0x7f800000u;
}

fn elem_is_zero(x: u32) -> bool {
    return (x & 0x7fffffffu) == 0u;
}

fn elem_is_negative(x: u32) -> bool {
    return (x >> 31u) == 1u;
}

// One lane: C's fmodf (np.fmod) and Python's modulus (np.remainder), exact (lib/f32_bits.wgsl).
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return f32_remainder_bits(a, b, false);
}

fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    return f32_remainder_bits(a, b, true);
}
