// Division of 8-bit magnitudes by the table of lib/reciprocal_table.wgsl (see there why it is exact): the quotient
// negated from one multiply and a shift, the remainder from one multiply-add.

// a % b for magnitudes a, b < 256, b != 0.
fn magnitude_rem(a: u32, b: u32) -> u32 {
    let negated_quotient = bitcast<i32>(a * reciprocals[b] + 0xffffu) >> 16u;
    return a + bitcast<u32>(negated_quotient) * b;
}
