// Storage for element types of 8, 16 or 32 bits: u32 words hold 32 / BITS elements each, low lanes first. Every
// narrow kernel: its lanes (what operators compute on), element loads and stores, and a word's results.

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
