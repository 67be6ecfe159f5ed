// Storage for element types of 8, 16 or 32 bits: u32 words hold 32 / BITS elements each, low lanes first.
// A unit is one 16-byte chunk of input: four words, handled with constant swizzles (.x .y .z .w) so no vector
// is indexed dynamically (that would push it to local memory on some GPUs). A linear operand moves as whole
// vec4<u32> chunks; a strided one is gathered (or scattered) element by element into the same word form.

const IN_PER_WORD: u32 = 32u / IN_BITS;
const OUT_PER_WORD: u32 = 32u / OUT_BITS;
const IN_MASK: u32 = 0xffffffffu >> (32u - IN_BITS);
const OUT_MASK: u32 = 0xffffffffu >> (32u - OUT_BITS);
const RESULT_BITS: u32 = IN_PER_WORD * OUT_BITS;  // output bits made from one input word: 8, 16, 32 or 64

fn load_element(operand: u32, offset: u32) -> InElem {
    return (in_word(operand, offset / IN_PER_WORD) >> ((offset % IN_PER_WORD) * IN_BITS)) & IN_MASK;
}

fn store_element(offset: u32, value: OutElem) {
    if (OUT_PER_WORD == 1u) {
        out_store_word(offset, value);
    } else {
        let shift = (offset % OUT_PER_WORD) * OUT_BITS;
        out_store_lanes(offset / OUT_PER_WORD, (value & OUT_MASK) << shift, OUT_MASK << shift);
    }
}

fn lane_result(a: u32, b: u32, lane: u32) -> u32 {
    return compute((a >> (lane * IN_BITS)) & IN_MASK, (b >> (lane * IN_BITS)) & IN_MASK) & OUT_MASK;
}

// The results of the IN_PER_WORD elements of one input word, packed at OUT_BITS each (64 bits at most).
// The lanes are written out rather than looped over: some shader translators leave such loops rolled, and
// the per-lane work then costs more than the memory traffic. Each branch folds away for the other widths; the
// `% 32u` keeps shift amounts valid in the branches that do not apply.
fn word_results(a: u32, b: u32) -> vec2<u32> {
    var packed = vec2<u32>(lane_result(a, b, 0u), 0u);
    if (IN_PER_WORD == 2u) {
        let second = lane_result(a, b, 1u);
        if (OUT_BITS == 32u) {
            packed.y = second;  // float16 -> uint32: two words
        } else {
            packed.x |= second << (OUT_BITS % 32u);
        }
    }
    if (IN_PER_WORD == 4u) {  // 8-bit in, 8-bit out
        packed.x |= (lane_result(a, b, 1u) << (OUT_BITS % 32u)) | (lane_result(a, b, 2u) << ((2u * OUT_BITS) % 32u))
            | (lane_result(a, b, 3u) << ((3u * OUT_BITS) % 32u));
    }
    return packed;
}

// Word `k` of a strided operand's unit, gathered element by element.
fn gather_word(operand: u32, k: u32, first: u32, first_offsets: vec3<u32>, in_row: bool) -> u32 {
    var word = 0u;
    for (var lane = 0u; lane < IN_PER_WORD; lane += 1u) {
        let offsets = unit_element_offsets(first, k * IN_PER_WORD + lane, first_offsets, in_row);
        word |= load_element(operand, offsets[operand]) << (lane * IN_BITS);
    }
    return word;
}

fn load_unit(operand: u32, linear: bool, first: u32, first_offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    if (linear) {
        return in_chunk(operand, (params.base[operand] + first) / UNIT);
    }
    if (unit_is_chunk(operand, first_offsets, in_row)) {
        return in_chunk(operand, first_offsets[operand] / UNIT);
    }
    return vec4<u32>(gather_word(operand, 0u, first, first_offsets, in_row),
                     gather_word(operand, 1u, first, first_offsets, in_row),
                     gather_word(operand, 2u, first, first_offsets, in_row),
                     gather_word(operand, 3u, first, first_offsets, in_row));
}

// The results of input word `k` to a strided output, element by element.
fn scatter_results(k: u32, results: vec2<u32>, first: u32, first_offsets: vec3<u32>, in_row: bool) {
    for (var lane = 0u; lane < IN_PER_WORD; lane += 1u) {
        let bit = lane * OUT_BITS;
        let value = select(results.y >> (bit - 32u), results.x >> bit, bit < 32u) & OUT_MASK;
        let offsets = unit_element_offsets(first, k * IN_PER_WORD + lane, first_offsets, in_row);
        store_element(offsets[OPERAND_OUT], value);
    }
}

// The results of a whole unit to contiguous output elements from element `offset` (16-byte aligned):
// 4 x RESULT_BITS bits, stored as words or chunks.
fn store_contiguous(offset: u32, r0: vec2<u32>, r1: vec2<u32>, r2: vec2<u32>, r3: vec2<u32>) {
    let word = offset / OUT_PER_WORD;
    if (RESULT_BITS == 8u) {
        out_store_word(word, r0.x | (r1.x << 8u) | (r2.x << 16u) | (r3.x << 24u));
    } else if (RESULT_BITS == 16u) {
        out_store_word(word, r0.x | (r1.x << 16u));
        out_store_word(word + 1u, r2.x | (r3.x << 16u));
    } else if (RESULT_BITS == 32u) {
        out_store_chunk(word / 4u, vec4<u32>(r0.x, r1.x, r2.x, r3.x));
    } else {
        out_store_chunk(word / 4u, vec4<u32>(r0, r1));
        out_store_chunk(word / 4u + 1u, vec4<u32>(r2, r3));
    }
}

fn run_full_unit(first: u32) {
    let start = unit_start(first);
    let first_offsets = start.offsets;
    let in_row = start.in_row;
    let a = load_unit(OPERAND_A, A_LINEAR, first, first_offsets, in_row);
    var b = vec4<u32>();
    if (HAS_B) {
        b = load_unit(OPERAND_B, B_LINEAR, first, first_offsets, in_row);
    }
    let r0 = word_results(a.x, b.x);
    let r1 = word_results(a.y, b.y);
    let r2 = word_results(a.z, b.z);
    let r3 = word_results(a.w, b.w);
    if (OUT_LINEAR) {
        store_contiguous(params.base[OPERAND_OUT] + first, r0, r1, r2, r3);
    } else if (unit_is_chunk(OPERAND_OUT, first_offsets, in_row)) {
        store_contiguous(first_offsets[OPERAND_OUT], r0, r1, r2, r3);
    } else {
        scatter_results(0u, r0, first, first_offsets, in_row);
        scatter_results(1u, r1, first, first_offsets, in_row);
        scatter_results(2u, r2, first, first_offsets, in_row);
        scatter_results(3u, r3, first, first_offsets, in_row);
    }
}
