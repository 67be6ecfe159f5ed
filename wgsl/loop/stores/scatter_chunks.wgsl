// scatter_unit (scatter.wgsl) for SCATTER_CHUNKS: no other unit has elements in the unit's 16-byte chunks of
// output, so each chunk is changed once, as a whole (out/chunk_lanes.wgsl): a stride-2 output then takes a quarter
// of the memory instructions of word-by-word stores. Kept apart from the word scatter (scatter_words.wgsl): one
// loop for both (chunks gathered, then stored word by word where not owned) would burden float32 -> uint8's word
// stores with the chunk's registers and selects.
fn scatter_unit(out: vec4<u32>, first: u32, first_offsets: vec3<u32>, in_row: bool) {
    var index = NO_START;  // the chunk being built, its bits and the mask of its lanes that are set
    var bits = vec4<u32>();
    var mask = vec4<u32>();
    for (var j = 0u; j < UNIT; j += 1u) {
        let value = (word_of(out, j / OUT_PER_WORD) >> ((j % OUT_PER_WORD) * OUT_BITS)) & OUT_MASK;
        let offset = unit_element_offsets(first, j, first_offsets, in_row)[OPERAND_OUT];
        let word = offset / OUT_PER_WORD;
        if (word / 4u != index) {
            if (index != NO_START) {
                out_store_chunk_lanes(index, bits, mask);
            }
            index = word / 4u;
            bits = vec4<u32>();
            mask = vec4<u32>();
        }
        // The element's word within the chunk, chosen by comparison: a dynamically indexed vector may be moved to
        // local memory.
        let in_word = vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(word % 4u);
        let shift = (offset % OUT_PER_WORD) * OUT_BITS;
        bits |= select(vec4<u32>(), vec4<u32>(value << shift), in_word);
        mask |= select(vec4<u32>(), vec4<u32>(OUT_MASK << shift), in_word);
    }
    out_store_chunk_lanes(index, bits, mask);
}
