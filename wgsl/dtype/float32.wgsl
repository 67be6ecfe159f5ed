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

// r + b rounded as NumPy rounds it, where flagged (r and b of opposite signs, |r| < |b| or b infinite).
fn lanes_add_opposite(r: u32, b: u32, moved: u32) -> u32 {
    if (moved == 0u) {
        return r;
    }
    return (b & F32_SIGN) | f32_sub_magnitudes(b & F32_ABS, r & F32_ABS);
}

const ZERO_SIGN: u32 = F32_SIGN;
