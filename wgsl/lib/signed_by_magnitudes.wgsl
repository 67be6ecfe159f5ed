// Remainders of signed integer lanes (dtype/sint.wgsl) from the remainders of their magnitudes (magnitude_rem, from
// the kernel's divider in lib/divide_*.wgsl), the signs put back on all lanes at once. x % 0 is 0 (gpuops decision,
// as NumPy), and INT_MIN % -1 gives 0, never a fault.

// |x| in every lane, as an unsigned number (the most negative value's magnitude fits too): the complement of a
// negative lane plus one, which cannot carry out of the lane (the complement is at most LANE_LOW's lane).
fn lanes_magnitude(x: u32) -> u32 {
    let negative = lanes_high_bit(x);
    return (x ^ lanes_fill(negative)) + negative;
}

// C's truncated remainder (floored false) or Python's modulus (floored true) in every lane.
fn signed_lanes_rem(a: u32, b: u32, floored: bool) -> u32 {
    let r = signed_lanes_fmod(a, b);
    if (!floored) {
        return r;
    }
    // Python's modulus: r + b (wrapping within the lane) where r is non-zero and its sign differs from b's (a zero
    // divisor gives r = 0). The lanes' low bits add, and their high bits are set from the sum's bit there by xor,
    // so no carry crosses into the next lane.
    let added = b & lanes_fill((lanes_high_bit(r) ^ lanes_high_bit(b)) & ~lanes_zero(r));
    if (LANES == 1u) {
        return r + added;
    }
    return ((r & LANE_LOW) + (added & LANE_LOW)) ^ ((r ^ added) & LANE_HIGH);
}

// The remainder of the magnitudes, negated where a is negative.
fn signed_lanes_fmod(a: u32, b: u32) -> u32 {
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
