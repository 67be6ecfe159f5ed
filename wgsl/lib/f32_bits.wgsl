// Exact IEEE binary32 arithmetic on bit patterns held in u32.
//
// Floating-point arithmetic is avoided on purpose: WGSL lets implementations flush subnormals,
// assume there is no inf/NaN, and compute `/` approximately, while these functions must give the
// same bits on every GPU. Everything below is unsigned integer bit manipulation, except one
// subtraction of normal values with a normal result (f32_sub_magnitudes), which WGSL defines exactly.
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
    // Bring in the factor 2^d up to 8 bits at a time: ma < 2^24 and then r < mb < 2^24, so r << 8 still fits in
    // u32. Every invocation takes the same first step, d = 0 included, so the usual small d costs one `%` for a
    // whole warp; d <= 253, so this runs at most 32 times.
    var r = f32_bits_significand(ua);
    var d = ea - eb;
    loop {
        let k = min(d, 8u);
        r = (r << k) % mb;
        d -= k;
        if (d == 0u || r == 0u) {
            break;
        }
    }
    if (r == 0u) {
        return sign;
    }
    // r < mb, so r * 2^(eb-150) is exactly representable: normalise it without going below
    // exponent 1 (where it stays subnormal).
    let shift = min(countLeadingZeros(r) - 8u, eb - 1u);
    return sign | f32_bits_pack(eb - shift, r << shift);
}

// Python's modulus (np.remainder) from C's: where the remainder r is non-zero and its sign differs from b's,
// r + b as NumPy computes it (b's sign on |b| - |r|: |r| < |b|, or b is infinite); a zero remainder takes b's
// sign; NaN stays NaN (an invalid division gives a NaN with the sign bit clear, tested on the magnitude).
fn f32_mod_floor_bits(a: u32, b: u32) -> u32 {
    let r = f32_fmod_bits(a, b);
    let ur = r & F32_ABS;
    if (((r ^ b) & F32_SIGN) == 0u || ur > F32_INF) {
        return r;
    }
    if (ur == 0u) {
        return r ^ F32_SIGN;
    }
    return (b & F32_SIGN) | f32_sub_magnitudes(b & F32_ABS, ur);
}

// |x| - |y| for finite magnitudes big > small > 0 (or big = inf, giving inf): IEEE binary32 subtraction,
// round to nearest, ties to even, subnormals kept (sub_significands, below). This is the only addition
// MODULUS_FLOOR needs (a remainder moved into the divisor's sign). Below big, so it cannot overflow.
//
// Where small's exponent field is at least 24, the GPU's own subtraction gives the same bits: both values are
// normal, and so is the difference, a positive multiple of small's unit in the last place (at least 2^-126); WGSL
// requires `x - y` to be correctly rounded, and only subnormals may be flushed. That is every remainder of
// ordinary data; the integer path below takes the rest.
fn f32_sub_magnitudes(big: u32, small: u32) -> u32 {
    if (big == F32_INF) {
        return F32_INF;
    }
    if (small >= 0x0c000000u) {
        return bitcast<u32>(bitcast<f32>(big) - bitcast<f32>(small));
    }
    let e = f32_bits_exponent(big);
    let r = sub_significands(e, e - f32_bits_exponent(small), f32_bits_significand(big), f32_bits_significand(small));
    return f32_bits_pack(r.x, r.y);
}

// The integer path of f32_sub_magnitudes:
// big_sig - small_sig * 2^-d for significands of big > small > 0 at field exponent e of big. As Berkeley SoftFloat
// does, it works with 7 extra low bits and keeps bits shifted out as a sticky bit in bit 0: bits are lost only when
// d > 7, and then at most one bit cancels, so the sticky bit decides rounding exactly as the lost bits would have.
// The difference is normalised up to bit 23 (not below exponent 1: a subnormal result) and rounded to nearest,
// ties to even. Returns (field exponent, significand) for f32_bits_pack, which takes a carry to 2^24.
fn sub_significands(e: u32, d: u32, big_sig: u32, small_sig: u32) -> vec2<u32> {
    let small_full = small_sig << 7u;
    var m_small = 1u;
    if (d < 31u) {
        let lost = small_full & ((1u << d) - 1u);
        m_small = (small_full >> d) | select(0u, 1u, lost != 0u);
    }
    // > 0 because big > small; no carry out of a subtraction, so only cancellation to normalise.
    var m = (big_sig << 7u) - m_small;
    let shift = min(countLeadingZeros(m) - 1u, e - 1u);  // the top bit at 30: bit 23 once the 7 extra bits go
    m = m << shift;
    let low = m & 0x7fu;
    m = m >> 7u;
    if (low > 0x40u || (low == 0x40u && (m & 1u) != 0u)) {
        m += 1u;
    }
    return vec2<u32>(e - shift, m);
}
