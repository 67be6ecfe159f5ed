// MODULUS_* for FLOAT32 (dtype/float32.wgsl): the remainders of lib/f32_bits.wgsl.

// One lane: C's fmodf (np.fmod) and Python's modulus (np.remainder), exact (lib/f32_bits.wgsl).
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return f32_remainder_bits(a, b, false);
}

fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    return f32_remainder_bits(a, b, true);
}
