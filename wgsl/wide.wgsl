// Storage for 64-bit element types: two u32 words per element, low word first; a 16-byte chunk holds two.
// Every operand of the 64-bit kernels (SIGN, MODULUS_*) has the same type, and a unit is one chunk.

// An element is one lane (see narrow.wgsl): a lane predicate gives (1, 0) where it holds.
const LANES: u32 = 1u;
const LANE_ONES: vec2<u32> = vec2<u32>(1u, 0u);

fn lanes_put(flags: vec2<u32>, value: vec2<u32>) -> vec2<u32> {
    return select(vec2<u32>(), value, flags.x == 1u);
}

fn load_element(operand: u32, offset: u32) -> InElem {
    return vec2<u32>(in_word(operand, 2u * offset), in_word(operand, 2u * offset + 1u));
}

fn store_element(offset: u32, value: OutElem) {
    out_store_word(2u * offset, value.x);
    out_store_word(2u * offset + 1u, value.y);
}

fn load_unit(operand: u32, linear: bool, offsets0: vec3<u32>, offsets1: vec3<u32>, in_row: bool) -> vec4<u32> {
    if (units_whole(operand, linear) || unit_is_chunk(operand, offsets0, in_row)) {
        return in_chunk(operand, offsets0[operand] / 2u);
    }
    return vec4<u32>(load_element(operand, offsets0[operand]), load_element(operand, offsets1[operand]));
}

// The results of the unit of elements first .. first + UNIT - 1 whose first offsets are `offsets0`: one chunk.
fn unit_results(first: u32, offsets0: vec3<u32>, in_row: bool) -> vec4<u32> {
    let offsets1 = unit_element_offsets(first, 1u, offsets0, in_row);
    let a = load_unit(OPERAND_A, A_LINEAR, offsets0, offsets1, in_row);
    var b = vec4<u32>();
    if (HAS_B) {
        b = load_unit(OPERAND_B, B_LINEAR, offsets0, offsets1, in_row);
    }
    return unit_results_of(a, b);
}

// An operand's unit, in a row (DIVISOR_ROWS, binary.wgsl).
fn unit_input(operand: u32, linear: bool, first: u32, offsets0: vec3<u32>) -> vec4<u32> {
    return load_unit(operand, linear, offsets0, unit_element_offsets(first, 1u, offsets0, true), true);
}

// The unit's results from its input words (what load_unit gives).
fn unit_results_of(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(compute(a.xy, b.xy), compute(a.zw, b.zw));
}

// The unit's results `out` to its place (offsets and row `start`).
fn store_unit(first: u32, start: UnitStart, out: vec4<u32>) {
    let offsets0 = start.offsets;
    if (units_whole(OPERAND_OUT, OUT_LINEAR) || unit_is_chunk(OPERAND_OUT, offsets0, start.in_row)) {
        out_store_chunk(offsets0[OPERAND_OUT] / 2u, out);
    } else {
        store_element(offsets0[OPERAND_OUT], out.xy);
        store_element(unit_element_offsets(first, 1u, offsets0, start.in_row)[OPERAND_OUT], out.zw);
    }
}
