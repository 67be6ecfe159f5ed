// MODULUS_* for FLOAT16 (dtype/float16.wgsl): the remainders of lib/f16_bits.wgsl.

// NumPy's invalid-value flag, for a NaN from operands that are not NaN (x % ±0, ±inf % y) and for a signalling NaN
// operand (lib/error_flags.wgsl; f16_special_rem notes them).
const ERROR_FLAG: u32 = 8u;

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
