// Exact IEEE binary32 arithmetic on bit patterns held in u32.
//
// Floating-point results are avoided on purpose: WGSL lets implementations flush subnormals, assume there is no
// inf/NaN, and compute `/` approximately, while these functions must give the same bits on every GPU. Everything
// below is integer bit manipulation, except a quotient estimate that integers correct (f32_rem_fast, as
// lib/rem_by_estimate.wgsl does), an exact multiplication by a normal power of two (f32_rem_fast) and one
// subtraction (f32_sub_magnitudes) on normal values, scaled by 2^64 where they are tiny, which WGSL defines exactly.
//
// Conventions used throughout:
//   - "field exponent" e is the 8-bit exponent field, except that subnormals (field 0) use e = 1
//     and have no implicit bit; then a finite value is  mant * 2^(e - 150)  with mant < 2^24.
//   - All comparisons of magnitudes use the bits with the sign cleared: for non-NaN floats this
//     integer order is the numeric order.

const F32_SIGN: u32 = 0x80000000u;
const F32_ABS: u32 = 0x7fffffffu;
const F32_INF: u32 = 0x7f800000u;
const F32_QNAN: u32 = 0x7fc00000u;
const F32_MANT: u32 = 0x007fffffu;
const F32_IMPLICIT: u32 = 0x00800000u;
// 2^109: f32_remainder_bits' usual divisors stay below it (exponent fields up to 235), so that an infinite or NaN
// dividend's exponent field (255) is at least 20 above theirs.
const F32_FAST_HIGH: u32 = 0x76000000u;
// 2^-100: differences of magnitudes from here up need no scaling (f32_sub_magnitudes), so f32_remainder_bits'
// usual divisors start here.
const F32_SUB_LOW: u32 = 0x0d800000u;

// Field exponent of a finite magnitude (sign already cleared); subnormals count as exponent 1.
fn f32_bits_exponent(mag: u32) -> u32 {
    return max(mag >> 23u, 1u);
}

// 24-bit integer significand of a finite magnitude: the implicit bit is present only for normals.
fn f32_bits_significand(mag: u32) -> u32 {
    let m = mag & F32_MANT;
    return select(m, m | F32_IMPLICIT, (mag >> 23u) != 0u);
}

// The remainder of a / b, exact:
// - floored false: C's fmodf (np.fmod), the remainder r truncated towards zero, with the sign of a;
// - floored true: Python's modulus (np.remainder): where r is non-zero and a and b have opposite signs, r + b as
//   NumPy computes it (b's sign on |b| - |r|, rounded), and a zero remainder takes b's sign. Every result then has
//   b's sign.
// floored is a constant at every call, so each caller's code keeps one of the two.
//
// Nearly all data takes the first branch, written without inner branches: a warp whose lanes hold both |a| < |b|
// and |a| >= |b| runs both sides of a branch anyway, so selects cost no more work and spare the branch's own
// instructions, which count where a broadcast operand leaves the kernel bound by instruction issue (the memory
// carries a third less). One result variable and one return: Dawn's translation of a return inside a branch costs
// float32 MODULUS_FLOOR more than half its speed.
fn f32_remainder_bits(a: u32, b: u32, floored: bool) -> u32 {
    let ua = a & F32_ABS;
    let ub = b & F32_ABS;
    let sign = select(a, b, floored) & F32_SIGN;
    let d = (ua >> 23u) - (ub >> 23u);  // exponent fields' difference
    var result: u32;
    if (ub - F32_SUB_LOW < F32_FAST_HIGH - F32_SUB_LOW && bitcast<i32>(d) < 20) {
        // 2^-100 <= |b| < 2^109 and a's exponent field at most 19 above b's. Then a is finite (255 is at least 20
        // above b's field, at most 235), and either |a| < |b|, whose remainder is a itself (f32_rem_fast's value is
        // then discarded), or |a| >= |b| with a quotient below 2^20.
        let rest = select(f32_rem_fast(ua, ub, d), ua, ua < ub);
        var magnitude = rest;
        if (floored) {
            // |b| >= 2^-100 and finite: the subtraction of f32_sub_magnitudes' first case, correctly rounded. A
            // select, not a branch: Dawn's code for a branch here is far slower.
            let moved = ((a ^ b) & F32_SIGN) != 0u && rest != 0u;
            magnitude = select(rest, bitcast<u32>(bitcast<f32>(ub) - bitcast<f32>(rest)), moved);
        }
        result = sign | magnitude;
    } else {
        result = f32_remainder_any(a, b, floored);
    }
    return result;
}

