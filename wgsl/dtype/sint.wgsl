// INT8, INT16, INT32: two's complement bits in the low IN_BITS of a u32, upper bits zero (see README.md).
// Division works on magnitudes (magnitude_rem, lib/divide_*.wgsl): signed `%` is miscompiled on some drivers.
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

// |x| as an unsigned number; the most negative value's magnitude fits too.
fn sint_magnitude(x: u32) -> u32 {
    return select(x, (0u - x) & IN_MASK, elem_is_negative(x));
}

fn elem_fmod(a: u32, b: u32) -> u32 {
    if (b == 0u) {
        return 0u;  // gpuops decision, as NumPy: x % 0 == 0
    }
    let r = magnitude_rem(sint_magnitude(a), sint_magnitude(b));  // INT_MIN % -1 gives 0 here, never a fault
    return select(r, (0u - r) & IN_MASK, elem_is_negative(a));
}

fn elem_add_opposite(r: u32, b: u32) -> u32 {
    return (r + b) & IN_MASK;
}

fn elem_zero_with_sign_of(b: u32) -> u32 {
    return 0u;
}
