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

// C's fmod (np.fmod) and Python's modulus (np.remainder) on both lanes, exact (lib/f16_bits.wgsl): both lanes at
// once (f16_pair_rem), and a lane whose operands or result are not the usual ones again alone, on its bits.
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return lanes_rem(a, b, false);
}

fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    return lanes_rem(a, b, true);
}

fn lanes_rem(a: u32, b: u32, floored: bool) -> u32 {
    let pair = f16_pair_rem(a, b, floored);
    var bits = pair.bits;
    // Only the unusual lane goes lane by lane: a warp then runs that path for a lane position where one of its
    // invocations has an unusual lane there, not for every word that holds one.
    if (!pair.usual.x) {
        bits = insertBits(bits, f16_remainder_bits(a & 0xffffu, b & 0xffffu, floored), 0u, 16u);
    }
    if (!pair.usual.y) {
        bits = insertBits(bits, f16_remainder_bits(a >> 16u, b >> 16u, floored), 16u, 16u);
    }
    return bits;
}
