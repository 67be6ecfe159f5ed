// Storage for element types of 8, 16 or 32 bits: u32 words hold 32 / BITS elements each, low lanes first.
//
// A unit is the UNIT elements of one 16-byte chunk of output (one word for float32 -> uint8; half a chunk's for a
// stepped output, whose elements are two apart), so that each store of a warp is one contiguous run: stores that
// leave gaps between invocations cost far more than loads that do (the loads' gaps come from the L1 cache). Its
// input is UNIT / IN_PER_WORD words; units/*.wgsl (one file per ratio of the widths, chosen by gpuops/shaders.py)
// turn them into the unit's output words. Words are handled with constant swizzles (.x .y .z .w) so no vector is
// indexed dynamically (that would push it to local memory on some GPUs). A linear operand, or one in rows of whole
// aligned units (chunk rows), moves as whole vec4<u32> chunks; a strided one as whole chunks where a unit happens
// to lie in one, else gathered (or scattered) element by element.

const IN_PER_WORD: u32 = 32u / IN_BITS;
const OUT_PER_WORD: u32 = 32u / OUT_BITS;
const IN_PER_CHUNK: u32 = 4u * IN_PER_WORD;
const IN_MASK: u32 = 0xffffffffu >> (32u - IN_BITS);
const OUT_MASK: u32 = 0xffffffffu >> (32u - OUT_BITS);

// Lanes: the IN_PER_WORD elements of one input word. A lane predicate of dtype/*.wgsl gives 1 in the lowest bit
// of each lane where it holds and 0 elsewhere, so flags combine with & | ^ and lanes_put turns them into values.
const LANES: u32 = IN_PER_WORD;  // (wide.wgsl: 1)
const LANE_ONES: u32 = 0xffffffffu / IN_MASK;  // 0x01010101, 0x00010001 or 1
const LANE_HIGH: u32 = LANE_ONES << (IN_BITS - 1u);
const LANE_LOW: u32 = ~LANE_HIGH;

// `value` (below 2^IN_BITS) in each flagged lane: a lane's flag times the value cannot carry into the next lane.
fn lanes_put(flags: u32, value: u32) -> u32 {
    return flags * value;
}

// The predicates below have a one-lane form (32-bit types): a comparison costs fewer instructions than the lane
// arithmetic.

// 1 in each lane that is all zeros. (x & LANE_LOW) + LANE_LOW sets a lane's high bit exactly when one of its low
// bits is set, and never carries out of the lane.
fn lanes_zero(x: u32) -> u32 {
    if (LANES == 1u) {
        return select(0u, 1u, x == 0u);
    }
    return (~(((x & LANE_LOW) + LANE_LOW) | x) & LANE_HIGH) >> (IN_BITS - 1u);
}

// 1 in each lane whose bits below the high one, as a number, exceed the same lane of `limit` (high bits clear).
fn lanes_low_bits_above(x: u32, limit: u32) -> u32 {
    if (LANES == 1u) {
        return select(0u, 1u, (x & LANE_LOW) > limit);
    }
    return (((x & LANE_LOW) + (LANE_LOW - limit)) & LANE_HIGH) >> (IN_BITS - 1u);
}

// 1 in each lane whose high bit (a sign bit) is set.
fn lanes_high_bit(x: u32) -> u32 {
    return (x >> (IN_BITS - 1u)) & LANE_ONES;
}

// All ones in each flagged lane (flags: 1 in a lane's lowest bit), zeros elsewhere: a mask for & and ^.
fn lanes_fill(flags: u32) -> u32 {
    return lanes_put(flags, IN_MASK);
}

fn load_element(operand: u32, offset: u32) -> InElem {
    return (in_word(operand, offset / IN_PER_WORD) >> ((offset % IN_PER_WORD) * IN_BITS)) & IN_MASK;
}

fn store_element(offset: u32, value: OutElem) {
    let shift = (offset % OUT_PER_WORD) * OUT_BITS;
    store_lanes(offset / OUT_PER_WORD, (value & OUT_MASK) << shift, OUT_MASK << shift);
}

// The lanes `mask` of output word `index` set to `bits`: a plain store when they are the whole word, so a word
// that needs no other lane's bytes is never read.
fn store_lanes(index: u32, bits: u32, mask: u32) {
    if (mask == 0xffffffffu) {
        out_store_word(index, bits);
    } else {
        out_store_lanes(index, bits, mask);
    }
}

// A one-input operator's results, one per input lane (each fits in OUT_BITS), as output words.
fn lanes_to_output(lanes: u32) -> vec2<u32> {
    if (IN_BITS == 16u && OUT_BITS == 8u) {
        return vec2<u32>((lanes | (lanes >> 8u)) & 0xffffu, 0u);  // float16 -> uint8
    }
    if (IN_BITS == 16u && OUT_BITS == 32u) {
        return vec2<u32>(lanes & 0xffffu, lanes >> 16u);  // float16 -> uint32: two words
    }
    return vec2<u32>(lanes, 0u);  // the same width, or one 32-bit lane
}

// The results of the elements of one input word, packed at OUT_BITS each: 8, 16, 32 or 64 bits. Every operator
// works on all lanes of the word at once (see unary.wgsl and binary.wgsl).
fn word_results(a: u32, b: u32) -> vec2<u32> {
    return lanes_to_output(compute(a, b));
}

