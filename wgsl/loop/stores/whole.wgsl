// A unit stored whole (OutputStore.UNITS, and the scatter stores where a unit happens to lie in one run).

// The unit's output words `out` to their contiguous place, which starts at output element `out_start`: one chunk,
// or one word for a one-word unit (float32 -> uint8).
fn store_unit_at(out_start: u32, out: vec4<u32>) {
    if (UNIT == 4u * OUT_PER_WORD) {
        out_store_chunk(out_start / UNIT, out);
    } else {
        out_store_word(out_start / OUT_PER_WORD, out.x);
    }
}
