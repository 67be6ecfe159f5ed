// Exact IEEE binary16 arithmetic on bit patterns held in the low 16 bits of a u32, with the conventions of
// f32_bits.wgsl: integer results (float arithmetic only where its result is exact: a quotient estimate that
// integers correct in lib/rem_by_estimate.wgsl, and f16_sub_magnitudes's float32 subtraction), "field exponent"
// e with subnormals at e = 1, so that a finite value is mant * 2^(e - 25) with mant < 2^11.
//
// NumPy computes float16 arithmetic in float32 and rounds once more to float16: a remainder is exactly
// representable in the operands' format, so fmod is never rounded and works on 11-bit significands directly; the
// one addition MODULUS_FLOOR needs is computed as NumPy computes it (f16_sub_magnitudes).

const F16_SIGN: u32 = 0x8000u;
const F16_ABS: u32 = 0x7fffu;
const F16_INF: u32 = 0x7c00u;
const F16_QNAN: u32 = 0x7e00u;
const F16_MANT: u32 = 0x03ffu;
const F16_IMPLICIT: u32 = 0x0400u;

fn f16_bits_exponent(mag: u32) -> u32 {
    return max(mag >> 10u, 1u);
}

fn f16_bits_significand(mag: u32) -> u32 {
    let m = mag & F16_MANT;
    return select(m, m | F16_IMPLICIT, (mag >> 10u) != 0u);
}

// Field exponent e >= 1 and significand m (implicit bit set, or e == 1 and m < 2^10) to magnitude bits; as
// f32_bits_pack, a rounding carry to m == 2^11 moves into the exponent.
fn f16_bits_pack(e: u32, m: u32) -> u32 {
    return ((e - 1u) << 10u) + m;
}

// C fmodf on binary16: the exact remainder of a / b truncated towards zero, with the sign of a (np.fmod).
fn f16_fmod_bits(a: u32, b: u32) -> u32 {
    let sign = a & F16_SIGN;
    let ua = a & F16_ABS;
    let ub = b & F16_ABS;
    // NaN operand, a = ±inf or b = ±0: invalid, NaN.
    if (ua >= F16_INF || ub > F16_INF || ub == 0u) {
        return F16_QNAN;
    }
    // b = ±inf with a finite, or |a| < |b|: the remainder is a itself (±0 keeps its sign).
    if (ub == F16_INF || ua < ub) {
        return a;
    }
    // |a| mod |b| = ((ma * 2^d) mod mb) * 2^(eb-25) with d = ea - eb in 0..29. Significands are below 2^11, so
    // a step can shift in 9 bits and stay within rem_by_estimate's 2^20: one step for d <= 9, four at most.
    let eb = f16_bits_exponent(ub);
    let mb = f16_bits_significand(ub);
    var r = f16_bits_significand(ua);
    var d = f16_bits_exponent(ua) - eb;
    loop {
        let k = min(d, 9u);
        r = rem_by_estimate(r << k, mb);
        d -= k;
        if (d == 0u) {
            break;
        }
    }
    if (r == 0u) {
        return sign;
    }
    // r < mb: normalise without going below exponent 1.
    let shift = min(countLeadingZeros(r) - 21u, eb - 1u);
    return sign | f16_bits_pack(eb - shift, r << shift);
}

// |x| - |y| for finite magnitudes big > small > 0 (or big = inf, giving inf), as NumPy computes it: in float32,
// then rounded to nearest, ties to even, to float16. Float16 values are normal float32 values (the least is
// 2^-24), and so is their difference, so the GPU's float32 subtraction gives the bits NumPy's does (WGSL requires
// `x - y` to be correctly rounded; only subnormals may be flushed). The rounding to float16 is done on the bits.
fn f16_sub_magnitudes(big: u32, small: u32) -> u32 {
    if (big == F16_INF) {
        return F16_INF;
    }
    return f16_round_from_f32(f16_magnitude_to_f32(big) - f16_magnitude_to_f32(small));
}

// A finite float16 magnitude as a float32 value: exact, and normal even for float16's subnormals.
fn f16_magnitude_to_f32(mag: u32) -> f32 {
    let subnormal = (bitcast<f32>(0x4b000000u | mag) - 8388608.0) * 5.9604644775390625e-8;  // mag * 2^-24, exact
    return select(subnormal, bitcast<f32>((mag << 13u) + 0x38000000u), mag >= F16_IMPLICIT);  // rebias 15 -> 127
}

// A positive float32 x from 2^-24 up to the largest float16, rounded to the nearest float16 magnitude, ties to
// even. Below 2^-14 (a float16 subnormal) x is a multiple of 2^-24 here (a difference of float16 values below
// 2^-14 has at most 10 significant bits, so float32 holds it exactly), and converts exactly.
fn f16_round_from_f32(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    if (bits < 0x38800000u) {
        return u32(x * 16777216.0);  // x * 2^24
    }
    let kept = (bits >> 13u) - 0x1c000u;  // rebias 127 -> 15: (127 - 15) << 10
    let rest = bits & 0x1fffu;
    // A carry out of the significand moves into the exponent, which is the right rounding.
    return kept + select(0u, 1u, rest > 0x1000u || (rest == 0x1000u && (kept & 1u) == 1u));
}
