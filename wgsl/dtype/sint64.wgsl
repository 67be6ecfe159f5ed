// INT64 as vec2<u32> (low word, high word), two's complement over the full range (see README.md).
const ELEM_ZERO: vec2<u32> = vec2<u32>(0u, 0u);
const ELEM_ONE: vec2<u32> = vec2<u32>(1u, 0u);
const ELEM_MINUS_ONE: vec2<u32> = vec2<u32>(0xffffffffu, 0xffffffffu);

fn lanes_is_zero(x: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(select(0u, 1u, u64_is_zero(x)), 0u);
}

fn lanes_is_negative(x: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(x.y >> 31u, 0u);
}

fn lanes_is_nan(x: vec2<u32>) -> vec2<u32> {
    return vec2<u32>();
}

fn elem_is_nan(x: vec2<u32>) -> bool {
    return false;
}

fn elem_is_zero(x: vec2<u32>) -> bool {
    return u64_is_zero(x);
}

fn elem_is_negative(x: vec2<u32>) -> bool {
    return (x.y >> 31u) == 1u;
}

fn sint64_magnitude(x: vec2<u32>) -> vec2<u32> {
    return select(x, u64_negate(x), elem_is_negative(x));
}

fn lanes_fmod(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    // u64_rem gives 0 for a zero divisor; INT64_MIN % -1 gives 0 like the narrower types.
    let r = u64_rem(sint64_magnitude(a), sint64_magnitude(b));
    return select(r, u64_negate(r), elem_is_negative(a));
}

// Python's modulus: r + b (wrapping) where the remainder r is non-zero and its sign differs from b's.
fn lanes_mod_floor(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let r = lanes_fmod(a, b);
    return select(r, u64_add(r, b), !u64_is_zero(r) && elem_is_negative(r) != elem_is_negative(b));
}
