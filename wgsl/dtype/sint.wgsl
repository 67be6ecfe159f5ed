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

// |x| in every lane, as an unsigned number (the most negative value's magnitude fits too): the complement of a
// negative lane plus one, which cannot carry out of the lane (the complement is at most LANE_LOW's lane).
fn lanes_magnitude(x: u32) -> u32 {
    let negative = lanes_high_bit(x);
    return (x ^ lanes_fill(negative)) + negative;
}

// C's truncated remainder in every lane: the remainder of the magnitudes, negated where a is negative. x % 0 is 0
// (gpuops decision, as NumPy), and INT_MIN % -1 gives 0, never a fault.
fn lanes_fmod(a: u32, b: u32) -> u32 {
    if (LANES == 1u) {
        // One element per word (32-bit): a test and selects cost fewer instructions than the lane arithmetic.
        if (b == 0u) {
            return 0u;
        }
        let r = magnitude_rem(lanes_magnitude(a), lanes_magnitude(b));
        return select(r, 0u - r, elem_is_negative(a));
    }
    let m = lanes_magnitude_rem(lanes_magnitude(a), lanes_magnitude(b)) & ~lanes_fill(lanes_zero(b));
    // Negate the non-zero lanes of a negative a: m < 2^(IN_BITS-1) there, so the complement plus one stays in
    // its lane (a zero lane would carry).
    let negated = lanes_high_bit(a) & ~lanes_zero(m);
    return (m ^ lanes_fill(negated)) + negated;
}

// Python's modulus in every lane: r + b (wrapping within the lane) where the remainder r is non-zero and its sign
// differs from b's (a zero divisor gives r = 0). The lanes' low bits add, and their high bits are set from the
// sum's bit there by xor, so no carry crosses into the next lane.
fn lanes_mod_floor(a: u32, b: u32) -> u32 {
    let r = lanes_fmod(a, b);
    let added = b & lanes_fill((lanes_high_bit(r) ^ lanes_high_bit(b)) & ~lanes_zero(r));
    if (LANES == 1u) {
        return r + added;
    }
    return ((r & LANE_LOW) + (added & LANE_LOW)) ^ ((r ^ added) & LANE_HIGH);
}
