// Output stores for 8/16-bit elements with strides: elements of one word may belong to different invocations,
// so each lane is changed with atomics and no other byte of the word is touched.
fn out_store_word(index: u32, bits: u32) {
    atomicStore(&out_words[index], bits);
}

fn out_store_lanes(index: u32, bits: u32, mask: u32) {
    atomicAnd(&out_words[index], bits | ~mask);  // clear the lane's zero bits, keep every other lane
    atomicOr(&out_words[index], bits);           // set the lane's one bits
}

// A unit's own contiguous words (no other invocation writes them).
fn out_store_chunk(chunk: u32, bits: vec4<u32>) {
    atomicStore(&out_words[4u * chunk], bits.x);
    atomicStore(&out_words[4u * chunk + 1u], bits.y);
    atomicStore(&out_words[4u * chunk + 2u], bits.z);
    atomicStore(&out_words[4u * chunk + 3u], bits.w);
}

// (Kernels with this output binding never own whole chunks, so narrow.wgsl's chunk path does not run; its call
// still needs the function.)
fn out_store_chunk_lanes(chunk: u32, bits: vec4<u32>, mask: vec4<u32>) {
    out_store_lanes(4u * chunk, bits.x, mask.x);
    out_store_lanes(4u * chunk + 1u, bits.y, mask.y);
    out_store_lanes(4u * chunk + 2u, bits.z, mask.z);
    out_store_lanes(4u * chunk + 3u, bits.w, mask.w);
}

// (Stepped outputs are bound as chunks (out_chunks.wgsl); the call in narrow.wgsl still needs the function.)
fn out_store_word_pair_lanes(index: u32, bits: vec2<u32>, mask: u32) {
    out_store_lanes(index, bits.x, mask);
    out_store_lanes(index + 1u, bits.y, mask);
}
