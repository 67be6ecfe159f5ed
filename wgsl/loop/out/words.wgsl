// Output stores through a u32 view (OutputBinding.WORDS, out_words) when no two invocations write one word:
// 32/64-bit elements, a linear output, or a unit's own contiguous words. The output has exactly one binding: WebGPU
// implementations may refuse two writable views of one buffer range (Dawn does).
fn out_store_word(index: u32, bits: u32) {
    out_words[index] = bits;
}

// `mask` selects the lanes that are this element; the other bytes of the word keep their values.
fn out_store_lanes(index: u32, bits: u32, mask: u32) {
    out_words[index] = (out_words[index] & ~mask) | bits;
}

fn out_store_chunk(chunk: u32, bits: vec4<u32>) {
    out_words[4u * chunk] = bits.x;
    out_words[4u * chunk + 1u] = bits.y;
    out_words[4u * chunk + 2u] = bits.z;
    out_words[4u * chunk + 3u] = bits.w;
}
