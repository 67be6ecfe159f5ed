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
