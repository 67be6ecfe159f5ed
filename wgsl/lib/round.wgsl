// The rounding core shared by f32_sub_magnitudes and f16_sub_magnitudes (the formats differ only in where the
// significand's top bit is: 23 for binary32, 10 for binary16).
//
// big_sig - small_sig * 2^-d for significands of big > small > 0 at field exponent e of big. As Berkeley SoftFloat
// does, it works with 7 extra low bits and keeps bits shifted out as a sticky bit in bit 0: bits are lost only when
// d > 7, and then at most one bit cancels, so the sticky bit decides rounding exactly as the lost bits would have.
// The difference is normalised up to bit `top` (not below exponent 1: a subnormal result) and rounded to nearest,
// ties to even. Returns (field exponent, significand) for the format's pack, which takes a carry to 2^(top+1).
fn sub_significands(e: u32, d: u32, big_sig: u32, small_sig: u32, top: u32) -> vec2<u32> {
    let small_full = small_sig << 7u;
    var m_small = 1u;
    if (d < 31u) {
        let lost = small_full & ((1u << d) - 1u);
        m_small = (small_full >> d) | select(0u, 1u, lost != 0u);
    }
    // > 0 because big > small; no carry out of a subtraction, so only cancellation to normalise.
    var m = (big_sig << 7u) - m_small;
    let shift = min(countLeadingZeros(m) - (24u - top), e - 1u);
    m = m << shift;
    let low = m & 0x7fu;
    m = m >> 7u;
    if (low > 0x40u || (low == 0x40u && (m & 1u) != 0u)) {
        m += 1u;
    }
    return vec2<u32>(e - shift, m);
}
