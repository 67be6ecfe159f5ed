// TILES (tiles.wgsl) for 8/16/32-bit elements: a tile slot is one u32 word of a tiled input, as it lies in
// memory (a column that starts inside a word keeps its offset, tiles.wgsl: tile_element). A group is UNIT
// elements: whole words of input (one, or float32 -> uint8's four, float16 -> uint8's two) and whole words of
// output (one, or float16 -> uint32's two). Its input words are made from the tile, each word is computed on all
// its lanes at once (loop/narrow.wgsl: word_results), and the results are packed into output words.
//
// A slot of an 8/16-bit input holds SLOT_ELEMENTS rows of its column, so where every output row starts on a word
// (no row's groups are skewed, tiles.wgsl: run_tile_rows) an invocation takes a block of SLOT_ELEMENTS rows of its
// group at once: one word per column out of the tile, transposed in registers into the rows' input words. That is
// one workgroup-memory read per input word rather than one per element. Otherwise (and for 32-bit inputs, whose
// slot is one row) the rows are taken one by one and a group's elements picked one by one.

const SLOT_ELEMENTS: u32 = IN_PER_WORD;
const OUT_PER_SLOT: u32 = OUT_PER_WORD;

fn load_slot(operand: u32, index: u32) -> u32 {
    return in_word(operand, index);
}

fn slot_element(slot: u32, lane: u32) -> u32 {
    return (slot >> (lane * IN_BITS)) & IN_MASK;
}

// What a lane past the tile's columns holds, in every operand (its result is not stored): zero, or one in a kernel
// that reports errors, so that the lane notes nothing (1 % 1; lib/error_notes.wgsl). A constant expression, so that
// the DirectML level's kernels hold a plain zero: a value that depends on the operand at run time costs Dawn's
// compiled tiled kernels a few percent.
const MISSING_LANE: u32 = select(0u, ELEM_ONE, MISSING_LANES_ONE);

// A group's elements (one per component; missing ones MISSING_LANE) as the input words they make.
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
// output's rows and the group starts on a word, else element by element (a lane past the columns: MISSING_LANE).
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
    var e = vec4<u32>(MISSING_LANE);
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
// row's first group when the row starts inside a word), its elements picked out of the tile one by one.
fn run_tile_group(origin: vec3<u32>, offsets: vec3<u32>, row: u32, first: u32, columns: u32) {
    let whole = first < columns && columns - first >= UNIT;
    let a = group_input(OPERAND_A, A_TILED, origin, offsets, row, first, columns, whole);
    var b = vec4<u32>();
    if (HAS_B) {
        b = group_input(OPERAND_B, B_TILED, origin, offsets, row, first, columns, whole);
    }
    store_group(offsets, first, columns, whole, group_results(a, b));
}