// |a| mod |b| for 2^-100 <= |b| <= |a| < 2^109 * 2^20 with exponent fields d apart, d < 20, as magnitude bits.
// |a| = ma * 2^(ea-150), |b| = mb * 2^(eb-150), so |a| mod |b| = ((ma * 2^d) mod mb) * 2^(eb-150). |a| / |b| =
// ma * 2^d / mb, and WGSL computes 1 / |b| within 2.5 units in the last place and rounds the product, so the
// estimate is within 3.6e-7 * 2^20 < 0.38 of it; rounded to the nearest integer (adding 2^23 rounds it, and the
// integer is then the float's low bits) it is q = floor(ma * 2^d / mb) or one more, so ma * 2^d - q * mb lies in
// [-mb, mb), and one correction brings it into [0, mb). ma * 2^d passes 2^32 from d = 9 up: everything is computed
// modulo 2^32. This is lib/rem_by_estimate.wgsl's rem_from_estimate written for float32's operands, with -mb
// (from b's exponent bits, one addition) where it takes mb: the products then need no negation and the correction
// is one multiplication by the sign, not a test and a select. The remainder r < 2^24 converts exactly, and r *
// 2^(eb-150) is a float32 multiplication by a normal power of two (eb >= 27) with an exact, normal or zero product
// (at least 2^-123 where r >= 1), which WGSL requires correctly rounded.
fn f32_rem_fast(ua: u32, ub: u32, d: u32) -> u32 {
    let exponent = ub & F32_INF;  // eb << 23
    let minus_mb = exponent - ub - F32_IMPLICIT;  // -mb modulo 2^32 (b is normal)
    let x = ((ua & F32_MANT) | F32_IMPLICIT) << d;
    let q = bitcast<u32>(bitcast<f32>(ua) * (1.0 / bitcast<f32>(ub)) + TWO_TO_23) & 0x7fffffu;
    let r = x + q * minus_mb;  // "negative" where q is one too large
    let fixed = r + minus_mb * bitcast<u32>(bitcast<i32>(r) >> 31u);  // plus mb there: -mb times -1
    return bitcast<u32>(f32(fixed) * bitcast<f32>(exponent - (23u << 23u)));  // times 2^(eb-150)
}

// f32_remainder_bits for any operands: NaN, infinities, zero divisors, subnormals, quotients from 2^20 up.
fn f32_remainder_any(a: u32, b: u32, floored: bool) -> u32 {
    let ua = a & F32_ABS;
    let ub = b & F32_ABS;
    // NaN operand, a = ±inf or b = ±0: NaN. Invalid (noted, lib/error_notes.wgsl) where no operand is NaN, or one
    // is a signalling NaN (its quiet bit clear), as C's fmodf raises it.
    if (ua >= F32_INF || ub > F32_INF || ub == 0u) {
        let signalling = (ua > F32_INF && (ua & 0x00400000u) == 0u) || (ub > F32_INF && (ub & 0x00400000u) == 0u);
        note_errors(select(0u, 1u, (ua <= F32_INF && ub <= F32_INF) || signalling));
        return F32_QNAN;
    }
    let sign = select(a, b, floored) & F32_SIGN;
    var rest = ua;  // |a| mod |b|, as magnitude bits; a itself where |a| < |b| (b = ±inf included)
    if (ua >= ub) {
        rest = f32_rem_magnitudes(ua, ub);
    }
    if (!floored) {
        return sign | rest;
    }
    // Floored, a non-zero remainder whose sign differs from b's moves to |b| - rest: where |a| < |b| the one rounded
    // result, elsewhere exact (rest is a multiple of |b|'s unit in the last place).
    let moved = ((a ^ b) & F32_SIGN) != 0u && rest != 0u;
    return sign | select(rest, f32_sub_magnitudes(ub, rest), moved);
}

