// Remainders of int16 lanes (dtype/sint.wgsl) computed on their float32 values, signs and all: the quotient comes
// out of one float rounding exactly as C's (truncated) or Python's (floored) division has it, and the remainder is
// x - q * y in integers, with nothing to correct afterwards. x % 0 is 0 (gpuops decision, as NumPy), and
// INT_MIN % -1 gives 0, never a fault. Fewer instructions than dividing magnitudes (lib/signed_by_magnitudes.wgsl)
// for int16's two lanes a word; int8 would need four reciprocals a word, and keeps its table.
//
// Float32 gives only the quotient's estimate: the lanes' values are integers below 2^16 in magnitude, exact as
// float32, and the remainder is computed in integers from the quotient.

const SIGNED_LANE_SIGN: u32 = 1u << (IN_BITS - 1u);
const SIGNED_LANE_BIAS: f32 = 8388608.0 + f32(SIGNED_LANE_SIGN);  // 2^23 + 2^(IN_BITS-1)
const NEAREST_INTEGER: f32 = 12582912.0;  // 1.5 * 2^23: x + it holds integer x in its low bits, |x| < 2^22
const NEAREST_INTEGER_BITS: u32 = 0x4b400000u;
const QUOTIENT_NUDGE: f32 = 3.814697265625e-6;  // 2^-18

// One lane's remainder, as the lane's bits (upper bits zero). A zero divisor gives any value; the caller masks it.
// The lanes' values as float32 (x, y) and as 32-bit two's complement integers (xi, yi) come from the bits with the
// sign bit flipped, which is the value plus 2^(IN_BITS-1): below 2^23's exponent those bits make 2^23 plus it.
//
// Why the quotient is exact: e = x * (1 / y) is within 3.6e-7 |x / y| of x / y (WGSL computes 1 / y within 2.5
// units in the last place and rounds the product). Moving e away from zero (truncated) or up (floored) by
// 2^-18 |e| (one more rounding) gives e' between 3.3e-6 |x / y| and 4.3e-6 |x / y| beyond x / y in the direction
// moved. Where x / y is an integer k, e' is then at or beyond k in that direction, and trunc / floor give k. Where
// it is not, its distance to the next integer in that direction is at least 1 / |y|, and e' lies at most
// 4.3e-6 |x| / |y| < 0.15 / |y| (|x| <= 2^15) beyond it, so it stays short of that integer (bench/exhaustive.py
// checks every pair on the GPU, tests/test_quotient_bounds.py the bound with the reciprocal 3 units off). No
// correction follows, which spares the instructions of a rounded quotient moved once towards the wanted sign.
fn signed_lane_rem(a: u32, b: u32, floored: bool) -> u32 {
    let biased_a = a ^ SIGNED_LANE_SIGN;
    let biased_b = b ^ SIGNED_LANE_SIGN;
    let x = bitcast<f32>(0x4b000000u | biased_a) - SIGNED_LANE_BIAS;
    let y = bitcast<f32>(0x4b000000u | biased_b) - SIGNED_LANE_BIAS;
    let xi = biased_a - SIGNED_LANE_SIGN;
    let yi = biased_b - SIGNED_LANE_SIGN;
    let estimate = x * (1.0 / y);
    var quotient: f32;
    if (floored) {
        quotient = floor(estimate + abs(estimate) * QUOTIENT_NUDGE);
    } else {
        quotient = trunc(estimate * (1.0 + QUOTIENT_NUDGE));
    }
    // q from the sum's bits, never as (q + c) - c: shader compilers may fold that back to q (Mesa's does).
    let q = bitcast<u32>(quotient + NEAREST_INTEGER) - NEAREST_INTEGER_BITS;
    return (xi - q * yi) & IN_MASK;
}

// C's truncated remainder (floored false) or Python's modulus (floored true) in both lanes of a word.
fn signed_lanes_rem(a: u32, b: u32, floored: bool) -> u32 {
    let r = signed_lane_rem(a & IN_MASK, b & IN_MASK, floored) | (signed_lane_rem(a >> 16u, b >> 16u, floored) << 16u);
    let zero = lanes_zero(b);
    note_errors(zero);  // x % 0 (lib/error_notes.wgsl)
    return r & ~lanes_fill(zero);
}
