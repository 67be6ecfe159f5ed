// TILES (wgsl/tiles.wgsl) for 8/16/32-bit elements: a tile slot is one u32 word of a tiled input, as it lies in
// memory (a column that starts inside a word keeps its offset, tiles.wgsl: tile_element). A group is UNIT
// elements: whole words of input (one, or float32 -> uint8's four, float16 -> uint8's two) and whole words of
// output (one, or float16 -> uint32's two). Its elements are picked one by one and packed into input words, each
// word is computed on all its lanes at once (narrow.wgsl: word_results), and the results are packed into output
// words.

const SLOT_ELEMENTS: u32 = IN_PER_WORD;
const OUT_PER_SLOT: u32 = OUT_PER_WORD;

fn load_slot(operand: u32, index: u32) -> u32 {
    return in_word(operand, index);
}

fn slot_element(slot: u32, lane: u32) -> u32 {
    return (slot >> (lane * IN_BITS)) & IN_MASK;
}

// A group's elements (one per component, missing ones zero) as the input words they make.
fn pack_lanes(e: vec4<u32>) -> vec4<u32> {
    if (IN_BITS == 8u) {
        return vec4<u32>(e.x | (e.y << 8u) | (e.z << 16u) | (e.w << 24u), 0u, 0u, 0u);
    }
    if (IN_BITS == 16u) {
        return vec4<u32>(e.x | (e.y << 16u), e.z | (e.w << 16u), 0u, 0u);
    }
    return e;
}

// An input's words for the group whose first column is `first`: read whole where the input runs along the
// output's rows and the group starts on a word, else element by element (missing lanes zero).
fn group_input(operand: u32, tiled: bool, origin: vec3<u32>, offsets: vec3<u32>, row: u32, first: u32,
               columns: u32, whole: bool) -> vec4<u32> {
    let start = offsets[operand] + first * dim_strides(RANK - 1u)[operand];
    if (!tiled && whole && dim_strides(RANK - 1u)[operand] == 1u && start % IN_PER_WORD == 0u) {
        let word = start / IN_PER_WORD;
        var words = vec4<u32>(in_word(operand, word), 0u, 0u, 0u);
        if (UNIT >= 2u * IN_PER_WORD) {
            words.y = in_word(operand, word + 1u);
        }
        if (UNIT >= 4u * IN_PER_WORD) {
            words.z = in_word(operand, word + 2u);
            words.w = in_word(operand, word + 3u);
        }
        return words;
    }
    var e = vec4<u32>();
    if (first < columns) {
        e.x = input_element(operand, tiled, origin, offsets, row, first);
    }
    if (UNIT > 1u && first + 1u < columns) {
        e.y = input_element(operand, tiled, origin, offsets, row, first + 1u);
    }
    if (UNIT > 2u && first + 2u < columns) {
        e.z = input_element(operand, tiled, origin, offsets, row, first + 2u);
    }
    if (UNIT > 3u && first + 3u < columns) {
        e.w = input_element(operand, tiled, origin, offsets, row, first + 3u);
    }
    return pack_lanes(e);
}

// The group's output words from its input words: each input word's results take IN_PER_WORD * OUT_BITS bits.
fn group_results(a: vec4<u32>, b: vec4<u32>) -> vec2<u32> {
    let r = word_results(a.x, b.x);
    if (IN_PER_WORD * OUT_BITS == 16u) {  // float16 -> uint8: two input words
        return vec2<u32>(r.x | (word_results(a.y, b.y).x << 16u), 0u);
    }
    if (IN_PER_WORD * OUT_BITS == 8u) {  // float32 -> uint8: four
        return vec2<u32>(r.x | (word_results(a.y, b.y).x << 8u) | (word_results(a.z, b.z).x << 16u)
                         | (word_results(a.w, b.w).x << 24u), 0u);
    }
    return r;  // one input word: one output word, or float16 -> uint32's two
}

// The group of output row `row` (offsets `offsets`) whose first column is `first` (below zero, wrapped, for a
// row's first group when the row starts inside a word): whole words stored as such, a partial group's present
// lanes stored alone (narrow.wgsl: store_lanes; atomic where the output's words are shared).
fn run_tile_group(origin: vec3<u32>, offsets: vec3<u32>, row: u32, first: u32, columns: u32) {
    let whole = first < columns && columns - first >= UNIT;
    let a = group_input(OPERAND_A, A_TILED, origin, offsets, row, first, columns, whole);
    var b = vec4<u32>();
    if (HAS_B) {
        b = group_input(OPERAND_B, B_TILED, origin, offsets, row, first, columns, whole);
    }
    let out = group_results(a, b);
    let index = (offsets[OPERAND_OUT] + first) / OUT_PER_WORD;
    if (whole) {
        out_store_word(index, out.x);
        if (UNIT > OUT_PER_WORD) {
            out_store_word(index + 1u, out.y);
        }
        return;
    }
    var masks = vec2<u32>();
    for (var j = 0u; j < UNIT; j += 1u) {
        if (first + j < columns) {
            let lane = OUT_MASK << ((j % OUT_PER_WORD) * OUT_BITS);
            masks |= select(vec2<u32>(lane, 0u), vec2<u32>(0u, lane), j >= OUT_PER_WORD);
        }
    }
    if (masks.x != 0u) {
        store_lanes(index, out.x & masks.x, masks.x);
    }
    if (UNIT > OUT_PER_WORD && masks.y != 0u) {
        store_lanes(index + 1u, out.y & masks.y, masks.y);
    }
}
