// MODULUS_* for UINT64 (dtype/uint64.wgsl): 64-bit remainders of lib/u64.wgsl.

const ERROR_FLAG: u32 = 1u;  // NumPy's divide-by-zero flag, for x % 0 (lib/error_flags.wgsl)

fn lanes_fmod(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    note_errors(lanes_is_zero(b).x);
    return u64_rem(a, b);  // 0 for a zero divisor
}

// Python's modulus equals C's: no unsigned value is negative.
fn lanes_mod_floor(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return lanes_fmod(a, b);
}
