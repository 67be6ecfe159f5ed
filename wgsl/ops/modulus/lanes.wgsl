// Integer remainders lane by lane, for the 8/16/32-bit families' MODULUS_* (sint.wgsl, uint.wgsl and
// lib/signed_by_magnitudes.wgsl).

// magnitude_rem (lib/divide_*.wgsl) lane by lane, for integer lanes of magnitudes a and b. A lane whose divisor
// is zero gives a value below 2^IN_BITS that the caller masks. Written out rather than looped over: some shader
// translators leave such loops rolled, and the per-lane work then costs more than the memory traffic. Each branch
// folds away for the other widths; the `% 32u` keeps shift amounts valid where a branch does not apply.
fn lanes_magnitude_rem(a: u32, b: u32) -> u32 {
    var r = magnitude_rem(a & IN_MASK, b & IN_MASK);
    if (LANES >= 2u) {
        let s = IN_BITS % 32u;
        r |= magnitude_rem((a >> s) & IN_MASK, (b >> s) & IN_MASK) << s;
    }
    if (LANES == 4u) {
        r |= magnitude_rem((a >> 16u) & IN_MASK, (b >> 16u) & IN_MASK) << 16u;
        r |= magnitude_rem(a >> 24u, b >> 24u) << 24u;
    }
    return r;
}
