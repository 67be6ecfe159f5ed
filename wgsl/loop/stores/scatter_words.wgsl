// scatter_unit (scatter.wgsl) for SCATTER_WORDS and SCATTER_ATOMIC: the unit's output chunk to a strided output,
// element by element, each word changed once for all its elements in a run of the unit's elements (stores that
// leave gaps are the cost here, and a word's second change would wait for its first). The word's lanes are changed
// with plain or atomic stores, as the output view has them (out/words.wgsl, out/chunks.wgsl, out/atomic.wgsl).
fn scatter_unit(out: vec4<u32>, first: u32, first_offsets: vec3<u32>, in_row: bool) {
    var index = NO_START;  // the word being built, its bits and the mask of its lanes that are set
    var bits = 0u;
    var mask = 0u;
    for (var j = 0u; j < UNIT; j += 1u) {
        let value = (word_of(out, j / OUT_PER_WORD) >> ((j % OUT_PER_WORD) * OUT_BITS)) & OUT_MASK;
        let offset = unit_element_offsets(first, j, first_offsets, in_row)[OPERAND_OUT];
        if (offset / OUT_PER_WORD != index) {
            if (index != NO_START) {
                store_lanes(index, bits, mask);
            }
            index = offset / OUT_PER_WORD;
            bits = 0u;
            mask = 0u;
        }
        let shift = (offset % OUT_PER_WORD) * OUT_BITS;
        bits |= value << shift;
        mask |= OUT_MASK << shift;
    }
    store_lanes(index, bits, mask);
}