// Exponent bits f32_rem_magnitudes brings in a step: its quotient estimate then stays below 2^20, where it is
// within 0.38 of the quotient (see there).
const F32_REM_STEP_BITS: u32 = 20u;

// |a| mod |b| for finite magnitudes |a| >= |b| > 0, exact, as magnitude bits: subnormals included, any quotient.
//
// |a| = ma * 2^(ea-150), |b| = mb * 2^(eb-150) (field exponents, ma, mb < 2^24), so |a| mod |b| =
// ((ma * 2^d) mod mb) * 2^(eb-150) with d = ea - eb >= 0 (because |a| >= |b|). A subnormal divisor's significand
// is normalised first: for m = mb * 2^s in [2^23, 2^24) (s = 0 for a normal divisor), (x * 2^s) mod (mb * 2^s) =
// (x mod mb) * 2^s, so (ma * 2^d) mod mb = ((ma * 2^(d+s)) mod m) / 2^s. s comes from mb's conversion to float32
// (exact, mb < 2^24), whose exponent field is 150 - s: no bit-counting builtin (dtype/README.md says why).
//
// ma < 2^24 <= 2m, so r = ma mod m is ma or ma - m. Then the n = d + s factors of two come in up to 20 a step,
// r <- (r * 2^k) mod m for k <= 20 and r < m, as lib/rem_by_estimate.wgsl's rem_from_estimate does:
// - The quotient Q = r * 2^k / m is below 2^20. Its estimate E = r * 2^k * (1 / m): r, m (below 2^24) and 2^k
//   are exact in float32, WGSL computes 1 / m within 2.5 units in the last place (a factor 1 ± 2.5 * 2^-23) and
//   rounds the product once (1 ± 2^-24; the multiplication by 2^k is exact in any order, every value being 0 or
//   normal: r * 2^k / m >= 2^-24 for r >= 1), so |E - Q| < 3 * 2^-23 * Q (second-order terms are far below it)
//   < 0.38.
// - Rounded to the nearest integer (adding 2^23 rounds it, and the integer is then the float's low bits), E gives
//   q = floor(Q) or floor(Q) + 1, so t = r * 2^k - q * m lies in [-m, m). |t| < 2^24, so computed modulo 2^32
//   (r * 2^k passes 2^32 from k = 9 up; q * m as q * (-m), no negation) it is t's two's complement, and adding m
//   where it is negative (m times its sign, -1 or 0) brings it into [0, m).
// n <= 253 + 23 (d <= 254 - 1, and s > 0 only where eb = 1): at most 14 steps, each a conversion, two float
// multiplications and a few integer instructions (no `%`, whose reciprocal alone costs a step's estimate). A zero
// remainder ends the loop early (it stays zero).
fn f32_rem_magnitudes(ua: u32, ub: u32) -> u32 {
    let eb = f32_bits_exponent(ub);
    let mb = f32_bits_significand(ub);
    let s = 150u - (bitcast<u32>(f32(mb)) >> 23u);
    let m = mb << s;
    let minus_m = 0u - m;
    let inverse = 1.0 / f32(m);
    let ma = f32_bits_significand(ua);
    var r = select(ma, ma - m, ma >= m);
    var n = f32_bits_exponent(ua) - eb + s;
    while (n != 0u && r != 0u) {
        let k = min(n, F32_REM_STEP_BITS);
        let estimate = f32(r) * bitcast<f32>((127u + k) << 23u) * inverse;  // r * 2^k / m
        let q = bitcast<u32>(estimate + TWO_TO_23) & 0x7fffffu;
        let t = (r << k) + q * minus_m;  // "negative" where q is one too large
        r = t + minus_m * bitcast<u32>(bitcast<i32>(t) >> 31u);  // plus m there: -m times -1
        n -= k;
    }
    return f32_scaled_remainder(r >> s, eb);
}

