// Storage for 64-bit element types: one vec2<u32> word (low word first) per element, one element per unit.
// All operands of the 64-bit kernels (SIGN, MODULUS_*) have the same type.

fn run_unit(unit: u32) {
    let offsets = unit_offsets(unit);
    let a = in_word(OPERAND_A, offsets[OPERAND_A]);
    var b = InElem();
    if (HAS_B) {
        b = in_word(OPERAND_B, offsets[OPERAND_B]);
    }
    out_buf[offsets[OPERAND_OUT]] = compute(a, b);
}
