// Remainders of int8 lanes (dtype/sint.wgsl) from the table of signed reciprocals (lib/divide_by_reciprocals.wgsl,
// indexed by the divisor lane's bits): Python's or C's quotient of the lanes' values exactly from one multiply and
// one shift, and the remainder x - q * y, with no magnitudes to take and no signs to put back. x % 0 is 0 (gpuops
// decision, as NumPy), and INT_MIN % -1 gives 0, never a fault. Chosen for the operators of
// shaders.SIGNED_BY_RECIPROCALS (MODULUS_FLOOR): on an H200 int8 MODULUS_FLOOR ran 3470-3476 -> 3827 GB/s
// (wgpu-native) and 3437 -> 3668-3682 (Dawn) this way, against lib/signed_by_magnitudes.wgsl, while MODULUS_TRUNCATE
// ran 3% slower (3725-3729 -> 3616-3620, 3641 -> 3511) and keeps the magnitudes (its quotient needs the sign
// correction below; tests/test_bindings.py runs it on every pair all the same).
//
// Why the quotient is exact: the entry is sign(y) * R with R = floor(2^16 / |y|) + 1, so p = x * entry (below 2^24
// in magnitude) is 2^16 (x / y + s e), where s is the sign of x / y and 0 <= e = |x| (R - 2^16 / |y|) / 2^16 <=
// 128 / 2^16 = 1/512 (e = 0 only for x = 0). Where x / y is not an integer, the integers around it are at least
// 1 / |y| >= 1/128 away.
// - floored: p / 2^16 + 1/256 lies in [x / y, x / y + 3/512], short of the next integer up, so its floor,
//   (p + 256) >> 16 as a signed shift, is floor(x / y).
// - truncated: for s = +1, p / 2^16 lies in (x / y, x / y + 1/512] and p >> 16 is floor(x / y) = trunc(x / y); for
//   s = -1, it lies in [x / y - 1/512, x / y), above floor(x / y) and never an integer, so its ceiling,
//   (p >> 16) + 1, is ceil(x / y) = trunc(x / y). The + 1 is p's sign bit.
// Arithmetic shifts and bit-field extraction of i32 (sign-extending) are the only signed operations here: the traps
// (webgpu-traps.md) are signed `%` and `/`, which this avoids.

// The lane of `word` at bit `shift`, as its value's 32-bit two's complement bits.
fn signed_lane_value(word: u32, shift: u32) -> u32 {
    return bitcast<u32>(extractBits(bitcast<i32>(word), shift, 8u));
}

// The remainder of the lanes at bit `shift`, as 32-bit two's complement bits (the caller keeps the low 8). A zero
// divisor (entry 0) gives x, which the caller masks.
fn signed_lane_rem(a: u32, b: u32, shift: u32, floored: bool) -> u32 {
    let x = signed_lane_value(a, shift);
    let p = x * reciprocals[SIGNED_RECIPROCALS + extractBits(b, shift, 8u)];
    var q: u32;
    if (floored) {
        q = bitcast<u32>(bitcast<i32>(p + 256u) >> 16u);
    } else {
        q = bitcast<u32>(bitcast<i32>(p) >> 16u) + (p >> 31u);
    }
    return x - q * signed_lane_value(b, shift);
}

// Python's modulus (floored true) or C's truncated remainder (floored false) in the four lanes of a word.
fn signed_lanes_rem(a: u32, b: u32, floored: bool) -> u32 {
    var r = signed_lane_rem(a, b, 0u, floored) & 0xffu;
    r = insertBits(r, signed_lane_rem(a, b, 8u, floored), 8u, 8u);
    r = insertBits(r, signed_lane_rem(a, b, 16u, floored), 16u, 8u);
    r = insertBits(r, signed_lane_rem(a, b, 24u, floored), 24u, 8u);
    return r & ~lanes_fill(lanes_zero(b));
}
