// x % y for x < 2^20 and y >= 1, with one float reciprocal in place of `%`: the GPU's u32 `%` runs three
// instructions on the slow pipe (two conversions and a reciprocal), this runs one. Used by 16-bit integer
// division (lib/divide_by_estimate.wgsl) and float16's remainder (lib/f16_bits.wgsl).
//
// The float arithmetic only estimates the quotient q = floor(x / y); the remainder is computed and corrected in
// integers. x and y convert exactly (below 2^23, they are the low bits of a float whose exponent makes the unit 1).
// WGSL computes 1 / y within 2.5 units in the last place and rounds the product correctly, so x * (1 / y) is
// within 3.6e-7 * 2^20 < 0.38 of x / y, and rounding it to the nearest integer gives q or q + 1. The first
// correction takes q + 1 back to q; the second (q - 1) never applies, and costs two instructions of margin.
// y = 0 gives x (the estimate is then anything, times zero), for callers that mask it.
const TWO_TO_23: f32 = 8388608.0;

fn rem_by_estimate(x: u32, y: u32) -> u32 {
    let fx = bitcast<f32>(0x4b000000u | x) - TWO_TO_23;
    let fy = bitcast<f32>(0x4b000000u | y) - TWO_TO_23;
    // Adding 2^23 rounds the estimate to an integer, which is then the float's low bits.
    let q = bitcast<u32>(fx * (1.0 / fy) + TWO_TO_23) & 0x7fffffu;
    var r = x - q * y;  // modulo 2^32: "negative" when q is one too large
    r += select(0u, y, (r >> 31u) == 1u);
    r -= select(0u, y, r >= y);
    return r;
}
