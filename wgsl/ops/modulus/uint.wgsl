// MODULUS_* for UINT8, UINT16, UINT32 (dtype/uint.wgsl): magnitudes divided lane by lane (lanes.wgsl).

const ERROR_FLAG: u32 = 1u;  // NumPy's divide-by-zero flag, for x % 0 (lib/error_flags.wgsl)

// C's truncated remainder in every lane; x % 0 is 0 (gpuops decision, as NumPy), and noted.
fn lanes_fmod(a: u32, b: u32) -> u32 {
    let zero = lanes_zero(b);
    note_errors(zero);
    return lanes_magnitude_rem(a, b) & ~lanes_fill(zero);
}

// Python's modulus equals C's: no unsigned value is negative.
fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    return lanes_fmod(a, b);
}
