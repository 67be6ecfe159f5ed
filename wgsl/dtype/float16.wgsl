// FLOAT16 elements as bit patterns in the low half of a u32 (see README.md for the interface).
// Arithmetic follows NumPy: widen to float32 exactly, compute in float32, round once to float16.
const ELEM_ZERO: u32 = 0u;
const ELEM_ONE: u32 = 0x3c00u;
const ELEM_MINUS_ONE: u32 = 0xbc00u;

fn elem_is_nan(x: u32) -> bool {
    return (x & 0x7fffu) > 0x7c00u;
}

fn elem_is_inf(x: u32) -> bool {
    return (x & 0x7fffu) == 0x7c00u;
}

fn elem_is_zero(x: u32) -> bool {
    return (x & 0x7fffu) == 0u;
}

fn elem_is_negative(x: u32) -> bool {
    return (x >> 15u) == 1u;
}

fn elem_fmod(a: u32, b: u32) -> u32 {
    return f32_to_f16_bits(f32_fmod_bits(f16_to_f32_bits(a), f16_to_f32_bits(b)));
}

fn elem_add(a: u32, b: u32) -> u32 {
    return f32_to_f16_bits(f32_add_bits(f16_to_f32_bits(a), f16_to_f32_bits(b)));
}

fn elem_zero_with_sign_of(b: u32) -> u32 {
    return b & 0x8000u;
}
