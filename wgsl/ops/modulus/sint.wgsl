// MODULUS_* for INT8, INT16, INT32 (dtype/sint.wgsl): signed_lanes_rem comes from lib/signed_by_*.wgsl, chosen by
// the operator row's TypePolicy (gpuops/operators.py). Each notes x % 0 (lib/error_notes.wgsl: note_errors).

const ERROR_FLAG: u32 = 1u;  // NumPy's divide-by-zero flag, for x % 0 (lib/error_flags.wgsl)

// C's truncated remainder and Python's modulus in every lane: lib/signed_by_magnitudes.wgsl, or for int16
// lib/signed_by_estimate.wgsl and for int8 lib/signed_by_reciprocals.wgsl.
fn lanes_fmod(a: u32, b: u32) -> u32 {
    return signed_lanes_rem(a, b, false);
}

fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    return signed_lanes_rem(a, b, true);
}
