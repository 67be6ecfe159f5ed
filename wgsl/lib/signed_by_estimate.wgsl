// Remainders of int16 lanes (dtype/sint.wgsl) computed on their float32 values, signs and all: a rounded quotient
// estimate and one correction, no magnitudes to take and no signs to put back. x % 0 is 0 (gpuops decision, as
// NumPy), and INT_MIN % -1 gives 0, never a fault. On an H200 int16 MODULUS_FLOOR ran 24% faster than on magnitudes
// (lib/signed_by_magnitudes.wgsl); int8 ran slower (four reciprocals a word), and keeps its table.
//
// Float32 gives only the quotient's estimate: the lanes' values are integers below 2^16 in magnitude, exact as
// float32, and the remainder is computed in integers from the estimate's nearest integer.

const SIGNED_LANE_SIGN: u32 = 1u << (IN_BITS - 1u);
const SIGNED_LANE_BIAS: f32 = 8388608.0 + f32(SIGNED_LANE_SIGN);  // 2^23 + 2^(IN_BITS-1)
const NEAREST_INTEGER: f32 = 12582912.0;  // 1.5 * 2^23: x + it holds x's nearest integer in its low bits, |x| < 2^22
const NEAREST_INTEGER_BITS: u32 = 0x4b400000u;

// One lane's remainder, as the lane's bits (upper bits zero). A zero divisor gives any value; the caller masks it.
// The lanes' values as float32 (x, y) and as 32-bit two's complement integers (xi, yi) come from the bits with the
// sign bit flipped, which is the value plus 2^(IN_BITS-1): below 2^23's exponent those bits make 2^23 plus it.
// x * (1 / y) is within 3.6e-7 |x / y| <= 0.012 of x / y (WGSL computes 1 / y within 2.5 units in the last place
// and rounds the product), so q, its nearest integer, is within 0.52 of x / y, and r = x - q * y (in integers,
// modulo 2^32) lies strictly between -|y| and |y|. One move by |y| towards the wanted sign then gives the
// remainder: the divisor's sign for Python's modulus (floored), the dividend's for C's. q is taken from the
// rounded sum's bits, never as (x + c) - c: shader compilers may fold that back to x (Mesa's does).
fn signed_lane_rem(a: u32, b: u32, floored: bool) -> u32 {
    let biased_a = a ^ SIGNED_LANE_SIGN;
    let biased_b = b ^ SIGNED_LANE_SIGN;
    let x = bitcast<f32>(0x4b000000u | biased_a) - SIGNED_LANE_BIAS;
    let y = bitcast<f32>(0x4b000000u | biased_b) - SIGNED_LANE_BIAS;
    let xi = biased_a - SIGNED_LANE_SIGN;
    let yi = biased_b - SIGNED_LANE_SIGN;
    let q = bitcast<u32>(x * (1.0 / y) + NEAREST_INTEGER) - NEAREST_INTEGER_BITS;
    var r = xi - q * yi;
    // r must be zero or have `wanted`'s sign: the divisor's (floored) or the dividend's.
    let wanted = select(xi, yi, floored);
    let wrong = r != 0u && ((r ^ wanted) >> 31u) == 1u;
    // |y| with the wanted sign: y itself floored; for C's remainder, y or -y as x and y's signs agree or not.
    var step = yi;
    if (!floored) {
        step = select(yi, 0u - yi, ((xi ^ yi) >> 31u) == 1u);
    }
    r += select(0u, step, wrong);
    return r & IN_MASK;
}
// C's truncated remainder (floored false) or Python's modulus (floored true) in both lanes of a word.
fn signed_lanes_rem(a: u32, b: u32, floored: bool) -> u32 {
    let r = signed_lane_rem(a & IN_MASK, b & IN_MASK, floored) | (signed_lane_rem(a >> 16u, b >> 16u, floored) << 16u);
    return r & ~lanes_fill(lanes_zero(b));
}
