// Storage for 64-bit element types: two u32 words per element, low word first; a 16-byte chunk holds two. Every
// operand of the 64-bit kernels (SIGN, MODULUS_*) has the same type. Every wide kernel: its lanes (what operators
// compute on) and element loads and stores.

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
