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

// One lane: C's fmodf, exact (lib/f32_bits.wgsl).
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return f32_fmod_bits(a, b);
}

// lanes_fmod, and r + b for MODULUS_FLOOR, rounded as NumPy rounds it, where r and b have opposite signs (r
// elsewhere: the addition is skipped where it is not used).
fn lanes_fmod_and_sum(a: u32, b: u32, sum: ptr<function, u32>) -> u32 {
    let r = f32_fmod_bits(a, b);
    *sum = r;
    if (elem_is_negative(r) != elem_is_negative(b) && !elem_is_zero(r) && !elem_is_nan(r)) {
        *sum = (b & F32_SIGN) | f32_sub_magnitudes(b & F32_ABS, r & F32_ABS);
    }
    return r;
}

const ZERO_SIGN: u32 = F32_SIGN;
