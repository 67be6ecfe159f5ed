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
    return f16_fmod_bits(a & 0xffffu, b & 0xffffu) | (f16_fmod_bits(a >> 16u, b >> 16u) << 16u);
}

// r + b for one lane's bits, rounded as NumPy rounds it (r and b of opposite signs, |r| < |b| or b infinite).
fn f16_add_opposite(r: u32, b: u32) -> u32 {
    return (b & F16_SIGN) | f16_sub_magnitudes(b & F16_ABS, r & F16_ABS);
}

// f16_add_opposite in the flagged lanes, r elsewhere. Both lanes are computed without branches: about half the
// lanes of ordinary data are flagged, so a warp would run both paths anyway. (An unflagged lane's sum is any
// number, so the low one is cut to its lane.)
fn lanes_add_opposite(r: u32, b: u32, moved: u32) -> u32 {
    let s = (f16_add_opposite(r & 0xffffu, b & 0xffffu) & 0xffffu) | (f16_add_opposite(r >> 16u, b >> 16u) << 16u);
    let flagged = lanes_fill(moved);
    return (s & flagged) | (r & ~flagged);
}

const ZERO_SIGN: u32 = F16_SIGN;  // of each lane: lanes_put sets it in the flagged lanes
