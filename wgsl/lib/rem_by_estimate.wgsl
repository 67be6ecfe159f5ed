// x % y from a float estimate of the quotient, corrected in integers: the GPU's u32 `%` runs three instructions on
// the slow pipe (two conversions and a reciprocal), this runs one. Used by 16-bit integer division
// (lib/divide_by_estimate.wgsl); float32's remainder (lib/f32_bits.wgsl: f32_rem_fast) writes the same method out
// for its operands.
const TWO_TO_23: f32 = 8388608.0;

// x % y, for x given modulo 2^32 (the true x may pass 2^32), y < 2^31 and an estimate of the true x / y less than
// 0.5 from it and below 2^22. Rounded to the nearest integer (adding 2^23 rounds it, and the integer is then the
// float's low bits) the estimate is q = floor(x / y) or floor(x / y) + 1, so x - q * y lies in [-y, y), and
// computed modulo 2^32 one correction brings it into [0, y). Nothing more: a second correction (for q - 1, which
// the bound rules out) would add instructions to compute-bound float32 modulus for nothing. y = 0 gives x (the
// estimate is then anything, times zero), for callers that mask it.
fn rem_from_estimate(x: u32, y: u32, estimate: f32) -> u32 {
    let q = bitcast<u32>(estimate + TWO_TO_23) & 0x7fffffu;
    let r = x - q * y;  // modulo 2^32: "negative" when q is one too large
    return r + select(0u, y, (r >> 31u) == 1u);
}

// x % y for x < 2^20 and y >= 1. x and y convert exactly (below 2^23, they are the low bits of a float whose
// exponent makes the unit 1). WGSL computes 1 / y within 2.5 units in the last place and rounds the product
// correctly, so x * (1 / y) is within 3.6e-7 * 2^20 < 0.38 of x / y.
fn rem_by_estimate(x: u32, y: u32) -> u32 {
    let fx = bitcast<f32>(0x4b000000u | x) - TWO_TO_23;
    let fy = bitcast<f32>(0x4b000000u | y) - TWO_TO_23;
    return rem_from_estimate(x, y, fx * (1.0 / fy));
}
