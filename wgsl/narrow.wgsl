// Storage for element types of 8, 16 or 32 bits: u32 words holding 32 / BITS elements each, low lanes first.
// A unit is UNIT consecutive elements: one whole word of the narrowest operand, so a linear output word is
// written by exactly one invocation.

const IN_PER_WORD: u32 = 32u / IN_BITS;
const OUT_PER_WORD: u32 = 32u / OUT_BITS;
const IN_MASK: u32 = 0xffffffffu >> (32u - IN_BITS);
const OUT_MASK: u32 = 0xffffffffu >> (32u - OUT_BITS);

fn load_inputs(operand: u32, linear: bool, first: u32, count: u32,
               offsets: array<vec3<u32>, UNIT>) -> array<InElem, UNIT> {
    var values: array<InElem, UNIT>;
    if (linear) {
        // Whole words: the host makes a linear operand start on a word boundary.
        let word0 = (params.base[operand] + first) / IN_PER_WORD;
        for (var w = 0u; w < UNIT / IN_PER_WORD; w += 1u) {
            if (w * IN_PER_WORD < count) {
                let word = in_word(operand, word0 + w);
                for (var lane = 0u; lane < IN_PER_WORD; lane += 1u) {
                    values[w * IN_PER_WORD + lane] = (word >> (lane * IN_BITS)) & IN_MASK;
                }
            }
        }
    } else {
        for (var j = 0u; j < count; j += 1u) {
            let offset = offsets[j][operand];
            values[j] = (in_word(operand, offset / IN_PER_WORD) >> ((offset % IN_PER_WORD) * IN_BITS)) & IN_MASK;
        }
    }
    return values;
}

fn store_outputs(first: u32, count: u32, results: array<OutElem, UNIT>, offsets: array<vec3<u32>, UNIT>) {
    if (OUT_LINEAR) {
        let word0 = (params.base[OPERAND_OUT] + first) / OUT_PER_WORD;
        for (var w = 0u; w < UNIT / OUT_PER_WORD; w += 1u) {
            if (w * OUT_PER_WORD < count) {
                var bits = 0u;
                let lanes = min(OUT_PER_WORD, count - w * OUT_PER_WORD);
                for (var lane = 0u; lane < lanes; lane += 1u) {
                    bits |= (results[w * OUT_PER_WORD + lane] & OUT_MASK) << (lane * OUT_BITS);
                }
                if (lanes == OUT_PER_WORD) {
                    out_store_word(word0 + w, bits);
                } else {
                    // The tensor's last word: the bytes after its last element are not ours to write.
                    out_store_lanes(word0 + w, bits, (1u << (lanes * OUT_BITS)) - 1u);
                }
            }
        }
    } else {
        for (var j = 0u; j < count; j += 1u) {
            let offset = offsets[j][OPERAND_OUT];
            if (OUT_PER_WORD == 1u) {
                out_store_word(offset, results[j]);
            } else {
                let shift = (offset % OUT_PER_WORD) * OUT_BITS;
                out_store_lanes(offset / OUT_PER_WORD, (results[j] & OUT_MASK) << shift, OUT_MASK << shift);
            }
        }
    }
}

fn run_unit(unit: u32) {
    let first = unit * UNIT;
    let count = min(UNIT, params.element_count - first);
    var offsets: array<vec3<u32>, UNIT>;
    if (!ALL_LINEAR) {
        for (var j = 0u; j < count; j += 1u) {
            offsets[j] = element_offsets(first + j);
        }
    }
    let a = load_inputs(OPERAND_A, A_LINEAR, first, count, offsets);
    var b: array<InElem, UNIT>;
    if (HAS_B) {
        b = load_inputs(OPERAND_B, B_LINEAR, first, count, offsets);
    }
    var results: array<OutElem, UNIT>;
    for (var j = 0u; j < count; j += 1u) {
        results[j] = compute(a[j], b[j]);
    }
    store_outputs(first, count, results, offsets);
}