// r * 2^(eb-150) as magnitude bits, for r below the divisor's significand mb < 2^24 (so the value is exactly
// representable). r converts to float32 exactly, and where the result is normal its bits are r's float's with the
// exponent field moved by eb - 150 (modulo 2^32); where it is subnormal (field 0), they are r * 2^(eb-1) < 2^23, and
// then eb <= 23, so the shift is in range. Not countLeadingZeros: Dawn's translator writes it out as a dozen
// instructions (SPIR-V has no such instruction).
fn f32_scaled_remainder(r: u32, eb: u32) -> u32 {
    let fr = bitcast<u32>(f32(r));
    let bits = select(r << (eb - 1u), fr + ((eb - 150u) << 23u), (fr >> 23u) + eb > 150u);
    return select(bits, 0u, r == 0u);
}

// |x| - |y| for finite magnitudes big > small > 0 (or big = inf, giving inf): IEEE binary32 subtraction, round to
// nearest, ties to even, subnormals kept. This is the only rounded addition MODULUS_FLOOR needs (a dividend below
// the divisor moved into the divisor's sign; its other moves, |b| less a remainder of |b|'s unit, are exact here
// too); below big, so it cannot overflow. The GPU's own subtraction computes it, on the values themselves or, for
// tiny ones, on the values scaled by 2^64:
// - big >= 2^-100: where small is normal, so is the difference (at least big / 2, or where small > big / 2 a
//   positive multiple of small's unit in the last place, at least 2^-124), and WGSL requires `x - y` correctly
//   rounded (only subnormals may be flushed). Where small is subnormal, big - small lies within 2^-126 of big, whose
//   neighbours are at least 2^-124 away: it rounds to big, as big - 0 (small flushed) does.
// - big < 2^-100: both scaled by 2^64 are normal (f32_scale_up, exact), and their rounded difference is the
//   rounded difference scaled: at or above 2^-126 both round to 24 significant bits, and below it the difference, a
//   multiple of 2^-149, is exact in both. f32_scale_down undoes the scaling exactly.
// The tiny path is kept small and in a branch (the bare subtraction alone is not exact where subnormals are
// flushed), so that the usual case pays only for its test.
fn f32_sub_magnitudes(big: u32, small: u32) -> u32 {
    // 2^-100 <= big < inf in one test: the usual case first, with no test for inf ahead of it.
    if (big - F32_SUB_LOW < F32_INF - F32_SUB_LOW) {
        return bitcast<u32>(bitcast<f32>(big) - bitcast<f32>(small));
    }
    if (big == F32_INF) {
        return F32_INF;
    }
    return f32_scale_down(f32_scale_up(big) - f32_scale_up(small));
}

// A magnitude below 2^-100 times 2^64, exactly: a normal float32 value, at least 2^-85. A subnormal's bits are
// below 2^23 and convert exactly; normals move their exponent field.
fn f32_scale_up(mag: u32) -> f32 {
    let subnormal = f32(mag) * 2.5849394142282115e-26;  // mag * 2^-149 * 2^64 = mag * 2^-85
    return select(subnormal, bitcast<f32>(mag + (64u << 23u)), mag >= F32_IMPLICIT);
}

// x * 2^-64 as magnitude bits, for x > 0 a difference from f32_sub_magnitudes' tiny path: from 2^-62 up, the
// exponent field less 64; below, x * 2^-64 is a subnormal k * 2^-149 whose bits are k = x * 2^85 < 2^23, an
// integer held exactly.
fn f32_scale_down(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    return select(u32(x * 3.8685626227668134e25), bits - (64u << 23u), bits >= (65u << 23u));
}
