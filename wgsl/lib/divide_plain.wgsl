// Division of integer magnitudes (ops/modulus/sint.wgsl, uint.wgsl) with WGSL's unsigned `%`.

// b != 0: callers answer x % 0 themselves.
fn magnitude_rem(a: u32, b: u32) -> u32 {
    return a % b;
}
