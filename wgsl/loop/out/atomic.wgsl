// Output stores for 8/16-bit elements with strides (OutputStore.SCATTER_ATOMIC, out_words as atomic<u32>):
// elements of one word may belong to different invocations, so each lane is changed with atomics and no other byte
// of the word is touched.
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
