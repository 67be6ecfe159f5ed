// Division of 8-bit magnitudes (a, b < 256) with a table of reciprocals in workgroup memory, filled once per
// workgroup: a multiply, a shift and a multiply-subtract per element in place of `%`, whose reciprocal and
// conversions run on the GPU's slow pipe (on an H200 they held 8-bit modulus at 60% of the copy roof).
//
// reciprocals[d] = floor(2^16 / d) + 1, so a * reciprocals[d] / 2^16 = a / d + a * e / 2^16 with 0 < e <= 1.
// The excess is below 255 / 2^16 < 1 / 255 <= 1 / d, the least distance from a / d up to the next integer, so
// (a * reciprocals[d]) >> 16 is floor(a / d) for all a, d < 256 (bench/exhaustive.py checks every pair).
var<workgroup> reciprocals: array<u32, 256>;

fn prepare_workgroup(lane: u32) {
    // d = 0 is never used: callers answer x % 0 themselves.
    for (var d = lane; d < 256u; d += WORKGROUP_SIZE) {
        reciprocals[d] = select(0x10000u / max(d, 1u) + 1u, 0u, d == 0u);
    }
    workgroupBarrier();
}

fn magnitude_rem(a: u32, b: u32) -> u32 {
    return a - ((a * reciprocals[b]) >> 16u) * b;
}