// `count` elements of a strided operand's unit from its element `start` (a multiple of IN_PER_CHUNK), gathered
// one by one into word form. One loop, so that the kernel holds one copy of the gathering code.
fn gather_words(operand: u32, start: u32, count: u32, first: u32, first_offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    var words = vec4<u32>();
    for (var j = 0u; j < count; j += 1u) {
        let offsets = unit_element_offsets(first, start + j, first_offsets, in_row);
        words[j / IN_PER_WORD] |= load_element(operand, offsets[operand]) << ((j % IN_PER_WORD) * IN_BITS);
    }
    return words;
}

const NO_START: u32 = 0xffffffffu;  // contiguous_start's answer for a unit that must be gathered or scattered

// Element offset of the unit's first element in the operand's binding when the unit's input is contiguous and
// aligned to its size (always for a linear operand; a strided operand's unit may still lie in one row).
fn contiguous_start(operand: u32, linear: bool, first: u32, first_offsets: vec3<u32>, in_row: bool) -> u32 {
    if (linear) {
        return params.base[operand] + first;
    }
    if (units_whole(operand, false) || unit_is_chunk(operand, first_offsets, in_row)) {
        return first_offsets[operand];
    }
    return NO_START;
}

// Input chunk `c` of the unit (units of one input chunk or more), or in .xy the two words of a unit of half a
// chunk (UNIT < IN_PER_CHUNK: a stepped output's, and float16 -> uint32's), read as words.
fn load_chunk(operand: u32, linear: bool, c: u32, first: u32, first_offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    let start = contiguous_start(operand, linear, first, first_offsets, in_row);
    if (units_whole(operand, linear) || start != NO_START) {
        if (UNIT < IN_PER_CHUNK) {
            let word = start / IN_PER_WORD;
            return vec4<u32>(in_word(operand, word), in_word(operand, word + 1u), 0u, 0u);
        }
        return in_chunk(operand, start / IN_PER_CHUNK + c);
    }
    return gather_words(operand, c * IN_PER_CHUNK, min(UNIT, IN_PER_CHUNK), first, first_offsets, in_row);
}

fn word_of(v: vec4<u32>, k: u32) -> u32 {
    return select(select(v.x, v.y, k == 1u), select(v.z, v.w, k == 3u), k >= 2u);
}

// The unit's output chunk to a strided output, element by element, each word changed once for all its elements
// in a run of the unit's elements (stores that leave gaps are the cost here, and a word's second change would wait
// for its first).
fn scatter_unit(out: vec4<u32>, first: u32, first_offsets: vec3<u32>, in_row: bool) {
    if (OUT_CHUNKS_OWNED) {
        scatter_unit_chunks(out, first, first_offsets, in_row);
        return;
    }
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

// scatter_unit where no other unit has elements in the unit's 16-byte chunks of output (OUT_CHUNKS_OWNED): each
// chunk changed once, as a whole: a stride-2 output then takes a quarter of the memory instructions of word-by-word
// stores. Kept apart from the word scatter: one loop for both (chunks gathered, then stored word by word where not
// owned) would burden float32 -> uint8's word stores with the chunk's registers and selects.
fn scatter_unit_chunks(out: vec4<u32>, first: u32, first_offsets: vec3<u32>, in_row: bool) {
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

// Stepped outputs (OUT_STEP 2: an output of innermost stride 2 where every unit's span, the unit's elements and
// those between them, is one aligned chunk (units of half a chunk's elements) or two words (float32 -> uint8);
// gpuops/plan.py checks that for every unit): a unit's results go to every second element of its span, whose
// words are read together and then written once each, the elements between keeping their values. No loop over the
// elements, consecutive invocations store consecutive chunks, and the kernel holds no element-by-element fallback
// (whose registers every invocation would pay for).

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

// The unit's results `out` to its span, which starts at output element `offset`.
fn store_stepped(offset: u32, out: vec4<u32>) {
    let word = offset / OUT_PER_WORD;
    if (UNIT * OUT_BITS == 64u) {  // half a chunk's elements: their span is one chunk
        out_store_chunk_lanes(word / 4u, vec4<u32>(spread_word(out.x), spread_word(out.y)), vec4<u32>(STEPPED_LANES));
    } else {  // one word's elements (float32 -> uint8): two words
        out_store_word_pair_lanes(word, spread_word(out.x), STEPPED_LANES);
    }
}

// The output chunk of the unit of elements first .. first + UNIT - 1 (unit_results' value), whose offsets and row
// are `start`, to its place.
fn store_unit(first: u32, start: UnitStart, out: vec4<u32>) {
    if (OUT_STEP == 2u) {
        store_stepped(start.offsets[OPERAND_OUT], out);
        return;
    }
    let out_start = contiguous_start(OPERAND_OUT, OUT_LINEAR, first, start.offsets, start.in_row);
    if (units_whole(OPERAND_OUT, OUT_LINEAR) || out_start != NO_START) {
        if (UNIT == 4u * OUT_PER_WORD) {
            out_store_chunk(out_start / UNIT, out);
        } else {
            out_store_word(out_start / OUT_PER_WORD, out.x);  // a one-word unit (float32 -> uint8)
        }
    } else {
        scatter_unit(out, first, start.offsets, start.in_row);
    }
}