// The group's output words: whole words stored as such, a partial group's present lanes stored alone
// (loop/narrow.wgsl: store_lanes; atomic where the output's words are shared).
fn store_group(offsets: vec3<u32>, first: u32, columns: u32, whole: bool, out: vec2<u32>) {
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

fn run_tile_work(origin: vec3<u32>, lane: u32, columns: u32, rows: u32) {
    let down = dim_strides(RANK - 2u);
    let aligned = origin[OPERAND_OUT] % OUT_PER_WORD == 0u && down[OPERAND_OUT] % OUT_PER_WORD == 0u;
    if (SLOT_ELEMENTS == 1u || !aligned) {
        run_tile_rows(origin, lane, columns, rows);
        return;
    }
    let first_block = lane / TILE_GROUPS;
    if (first_block >= TILE_ROWS_AT_ONCE) {
        return;  // (a workgroup size that is not a multiple of TILE_GROUPS)
    }
    for (var r0 = first_block * SLOT_ELEMENTS; r0 < rows; r0 += TILE_ROWS_AT_ONCE * SLOT_ELEMENTS) {
        for (var g = lane % TILE_GROUPS; g * UNIT < columns; g += TILE_GROUPS) {
            run_tile_block(origin, down, r0, g * UNIT, columns, rows);
        }
    }
}

// Rows r0 .. r0 + SLOT_ELEMENTS - 1 (r0 a multiple of SLOT_ELEMENTS, rows past the tile's end skipped) of the
// group whose first column is `first`, its output rows starting on words.
fn run_tile_block(origin: vec3<u32>, down: vec3<u32>, r0: u32, first: u32, columns: u32, rows: u32) {
    let whole = columns - first >= UNIT;
    var a_columns = vec4<u32>();
    var b_columns = vec4<u32>();
    if (A_TILED) {
        a_columns = column_words(OPERAND_A, origin, r0, first, columns);
    }
    if (B_TILED) {
        b_columns = column_words(OPERAND_B, origin, r0, first, columns);
    }
    for (var i = 0u; i < SLOT_ELEMENTS && r0 + i < rows; i += 1u) {
        let row = r0 + i;
        let offsets = origin + row * down;
        var a: vec4<u32>;
        if (A_TILED) {
            a = row_words(a_columns, i);
        } else {
            a = group_input(OPERAND_A, false, origin, offsets, row, first, columns, whole);
        }
        var b = vec4<u32>();
        if (B_TILED) {
            b = row_words(b_columns, i);
        } else if (HAS_B) {
            b = group_input(OPERAND_B, false, origin, offsets, row, first, columns, whole);
        }
        store_group(offsets, first, columns, whole, group_results(a, b));
    }
}

// The tiled input's words for the group's UNIT columns from tile row r0: component j holds column first + j's
// elements of rows r0 .. r0 + SLOT_ELEMENTS - 1, row r0 in the low lane (a missing column: MISSING_LANE in each
// lane).
fn column_words(operand: u32, origin: vec3<u32>, r0: u32, first: u32, columns: u32) -> vec4<u32> {
    let step = dim_strides(RANK - 1u)[operand];
    let start = origin[operand] + first * step;
    var words = vec4<u32>(column_word(operand, start, first, r0, columns),
                          column_word(operand, start + step, first + 1u, r0, columns), 0u, 0u);
    if (UNIT > 2u) {
        words.z = column_word(operand, start + 2u * step, first + 2u, r0, columns);
        words.w = column_word(operand, start + 3u * step, first + 3u, r0, columns);
    }
    return words;
}

// Tile column c's elements of rows r0 .. r0 + SLOT_ELEMENTS - 1 as one word, row r0 in the low lane: the slot that
// holds row r0, and where the column starts inside a word, the rest from the slot after it. Element e of a column
// (e = start % SLOT_ELEMENTS + row, tiles.wgsl: tile_element) has e < TILE_DEPTH + SLOT_ELEMENTS - 1, so both
// slots are among the column's TILE_STRIDE. Lanes of rows past the tensor come from slots that hold none of its
// elements; the rows they would give are skipped.
fn column_word(operand: u32, start: u32, c: u32, r0: u32, columns: u32) -> u32 {
    if (c >= columns) {
        return LANE_ONES * MISSING_LANE;  // (a constant expression, as MISSING_LANE)
    }
    let e = start % SLOT_ELEMENTS + r0;
    let slot = tile_column(c) + e / SLOT_ELEMENTS;
    let shift = (e % SLOT_ELEMENTS) * IN_BITS;
    if (shift == 0u) {
        return tile_slot(operand, slot);
    }
    return (tile_slot(operand, slot) >> shift) | (tile_slot(operand, slot + 1u) << (32u - shift));
}

// Row r0 + i's input words for the group out of its columns' words: lane j of the row is lane i of column j.
fn row_words(columns: vec4<u32>, i: u32) -> vec4<u32> {
    return pack_lanes((columns >> vec4<u32>(i * IN_BITS)) & vec4<u32>(IN_MASK));
}
