// Exact IEEE binary32 / binary16 arithmetic on bit patterns held in u32.
//
// No floating-point arithmetic is used on purpose: WGSL lets implementations flush subnormals,
// assume there is no inf/NaN, and compute `/` approximately, while these functions must give the
// same bits on every GPU. Everything below is unsigned integer bit manipulation.
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

// Field exponent of a finite magnitude (sign already cleared); subnormals count as exponent 1.
fn f32_bits_exponent(mag: u32) -> u32 {
    return max(mag >> 23u, 1u);
}

// 24-bit integer significand of a finite magnitude: the implicit bit is present only for normals.
fn f32_bits_significand(mag: u32) -> u32 {
    let m = mag & F32_MANT;
    return select(m, m | F32_IMPLICIT, (mag >> 23u) != 0u);
}

// Packs field exponent e >= 1 and significand m into magnitude bits.
// m either has its implicit bit (bit 23) set, or e == 1 and m < 2^23 (a subnormal).
// Adding m (with its implicit bit) to (e - 1) << 23 gives the exponent field e for normals,
// leaves field 0 for subnormals, and lets m == 2^24 (a rounding carry) bump the exponent.
fn f32_bits_pack(e: u32, m: u32) -> u32 {
    return ((e - 1u) << 23u) + m;
}

// C fmodf(a, b): the exact remainder of a / b truncated towards zero, with the sign of a.
fn f32_fmod_bits(a: u32, b: u32) -> u32 {
    let sign = a & F32_SIGN;
    let ua = a & F32_ABS;
    let ub = b & F32_ABS;
    // NaN operand, a = ±inf or b = ±0: invalid, NaN.
    if (ua >= F32_INF || ub > F32_INF || ub == 0u) {
        return F32_QNAN;
    }
    // b = ±inf with a finite, or |a| < |b|: the remainder is a itself (±0 keeps its sign).
    if (ub == F32_INF || ua < ub) {
        return a;
    }

    let ea = f32_bits_exponent(ua);
    let eb = f32_bits_exponent(ub);
    let mb = f32_bits_significand(ub);
    // |a| = ma * 2^(ea-150), |b| = mb * 2^(eb-150), so
    // |a| mod |b| = ((ma * 2^d) mod mb) * 2^(eb-150)  with d = ea - eb >= 0 (because |a| >= |b|).
    // Bring in the factor 2^d a few bits at a time: r < 2^24, so r << 8 still fits in u32. The first
    // step starts from the significand itself, so the usual small d costs a single `%`.
    // d <= 253, so this runs at most 32 times.
    var r = f32_bits_significand(ua);
    var d = ea - eb;
    while (d > 0u && r != 0u) {
        let k = min(d, 8u);
        r = (r << k) % mb;
        d -= k;
    }
    if (r >= mb) {
        r = r % mb;  // d was 0: no step ran
    }
    if (r == 0u) {
        return sign;
    }
    // r < mb, so r * 2^(eb-150) is exactly representable: normalise it without going below
    // exponent 1 (where it stays subnormal).
    let shift = min(countLeadingZeros(r) - 8u, eb - 1u);
    return sign | f32_bits_pack(eb - shift, r << shift);
}

