// Units of narrow_units.wgsl for an output a quarter as wide as the input (float32 -> uint8, unary): each input chunk
// gives one output word. A unit is one input chunk (UNIT 4): with units of a whole output chunk, four input chunks
// each, a warp's loads would leave gaps of three chunks between invocations. In replicated rows (ROW_GROUP > 1) a
// unit's results are stored to several rows and its stores dominate: there a unit is a whole output chunk
// (UNIT 16), stored whole (see gpuops/plan.py, UNIT_SHAPES).

fn chunk_results(a: vec4<u32>) -> u32 {
    return word_results(a.x, 0u).x | (word_results(a.y, 0u).x << 8u) | (word_results(a.z, 0u).x << 16u)
        | (word_results(a.w, 0u).x << 24u);
}

fn unit_results(first: u32, offsets: vec3<u32>, in_row: bool) -> vec4<u32> {
    var out = vec4<u32>(chunk_results(load_chunk(OPERAND_A, A_LINEAR, 0u, first, offsets, in_row)), 0u, 0u, 0u);
    if (UNIT >= 8u) {  // (8: replicated rows' unit halved for a stepped output)
        out.y = chunk_results(load_chunk(OPERAND_A, A_LINEAR, 1u, first, offsets, in_row));
    }
    if (UNIT == 16u) {
        out.z = chunk_results(load_chunk(OPERAND_A, A_LINEAR, 2u, first, offsets, in_row));
        out.w = chunk_results(load_chunk(OPERAND_A, A_LINEAR, 3u, first, offsets, in_row));
    }
    return out;
}
