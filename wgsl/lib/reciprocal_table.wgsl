// A table of reciprocals of 8-bit magnitudes in workgroup memory, filled once per workgroup (prepare_workgroup, which
// the loop calls: gpuops/kernel.py, Operation.workgroup_file): the division of 8-bit lanes is then a multiply, a
// shift and a multiply-add per element (lib/divide_by_reciprocals.wgsl, lib/signed_by_reciprocals.wgsl) in place of
// `%`, whose reciprocal and conversions run on the GPU's slow pipe, too slow for 8-bit elements to keep up with the
// memory.
//
// R(d) = floor(2^16 / d) + 1 for magnitudes d < 256, so a * R(d) / 2^16 = a / d + a * e / 2^16 with 0 < e <= 1. The
// excess is below 255 / 2^16 < 1 / 255 <= 1 / d, the least distance from a / d up to the next integer, so
// (a * R(d)) >> 16 is floor(a / d) = q for all a, d < 256 (bench/exhaustive.py checks every pair).
// The table holds the reciprocals negated, -R(d) in reciprocals[d], so that the quotient comes out negated and the
// remainder is a + (-q) * d, one multiply-add: from q itself the compiler negates it first, an instruction per
// element. -q = ceil(-a R(d) / 2^16), which is
// floor((-a R(d) + 2^16 - 1) / 2^16): an arithmetic shift of a * (-R(d)) + 0xffff (|a R(d)| < 2^24, no overflow).
// reciprocals[SIGNED_RECIPROCALS + bits] holds -sign(y) * R(|y|) for the int8 value y with those bits, as two's
// complement (lib/signed_by_reciprocals.wgsl): the same division with the signs kept.
const SIGNED_RECIPROCALS: u32 = 256u;
var<workgroup> reciprocals: array<u32, 512>;

fn prepare_workgroup(lane: u32) {
    // d = 0 (entry 0) is never used: callers answer x % 0 themselves.
    for (var d = lane; d < 256u; d += WORKGROUP_SIZE) {
        let reciprocal = select(0x10000u / max(d, 1u) + 1u, 0u, d == 0u);
        reciprocals[d] = 0u - reciprocal;
        if (d < 128u) {
            reciprocals[SIGNED_RECIPROCALS + d] = 0u - reciprocal;  // y = d
        }
        if (d >= 1u && d <= 128u) {
            reciprocals[SIGNED_RECIPROCALS + 256u - d] = reciprocal;  // y = -d, whose bits are 256 - d
        }
    }
    workgroupBarrier();
}
