// OutputStore.UNITS (narrow_units.wgsl, whole.wgsl): every unit of the output is whole chunks (or one word) of its own,
// at its offset (a linear output, or one in rows of whole aligned units): plain stores.

// The output words of the unit of elements first .. first + UNIT - 1 (unit_results' value), whose offsets and row
// are `start`, to their place.
fn store_unit(first: u32, start: UnitStart, out: vec4<u32>) {
    store_unit_at(contiguous_start(OPERAND_OUT, OUT_LINEAR, first, start.offsets, start.in_row), out);
}
