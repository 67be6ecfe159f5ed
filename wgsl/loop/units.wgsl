// Kernels that work in units (every grid but TILES): a unit is UNIT consecutive elements of the iteration space,
// moved whole where its memory is contiguous (the storage file, narrow_units.wgsl or wide.wgsl, and the output's
// store) and element by element elsewhere. Here: where a unit's elements lie.

const ALL_LINEAR: bool = A_LINEAR && B_LINEAR && OUT_LINEAR;

// Element offsets of a, b and out for the element at row-major position `index` of the iteration space.
fn element_offsets(index: u32) -> vec3<u32> {
    return unit_start(index).offsets;
}

struct UnitStart {
    offsets: vec3<u32>,  // of a, b and out
    in_row: bool,        // the unit's UNIT elements lie in one row of the innermost dimension
}

// Offsets of the element at `index`, and whether the unit starting there stays in one innermost row. The
// innermost coordinate comes out of the same division, so a strided unit costs one division per dimension.
fn unit_start(index: u32) -> UnitStart {
    if (ALL_LINEAR) {
        return UnitStart(params.base.xyz + vec3<u32>(index), true);
    }
    var rest = index;
    var offsets = params.base.xyz;
    var inner = 0u;
    for (var d = RANK - 1u; d > 0u; d -= 1u) {
        let size = dim_size(d);
        let quotient = rest / size;
        let coordinate = rest - quotient * size;
        if (d == RANK - 1u) {
            inner = coordinate;
        }
        offsets += coordinate * dim_strides(d);
        rest = quotient;
    }
    if (RANK == 1u) {
        inner = rest;
    }
    return UnitStart(offsets + rest * dim_strides(0u), inner + UNIT <= dim_size(RANK - 1u));
}

// Offsets of element first + j of a unit: one step along the innermost dimension while the unit stays in one
// row of it (`in_row`), a full decomposition otherwise.
fn unit_element_offsets(first: u32, j: u32, first_offsets: vec3<u32>, in_row: bool) -> vec3<u32> {
    if (in_row) {
        return first_offsets + j * dim_strides(RANK - 1u);
    }
    return element_offsets(first + j);
}

// A strided operand whose unit lies in one row, contiguous and aligned to the unit, still moves as whole chunks
// (a broadcast operand's rows, a padded layout's rows).
fn unit_is_chunk(operand: u32, first_offsets: vec3<u32>, in_row: bool) -> bool {
    return in_row && dim_strides(RANK - 1u)[operand] == 1u && first_offsets[operand] % UNIT == 0u;
}

// Every unit of the operand is whole chunks (or words) at its offset: linear, or rows of whole aligned units
// (plan.Form.CHUNK_ROWS, checked on the host). A constant, so that kernels where it holds keep no gather or scatter
// path: unused code still takes registers from every invocation.
fn units_whole(operand: u32, linear: bool) -> bool {
    return linear || (operand == OPERAND_A && A_CHUNK_ROWS) || (operand == OPERAND_B && B_CHUNK_ROWS)
        || (operand == OPERAND_OUT && OUT_CHUNK_ROWS);
}

// The unit of elements first .. first + UNIT - 1, whose offsets and row are `start` (unit_results and
// store_unit come from the storage and store files).
fn run_full_unit(first: u32, start: UnitStart) {
    store_unit(first, start, unit_results(first, start.offsets, start.in_row));
}
