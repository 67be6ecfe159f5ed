// MODULUS_* for UINT8, UINT16, UINT32 (dtype/uint.wgsl): magnitudes divided lane by lane (lanes.wgsl).

// C's truncated remainder in every lane; x % 0 is 0 (gpuops decision, as NumPy).
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return lanes_magnitude_rem(a, b) & ~lanes_fill(lanes_zero(b));
}

// Python's modulus equals C's: no unsigned value is negative.
fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    return lanes_fmod(a, b);
}
