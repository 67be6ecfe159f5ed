// Remainders of signed integer lanes (dtype/sint.wgsl) from the remainders of their magnitudes (magnitude_rem, from
// the kernel's divider in lib/divide_*.wgsl), the signs put back on all lanes at once. x % 0 is 0 (gpuops decision,
// as NumPy) and noted (lib/error_notes.wgsl), and INT_MIN % -1 gives 0, never a fault.

// |x| in every lane, as an unsigned number (the most negative value's magnitude fits too): the complement of a
// negative lane plus one, which cannot carry out of the lane (the complement is at most LANE_LOW's lane).
fn lanes_magnitude(x: u32) -> u32 {
    let negative = lanes_high_bit(x);
    return (x ^ lanes_fill(negative)) + negative;
}

// -value in each lane flagged in `negative` (1 in a lane's lowest bit), value elsewhere: the complement plus one,
// added without carries between lanes (a zero lane's complement plus one would carry out of it): the low bits add,
// the high bit is xored in. Fewer instructions than finding the zero lanes first, which counts in a compute-bound
// kernel.
fn lanes_negate(value: u32, negative: u32) -> u32 {
    let complemented = value ^ lanes_fill(negative);
    return ((complemented & LANE_LOW) + negative) ^ (complemented & LANE_HIGH);
}

// C's truncated remainder (floored false) or Python's modulus (floored true) in every lane.
fn signed_lanes_rem(a: u32, b: u32, floored: bool) -> u32 {
    if (LANES == 1u) {
        // One element per word (32-bit): a test and selects cost fewer instructions than the lane arithmetic.
        if (b == 0u) {
            note_errors(1u);
            return 0u;
        }
        let r = magnitude_rem(lanes_magnitude(a), lanes_magnitude(b));
        let truncated = select(r, 0u - r, elem_is_negative(a));
        if (!floored) {
            return truncated;
        }
        // Python's modulus: r + b where r is non-zero and its sign differs from b's.
        return truncated + select(0u, b, r != 0u && elem_is_negative(truncated) != elem_is_negative(b));
    }
    let magnitude_b = lanes_magnitude(b);
    let zero = lanes_zero(b);
    note_errors(zero);
    let m = lanes_magnitude_rem(lanes_magnitude(a), magnitude_b) & ~lanes_fill(zero);
    if (!floored) {
        return lanes_negate(m, lanes_high_bit(a));  // C's remainder: m with a's sign
    }
    // Python's modulus: m, or |b| - m where a and b's signs differ and m is not zero, with b's sign. |b| - m needs no
    // borrow from the next lane: m < |b| in every lane, and both are 0 where b is. Fewer instructions than C's
    // remainder plus b where the signs differ.
    let moved = lanes_fill(lanes_high_bit(a ^ b) & (lanes_zero(m) ^ LANE_ONES));
    return lanes_negate(m ^ ((m ^ (magnitude_b - m)) & moved), lanes_high_bit(b));
}
