// OutputStore.SCATTER_WORDS, SCATTER_ATOMIC and SCATTER_CHUNKS (narrow_units.wgsl): a strided output, whose unit
// is stored whole where it lies in one contiguous run, else element by element (scatter_unit: word by word,
// scatter_words.wgsl, atomically where other units share the words, or chunk by chunk, scatter_chunks.wgsl).

// The output words of the unit of elements first .. first + UNIT - 1 (unit_results' value), whose offsets and row
// are `start`, to their place.
fn store_unit(first: u32, start: UnitStart, out: vec4<u32>) {
    let out_start = contiguous_start(OPERAND_OUT, OUT_LINEAR, first, start.offsets, start.in_row);
    if (out_start != NO_START) {
        store_unit_at(out_start, out);
    } else {
        scatter_unit(out, first, start.offsets, start.in_row);
    }
}

// Word k of a chunk.
fn word_of(v: vec4<u32>, k: u32) -> u32 {
    return select(select(v.x, v.y, k == 1u), select(v.z, v.w, k == 3u), k >= 2u);
}
