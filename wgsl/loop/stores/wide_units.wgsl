// OutputStore.UNITS of 64-bit elements (wide_units.wgsl): every unit of the output is one chunk of its own.

// The unit's results `out` to its place (offsets and row `start`).
fn store_unit(first: u32, start: UnitStart, out: vec4<u32>) {
    out_store_chunk(start.offsets[OPERAND_OUT] / 2u, out);
}
