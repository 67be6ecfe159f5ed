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

// C's fmod on both lanes, exact (lib/f16_bits.wgsl).
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return f16_fmod_and_sum_bits(a & 0xffffu, b & 0xffffu).x | (f16_fmod_and_sum_bits(a >> 16u, b >> 16u).x << 16u);
}

// lanes_fmod, and r + b for MODULUS_FLOOR in every lane, rounded as NumPy rounds it where r and b have opposite
// signs (lib/f16_bits.wgsl). Both come from one remainder, on float32 values: converting r back from its bits for
// the addition cost float16 MODULUS_FLOOR a third of its speed on an H200.
fn lanes_fmod_and_sum(a: u32, b: u32, sum: ptr<function, u32>) -> u32 {
    let low = f16_fmod_and_sum_bits(a & 0xffffu, b & 0xffffu);
    let high = f16_fmod_and_sum_bits(a >> 16u, b >> 16u);
    *sum = low.y | (high.y << 16u);
    return low.x | (high.x << 16u);
}

const ZERO_SIGN: u32 = F16_SIGN;  // of each lane: lanes_put sets it in the flagged lanes
