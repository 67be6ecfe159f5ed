// The multi-word lane stores of narrow.wgsl for an output bound as u32 words (out_plain.wgsl, out_atomic.wgsl),
// each word through that file's out_store_lanes. Such kernels never own whole chunks and are never stepped (those
// are bound as chunks, out_chunks.wgsl), so these paths do not run; narrow.wgsl's calls still need the functions.

fn out_store_chunk_lanes(chunk: u32, bits: vec4<u32>, mask: vec4<u32>) {
    out_store_lanes(4u * chunk, bits.x, mask.x);
    out_store_lanes(4u * chunk + 1u, bits.y, mask.y);
    out_store_lanes(4u * chunk + 2u, bits.z, mask.z);
    out_store_lanes(4u * chunk + 3u, bits.w, mask.w);
}

fn out_store_word_pair_lanes(index: u32, bits: vec2<u32>, mask: u32) {
    out_store_lanes(index, bits.x, mask);
    out_store_lanes(index + 1u, bits.y, mask);
}
