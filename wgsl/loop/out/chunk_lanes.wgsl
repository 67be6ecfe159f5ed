// Stores of some lanes of a chunk (or of a pair of words) that a unit owns, through the vec4<u32> view (chunks.wgsl):
// the stepped and chunk-scattered outputs (stores/stepped.wgsl, stores/scatter_chunks.wgsl), which the planner
// binds as chunks.

// The lanes `mask` of chunk `chunk` set to `bits`, the other bytes kept (the chunk is the unit's own).
fn out_store_chunk_lanes(chunk: u32, bits: vec4<u32>, mask: vec4<u32>) {
    out_chunks[chunk] = (out_chunks[chunk] & ~mask) | bits;
}

// Words `index` and `index` + 1 with the lanes `mask` of each set to `bits`, the other bytes kept (the words are
// the unit's own): both read before either is written.
fn out_store_word_pair_lanes(index: u32, bits: vec2<u32>, mask: u32) {
    let next = index + 1u;
    let w0 = out_chunks[index / 4u][index % 4u];
    let w1 = out_chunks[next / 4u][next % 4u];
    out_chunks[index / 4u][index % 4u] = (w0 & ~mask) | bits.x;
    out_chunks[next / 4u][next % 4u] = (w1 & ~mask) | bits.y;
}
