// Division of integer magnitudes (dtype/sint.wgsl, dtype/uint.wgsl) with WGSL's unsigned `%`. A kernel that
// divides this way, or not at all, has no workgroup memory to prepare.
fn prepare_workgroup(lane: u32) {}

// b != 0: callers answer x % 0 themselves.
fn magnitude_rem(a: u32, b: u32) -> u32 {
    return a % b;
}
