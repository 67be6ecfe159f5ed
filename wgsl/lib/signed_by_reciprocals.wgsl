// Remainders of int8 lanes (dtype/sint.wgsl) from the table of signed reciprocals (lib/divide_by_reciprocals.wgsl,
// indexed by the divisor lane's bits): Python's or C's quotient of the lanes' values exactly from one multiply and
// one shift, and the remainder x + (-q) * y, with no magnitudes to take and no signs to put back. x % 0 is 0 (gpuops
// decision, as NumPy), and INT_MIN % -1 gives 0, never a fault. Chosen for the operators of
// shaders.SIGNED_BY_RECIPROCALS (both): no magnitudes and signs to take off and put back, so fewer instructions
// than lib/signed_by_magnitudes.wgsl.
//
// Every instruction here runs on the SMs' integer pipes, which on Hopper issue one warp instruction every second
// cycle each (shifts, logic and byte permutes on one; multiply-adds, and shifts left by a constant, on the other):
// with a broadcast divisor (DIVISOR_ROWS in binary.wgsl) those pipes, not the memory, bound the kernel. So the work
// is spread over both: a lane is extracted by two shifts, the left one a multiply there, rather than by a
// sign-extending bit-field extraction (two shifts on one pipe); the top lane's remainder is added into place (a
// multiply-add) rather than inserted; and the table holds the entries negated, so that the remainder is one
// multiply-add with no negation first.
//
// Why the quotient is exact: write E = sign(y) * R with R = floor(2^16 / |y|) + 1 (the table holds -E, above).
// p = x * E (below 2^24 in magnitude) is 2^16 (x / y + s e), where s is the sign of x / y and
// 0 <= e = |x| (R - 2^16 / |y|) / 2^16 <= 128 / 2^16 = 1/512 (e = 0 only for x = 0). Where x / y is not an
// integer, the integers around it are at least 1 / |y| >= 1/128 away.
// - floored: p / 2^16 + 1/256 lies in [x / y, x / y + 3/512], short of the next integer up, so its floor,
//   (p + 256) >> 16 as a signed shift, is floor(x / y).
// - truncated: for s = +1, p / 2^16 lies in (x / y, x / y + 1/512] and p >> 16 is floor(x / y) = trunc(x / y); for
//   s = -1, it lies in [x / y - 1/512, x / y), above floor(x / y) and never an integer, so its ceiling,
//   (p >> 16) + 1, is ceil(x / y) = trunc(x / y). The + 1 is p's sign bit.
// The table holds the entries negated (lib/divide_by_reciprocals.wgsl: the remainder is then one multiply-add,
// x + (-q) y), so the quotient is found negated from n = x * (-E) = -p, the product with the table's entry, with
// -floor(z) = floor(-z + 1 - 2^-16) for z a multiple of 2^-16:
// - floored: -q = -floor((p + 256) / 2^16) = floor((n - 256 + 0xffff) / 2^16) = (n + 0xfeff) >> 16.
// - truncated: for p >= 0, -q = -floor(p / 2^16) = ceil(n / 2^16) = ((n - 1) >> 16) + 1; for p < 0, n / 2^16 is
//   never an integer (above), so -q = -ceil(p / 2^16) = floor(n / 2^16) = (n - 1) >> 16. The + 1 where n <= 0 is
//   the sign bit of n - 1 (|n| < 2^24).
// Arithmetic shifts of i32 (sign-extending) are the only signed operations here: the operations some shader
// translators get wrong are signed `%` and `/` (dtype/README.md), which this avoids.

// The lane of `word` at bit `shift`, as its value's 32-bit two's complement bits: moved to the top byte, then
// shifted down arithmetically (see above for why not extractBits).
fn signed_lane_value(word: u32, shift: u32) -> u32 {
    return bitcast<u32>(bitcast<i32>(word << (24u - shift)) >> 24u);
}

// The remainder of the lanes at bit `shift`, as 32-bit two's complement bits (the caller keeps the low 8). A zero
// divisor (entry 0) gives x, which the caller masks.
fn signed_lane_rem(a: u32, b: u32, shift: u32, floored: bool) -> u32 {
    let x = signed_lane_value(a, shift);
    let n = x * reciprocals[SIGNED_RECIPROCALS + extractBits(b, shift, 8u)];  // -p
    var negated_quotient: u32;
    if (floored) {
        negated_quotient = bitcast<u32>(bitcast<i32>(n + 0xfeffu) >> 16u);
    } else {
        let t = n - 1u;
        negated_quotient = bitcast<u32>(bitcast<i32>(t) >> 16u) + (t >> 31u);
    }
    return x + negated_quotient * signed_lane_value(b, shift);
}

// Python's modulus (floored true) or C's truncated remainder (floored false) in the four lanes of a word.
fn signed_lanes_rem(a: u32, b: u32, floored: bool) -> u32 {
    var r = signed_lane_rem(a, b, 0u, floored) & 0xffu;
    r = insertBits(r, signed_lane_rem(a, b, 8u, floored), 8u, 8u);
    r = insertBits(r, signed_lane_rem(a, b, 16u, floored), 16u, 8u);
    r += signed_lane_rem(a, b, 24u, floored) << 24u;  // the top lane: its bits above 8 shift out
    let zero = lanes_zero(b);
    note_errors(zero);  // x % 0 (lib/error_notes.wgsl)
    return r & ~lanes_fill(zero);
}
