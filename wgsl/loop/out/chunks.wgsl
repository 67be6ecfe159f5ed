// Output stores through a vec4<u32> view (OutputBinding.CHUNKS, the output's only binding): whole 16-byte chunks
// where a unit owns them, single words otherwise. Used when no two invocations write one word and the bound window
// is whole chunks.
fn out_store_chunk(chunk: u32, bits: vec4<u32>) {
    out_chunks[chunk] = bits;
}

fn out_store_word(index: u32, bits: u32) {
    out_chunks[index / 4u][index % 4u] = bits;
}

// `mask` selects the lanes that are this element; the other bytes of the word keep their values.
fn out_store_lanes(index: u32, bits: u32, mask: u32) {
    let word = out_chunks[index / 4u][index % 4u];
    out_chunks[index / 4u][index % 4u] = (word & ~mask) | bits;
}
