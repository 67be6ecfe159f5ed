// MODULUS_* for FLOAT32 (dtype/float32.wgsl): the remainders of lib/f32_bits.wgsl.

// NumPy's invalid-value flag, for a NaN from operands that are not NaN (x % ±0, ±inf % y) and for a signalling NaN
// operand (lib/error_flags.wgsl; f32_remainder_any notes them).
const ERROR_FLAG: u32 = 8u;

// One lane: C's fmodf (np.fmod) and Python's modulus (np.remainder), exact (lib/f32_bits.wgsl).
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return f32_remainder_bits(a, b, false);
}

fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    return f32_remainder_bits(a, b, true);
}
