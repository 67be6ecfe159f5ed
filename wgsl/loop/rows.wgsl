// The row grids (ROWS, REPLICATED_ROWS, DIVISOR_ROWS, DIVISOR_ROWS_LOOPED; gpuops/plan.py: rows_grid): x counts
// blocks of one row of the innermost dimension, WORKGROUP_SIZE * UNITS_PER_INVOCATION units each, y and z count
// groups of ROW_GROUP rows. A unit's offsets are then its row's plus a step along the row, with no division per
// unit (in a broadcast operand's kernel, which moves little memory, that division would dominate).

// Offsets of the first element of row `row` of the innermost dimension (rows counted in row-major order).
fn row_offsets(row: u32) -> vec3<u32> {
    var rest = row;
    var offsets = params.base.xyz;
    for (var d = RANK - 1u; d > 1u; d -= 1u) {  // dimensions RANK - 2 down to 1
        let size = dim_size(d - 1u);
        let quotient = rest / size;
        offsets += (rest - quotient * size) * dim_strides(d - 1u);
        rest = quotient;
    }
    return offsets + rest * dim_strides(0u);
}

// The first row of workgroup `group`'s group of rows.
fn group_first_row(group: vec3<u32>, groups: vec3<u32>) -> u32 {
    return (group.z * groups.y + group.y) * ROW_GROUP;
}

// The column (element within its row) where the invocation's unit i starts: consecutive invocations take
// consecutive units, so every memory access of a warp is coalesced.
fn row_unit_column(group: vec3<u32>, lane: u32, i: u32) -> u32 {
    return (group.x * (WORKGROUP_SIZE * UNITS_PER_INVOCATION) + lane + i * WORKGROUP_SIZE) * UNIT;
}
