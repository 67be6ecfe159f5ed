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
