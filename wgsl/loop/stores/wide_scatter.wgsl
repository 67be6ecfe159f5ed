// OutputStore.SCATTER_WORDS of 64-bit elements (wide_units.wgsl): a strided output, whose unit is stored as one
// chunk where it lies in one, else element by element (every element has words of its own).

// The unit's results `out` to its place (offsets and row `start`).
fn store_unit(first: u32, start: UnitStart, out: vec4<u32>) {
    let offsets0 = start.offsets;
    if (unit_is_chunk(OPERAND_OUT, offsets0, start.in_row)) {
        out_store_chunk(offsets0[OPERAND_OUT] / 2u, out);
    } else {
        store_element(offsets0[OPERAND_OUT], out.xy);
        store_element(unit_element_offsets(first, 1u, offsets0, start.in_row)[OPERAND_OUT], out.zw);
    }
}
