// INT8, INT16, INT32: two's complement bits in the low IN_BITS of a u32, upper bits zero (see README.md).
// Signed `%` is miscompiled on some drivers: the remainders come from lib/signed_by_*.wgsl (see lanes_fmod).
const ELEM_ZERO: u32 = 0u;
const ELEM_ONE: u32 = 1u;
const ELEM_MINUS_ONE: u32 = IN_MASK;

fn lanes_is_zero(x: u32) -> u32 {
    return lanes_zero(x);
}

fn lanes_is_negative(x: u32) -> u32 {
    return lanes_high_bit(x);
}

fn lanes_is_nan(x: u32) -> u32 {
    return 0u;
}

fn elem_is_nan(x: u32) -> bool {
    return false;
}

fn elem_is_zero(x: u32) -> bool {
    return x == 0u;
}

fn elem_is_negative(x: u32) -> bool {
    return (x >> (IN_BITS - 1u)) == 1u;
}