// IEEE binary32 x + y, round to nearest, ties to even, subnormals kept.
fn f32_add_bits(x: u32, y: u32) -> u32 {
    let ux = x & F32_ABS;
    let uy = y & F32_ABS;
    if (ux > F32_INF || uy > F32_INF) {
        return F32_QNAN;
    }
    if (ux == F32_INF) {
        // inf + -inf is invalid; inf + anything else is that inf.
        if (uy == F32_INF && x != y) {
            return F32_QNAN;
        }
        return x;
    }
    if (uy == F32_INF) {
        return y;
    }
    if (ux == 0u && uy == 0u) {
        // (-0) + (-0) = -0; any other pair of zeros gives +0.
        return x & y;
    }
    if (ux == 0u) {
        return y;
    }
    if (uy == 0u) {
        return x;
    }

    // Let a be the operand of larger magnitude: the result takes its sign.
    var a = x;
    var b = y;
    if (uy > ux) {
        a = y;
        b = x;
    }
    let ua = a & F32_ABS;
    let ub = b & F32_ABS;
    let e = f32_bits_exponent(ua);
    let d = e - f32_bits_exponent(ub);  // >= 0

    // Work with 7 extra low bits (as Berkeley SoftFloat does): both significands shifted
    // left by 7 are < 2^31, so their sum fits in a u32.
    let ma = f32_bits_significand(ua) << 7u;
    let mb_full = f32_bits_significand(ub) << 7u;
    // Align b to a's exponent. Bits shifted out are "jammed" into bit 0 (a sticky bit): this only
    // happens when d > 7, and then the result keeps at least 5 bits below the rounding point,
    // so the sticky bit decides rounding exactly as the lost bits would have.
    var mb = 1u;
    if (d < 31u) {
        let lost = mb_full & ((1u << d) - 1u);
        mb = (mb_full >> d) | select(0u, 1u, lost != 0u);
    }

    var m: u32;
    if (((x ^ y) & F32_SIGN) == 0u) {
        m = ma + mb;
    } else {
        m = ma - mb;
    }
    if (m == 0u) {
        // Exact cancellation rounds to +0.
        return 0u;
    }

    // Normalise so that the leading bit is bit 30 (bit 23 after dropping the 7 extra bits),
    // with the value  m * 2^(re - 157).
    var re = e;
    let lead = 31u - countLeadingZeros(m);
    if (lead == 31u) {
        // Carry out of an addition: shift right by one, keeping the dropped bit as sticky.
        m = (m >> 1u) | (m & 1u);
        re += 1u;
    } else {
        // Cancellation: shift left (exact), but not below exponent 1 (the result is subnormal).
        let shift = min(30u - lead, re - 1u);
        m = m << shift;
        re -= shift;
    }

    // Round to nearest, ties to even, on the 7 extra bits.
    let low = m & 0x7fu;
    m = m >> 7u;
    if (low > 0x40u || (low == 0x40u && (m & 1u) != 0u)) {
        m += 1u;
    }
    // re <= 255 and m <= 2^24, so this cannot wrap; anything at or past the inf pattern overflowed.
    let mag = min(f32_bits_pack(re, m), F32_INF);
    return (a & F32_SIGN) | mag;
}

// binary16 bits (low 16 bits of h) -> binary32 bits, exactly.
fn f16_to_f32_bits(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        if (m == 0u) {
            return sign | F32_INF;
        }
        // NaN: keep the payload, make it quiet.
        return sign | F32_QNAN | (m << 13u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        // Subnormal half m * 2^-24 with leading bit p: becomes the normal 2^p * 1.f * 2^-24,
        // f32 exponent field (p - 24) + 127.
        let p = 31u - countLeadingZeros(m);
        return sign | ((p + 103u) << 23u) | ((m << (23u - p)) & F32_MANT);
    }
    // Normal: rebias the exponent (127 - 15 = 112) and widen the mantissa.
    return sign | ((e + 112u) << 23u) | (m << 13u);
}

// binary32 bits -> binary16 bits (in the low 16 bits), round to nearest, ties to even.
fn f32_to_f16_bits(f: u32) -> u32 {
    let sign = (f >> 16u) & 0x8000u;
    let u = f & F32_ABS;
    if (u > F32_INF) {
        // NaN: quiet, keeping the top of the payload.
        return sign | 0x7e00u | ((u >> 13u) & 0x3ffu);
    }
    // 65520 (0x477ff000) is halfway between the largest half, 65504, and 2^16; the tie goes
    // to the even neighbour, 2^16, which is inf. This also catches inf itself.
    if (u >= 0x477ff000u) {
        return sign | 0x7c00u;
    }
    let e = u >> 23u;
    if (e >= 113u) {
        // Normal half (f32 exponent >= -14): rebias (subtract 112 from the exponent field) and
        // drop 13 mantissa bits. A rounding carry moves into the exponent, which is right.
        var h = (u >> 13u) - (112u << 10u);
        let low = u & 0x1fffu;
        if (low > 0x1000u || (low == 0x1000u && (h & 1u) != 0u)) {
            h += 1u;
        }
        return sign | h;
    }
    // Below 2^-25 (half of the smallest half subnormal, which rounds to even = 0): zero.
    // This includes all f32 subnormals.
    if (e < 102u) {
        return sign;
    }
    // Half subnormal: count k units of 2^-24. |f| = M * 2^(e-150), so k = M / 2^(126-e),
    // with a shift between 14 and 24. Rounding up to k = 0x400 gives the smallest normal half.
    let mant = (u & F32_MANT) | F32_IMPLICIT;
    let s = 126u - e;
    var k = mant >> s;
    let low = mant & ((1u << s) - 1u);
    let half = 1u << (s - 1u);
    if (low > half || (low == half && (k & 1u) != 0u)) {
        k += 1u;
    }
    return sign | k;
}
