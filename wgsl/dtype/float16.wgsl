// FLOAT16 elements as bit patterns in the low half of a u32 (see README.md for the interface).
// Results equal NumPy's (which computes in float32 and rounds to float16): see lib/f16_bits.wgsl for how the
// arithmetic runs on float32 values exactly.
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
