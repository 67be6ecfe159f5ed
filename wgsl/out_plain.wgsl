// Output stores when no two invocations write one word (32/64-bit elements, or a linear output).
fn out_store_word(index: u32, bits: OutWord) {
    out_buf[index] = bits;
}

// Only the invocation that owns this word writes it; `mask` selects the lanes that are output elements.
fn out_store_lanes(index: u32, bits: u32, mask: u32) {
    out_buf[index] = (out_buf[index] & ~mask) | bits;
}
