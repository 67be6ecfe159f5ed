// Exact IEEE binary16 arithmetic on bit patterns held in the low 16 bits of a u32, with the conventions of
// f32_bits.wgsl: integer operations only, "field exponent" e with subnormals at e = 1, so that a finite value is
// mant * 2^(e - 25) with mant < 2^11.
//
// NumPy computes float16 arithmetic in float32 and rounds once more to float16. For the operations here that
// double rounding changes nothing, so they work on 11-bit significands directly:
//   - a remainder is exactly representable in the operands' format, so fmod is never rounded;
//   - float32 has 24 >= 2 * 11 + 2 significand bits, and with that margin an addition rounded first to float32
//     and then to float16 equals the addition rounded once to float16 (Figueroa's double-rounding theorem).

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
    // a step can shift in 21 bits without leaving the u32: one `%` for d <= 21, two at most.
    let eb = f16_bits_exponent(ub);
    let mb = f16_bits_significand(ub);
    var r = f16_bits_significand(ua);
    var d = f16_bits_exponent(ua) - eb;
    if (d > 21u) {
        r = (r << 21u) % mb;
        d -= 21u;
    }
    r = (r << d) % mb;
    if (r == 0u) {
        return sign;
    }
    // r < mb: normalise without going below exponent 1.
    let shift = min(countLeadingZeros(r) - 21u, eb - 1u);
    return sign | f16_bits_pack(eb - shift, r << shift);
}

// |x| - |y| for finite magnitudes big > small > 0 (or big = inf, giving inf), round to nearest, ties to even:
// as f32_sub_magnitudes, on 11-bit significands.
fn f16_sub_magnitudes(big: u32, small: u32) -> u32 {
    if (big == F16_INF) {
        return F16_INF;
    }
    let e = f16_bits_exponent(big);
    let r = sub_significands(e, e - f16_bits_exponent(small), f16_bits_significand(big), f16_bits_significand(small),
                             10u);
    return f16_bits_pack(r.x, r.y);
}
