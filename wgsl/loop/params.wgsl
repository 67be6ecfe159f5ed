// Every kernel: the per-dispatch uniforms and the sizes and strides of the iteration space.
// The generated prelude (gpuops/shaders.py) declares the aliases InElem/OutElem, the constants of the key (RANK,
// UNIT, IN_BITS, OUT_BITS, WORKGROUP_SIZE, the operands' forms, ...), the bindings (one writable view of the
// output) and in_chunk(operand, i) / in_word(operand, i), which read an input's 16-byte chunks and u32 words
// wherever that input is bound. The operation's files (ops/unary.wgsl or ops/binary.wgsl) give HAS_B and
// compute(a, b).

const OPERAND_A: u32 = 0u;
const OPERAND_B: u32 = 1u;
const OPERAND_OUT: u32 = 2u;

// Everything that varies per dispatch and not per shader text (gpuops/plan.py: Uniforms).
struct Params {
    sizes: array<vec4<u32>, 2>,                 // iteration sizes after coalescing, outermost first
    strides: array<array<vec4<u32>, 2>, 3>,     // element strides of a, b and out along each dimension
    base: vec4<u32>,                            // element offset of a, b, out's first element in its binding
    element_count: u32,
    unit_count: u32,                            // ceil(element_count / UNIT)
    row_count: u32,                             // rows of the innermost dimension (element_count / its size)
    plane_count: u32,                           // planes of the two innermost dimensions (row_count / sizes[RANK - 2])
}

@group(0) @binding(0) var<uniform> params: Params;

fn dim_size(d: u32) -> u32 {
    return params.sizes[d / 4u][d % 4u];
}

fn dim_strides(d: u32) -> vec3<u32> {
    return vec3<u32>(params.strides[OPERAND_A][d / 4u][d % 4u],
                     params.strides[OPERAND_B][d / 4u][d % 4u],
                     params.strides[OPERAND_OUT][d / 4u][d % 4u]);
}
