// Division of 16-bit integer magnitudes (a, b <= 2^16 - 1) by a float estimate of the quotient, corrected in
// integers (lib/rem_by_estimate.wgsl): exact, and one slow-pipe instruction in place of `%`'s three.

// b = 0 gives a, for callers that answer x % 0 themselves.
fn magnitude_rem(a: u32, b: u32) -> u32 {
    return rem_by_estimate(a, b);
}
