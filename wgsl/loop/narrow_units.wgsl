// Units (loop/units.wgsl) of 8, 16 or 32-bit elements: a unit is the UNIT elements of one 16-byte chunk of output
// (one word for float32 -> uint8; half a chunk's for a stepped output, whose elements are two apart), so that each
// store of a warp is one contiguous run: stores that leave gaps between invocations cost far more than loads that do
// (the loads' gaps come from the L1 cache). Its input is UNIT / IN_PER_WORD words; units/*.wgsl (one file per ratio
// of the widths, chosen by gpuops/shaders.py) turn them into the unit's output words, and stores/*.wgsl (one per
// output store) put those in place. Words are handled with constant swizzles (.x .y .z .w) so no vector is indexed
// dynamically (that would push it to local memory on some GPUs). A linear operand, or one in rows of whole aligned
// units (chunk rows), moves as whole vec4<u32> chunks; a strided one as whole chunks where a unit happens to lie in
// one, else gathered (or scattered) element by element.

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
