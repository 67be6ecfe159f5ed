// FLOAT16 elements as bit patterns in the low half of a u32 (see README.md for the interface).
// Results equal NumPy's (which computes in float32 and rounds to float16): see lib/f16_bits.wgsl for why the
// arithmetic can stay on 11-bit significands.
const ELEM_ZERO: u32 = 0u;
const ELEM_ONE: u32 = 0x3c00u;
const ELEM_MINUS_ONE: u32 = 0xbc00u;
const EXPONENT_LANES: u32 = 0x7c007c00u;  // lanes: see lib/float_lanes.wgsl

fn elem_is_nan(x: u32) -> bool {
    return (x & 0x7fffu) > 0x7c00u;
}

fn elem_is_zero(x: u32) -> bool {
    return (x & 0x7fffu) == 0u;
}

fn elem_is_negative(x: u32) -> bool {
    return (x >> 15u) == 1u;
}

fn elem_fmod(a: u32, b: u32) -> u32 {
    return f16_fmod_bits(a, b);
}

fn elem_add_opposite(r: u32, b: u32) -> u32 {
    return (b & F16_SIGN) | f16_sub_magnitudes(b & F16_ABS, r & F16_ABS);
}

fn elem_zero_with_sign_of(b: u32) -> u32 {
    return b & 0x8000u;
}
