// MODULUS_* for INT64 (dtype/sint64.wgsl): 64-bit remainders of lib/u64.wgsl on magnitudes.

const ERROR_FLAG: u32 = 1u;  // NumPy's divide-by-zero flag, for x % 0 (lib/error_flags.wgsl)

fn sint64_magnitude(x: vec2<u32>) -> vec2<u32> {
    return select(x, u64_negate(x), elem_is_negative(x));
}

fn lanes_fmod(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    // u64_rem gives 0 for a zero divisor (noted); INT64_MIN % -1 gives 0 like the narrower types.
    note_errors(lanes_is_zero(b).x);
    let r = u64_rem(sint64_magnitude(a), sint64_magnitude(b));
    return select(r, u64_negate(r), elem_is_negative(a));
}

// Python's modulus: r + b (wrapping) where the remainder r is non-zero and its sign differs from b's.
fn lanes_mod_floor(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let r = lanes_fmod(a, b);
    return select(r, u64_add(r, b), !u64_is_zero(r) && elem_is_negative(r) != elem_is_negative(b));
}
