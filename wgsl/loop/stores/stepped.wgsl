// OutputStore.STEPPED (narrow_units.wgsl): an output of innermost stride 2 where every unit's span, the unit's
// elements and those between them, is one aligned chunk (units of half a chunk's elements) or two words (float32 ->
// uint8); gpuops/plan.py checks that for every unit. A unit's results go to every second element of its span, whose
// words are read together and then written once each, the elements between keeping their values
// (out/chunk_lanes.wgsl). No loop over the elements, consecutive invocations store consecutive chunks, and the
// kernel holds no element-by-element fallback (whose registers every invocation would pay for).

// The lanes of a stepped output's word that are the unit's elements (the others lie between them).
const STEPPED_LANES: u32 = select(0x0000ffffu, 0x00ff00ffu, OUT_BITS == 8u);

// The OUT_PER_WORD elements of word `w`, each moved to every second lane: the low two of a word's elements, then
// the high two (8-bit), or one each (16-bit).
fn spread_word(w: u32) -> vec2<u32> {
    if (OUT_BITS == 8u) {
        return vec2<u32>((w & 0xffu) | ((w << 8u) & 0xff0000u), ((w >> 16u) & 0xffu) | ((w >> 8u) & 0xff0000u));
    }
    return vec2<u32>(w & 0xffffu, w >> 16u);
}

// The unit's results `out` (unit_results' value) to its span, which starts at the offset of its first element
// (`start`).
fn store_unit(first: u32, start: UnitStart, out: vec4<u32>) {
    let word = start.offsets[OPERAND_OUT] / OUT_PER_WORD;
    if (UNIT * OUT_BITS == 64u) {  // half a chunk's elements: their span is one chunk
        out_store_chunk_lanes(word / 4u, vec4<u32>(spread_word(out.x), spread_word(out.y)), vec4<u32>(STEPPED_LANES));
    } else {  // one word's elements (float32 -> uint8): two words
        out_store_word_pair_lanes(word, spread_word(out.x), STEPPED_LANES);
    }
}
