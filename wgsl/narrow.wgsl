// Storage for element types of 8, 16 or 32 bits: u32 words hold 32 / BITS elements each, low lanes first.
// A unit is one 16-byte chunk of the narrowest operand. A linear operand moves as whole vec4<u32> chunks (the
// widest access WGSL has); a strided one element by element through its u32 view.

const IN_PER_WORD: u32 = 32u / IN_BITS;
const OUT_PER_WORD: u32 = 32u / OUT_BITS;
const IN_MASK: u32 = 0xffffffffu >> (32u - IN_BITS);
const OUT_MASK: u32 = 0xffffffffu >> (32u - OUT_BITS);
const IN_CHUNKS: u32 = UNIT * IN_BITS / 128u;  // input chunks per unit (1, 2 or 4)
const OUT_PER_CHUNK: u32 = 4u * OUT_PER_WORD;  // output elements per chunk

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

fn run_elements(first: u32, count: u32) {
    for (var j = 0u; j < count; j += 1u) {
        let offsets = element_offsets(first + j);
        var b = InElem();
        if (HAS_B) {
            b = load_element(OPERAND_B, offsets[OPERAND_B]);
        }
        store_element(offsets[OPERAND_OUT], compute(load_element(OPERAND_A, offsets[OPERAND_A]), b));
    }
}

fn run_full_unit(first: u32) {
    var first_offsets = params.base.xyz;
    var in_row = true;
    if (!ALL_LINEAR) {
        first_offsets = element_offsets(first);
        in_row = unit_in_one_row(first);
    }
    // Linear operands start on a 16-byte boundary (the host checks), so a unit is whole chunks.
    let a_chunk0 = (params.base[OPERAND_A] + first) / (4u * IN_PER_WORD);
    let b_chunk0 = (params.base[OPERAND_B] + first) / (4u * IN_PER_WORD);
    let out_chunk0 = (params.base[OPERAND_OUT] + first) / OUT_PER_CHUNK;
    var out_chunk = vec4<u32>();
    for (var c = 0u; c < IN_CHUNKS; c += 1u) {
        var a_chunk = vec4<u32>();
        var b_chunk = vec4<u32>();
        if (A_LINEAR) {
            a_chunk = in_chunk(OPERAND_A, a_chunk0 + c);
        }
        if (HAS_B && B_LINEAR) {
            b_chunk = in_chunk(OPERAND_B, b_chunk0 + c);
        }
        for (var w = 0u; w < 4u; w += 1u) {
            for (var lane = 0u; lane < IN_PER_WORD; lane += 1u) {
                let j = (c * 4u + w) * IN_PER_WORD + lane;  // the element's place in the unit
                var offsets = first_offsets;
                if (!ALL_LINEAR) {
                    offsets = unit_element_offsets(first, j, first_offsets, in_row);
                }
                var a = (a_chunk[w] >> (lane * IN_BITS)) & IN_MASK;
                if (!A_LINEAR) {
                    a = load_element(OPERAND_A, offsets[OPERAND_A]);
                }
                var b = (b_chunk[w] >> (lane * IN_BITS)) & IN_MASK;
                if (HAS_B && !B_LINEAR) {
                    b = load_element(OPERAND_B, offsets[OPERAND_B]);
                }
                let result = compute(a, b);
                if (OUT_LINEAR) {
                    out_chunk[(j / OUT_PER_WORD) % 4u] |= (result & OUT_MASK) << ((j % OUT_PER_WORD) * OUT_BITS);
                    if ((j + 1u) % OUT_PER_CHUNK == 0u) {
                        out_chunks[out_chunk0 + j / OUT_PER_CHUNK] = out_chunk;
                        out_chunk = vec4<u32>();
                    }
                } else {
                    store_element(offsets[OPERAND_OUT], result);
                }
            }
        }
    }
}
