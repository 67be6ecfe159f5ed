// Single-element output stores when no two invocations write one word: 32-bit elements, or the tensor's last
// unit of a linear output (one invocation owns it).
fn out_store_word(index: u32, bits: u32) {
    out_words[index] = bits;
}

// `mask` selects the lanes that are this element; the other bytes of the word keep their values.
fn out_store_lanes(index: u32, bits: u32, mask: u32) {
    out_words[index] = (out_words[index] & ~mask) | bits;
}
