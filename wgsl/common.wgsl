// Shared by every kernel: the per-dispatch uniforms, element addressing and the entry point.
// The generated prelude (gpuops/shaders.py) declares the aliases InElem/OutElem, the constants (RANK, UNIT,
// IN_BITS, OUT_BITS, *_LINEAR, ROWS, WORKGROUP_SIZE, UNITS_PER_INVOCATION, ...), the bindings (one writable view
// of the output, out_words) and in_chunk(operand, i) / in_word(operand, i), which read an input's 16-byte
// chunks and u32 words wherever that input is bound.

const OPERAND_A: u32 = 0u;
const OPERAND_B: u32 = 1u;
const OPERAND_OUT: u32 = 2u;
const ALL_LINEAR: bool = A_LINEAR && B_LINEAR && OUT_LINEAR;

// Everything that varies per dispatch and not per shader text.
struct Params {
    sizes: array<vec4<u32>, 2>,                 // iteration sizes after coalescing, outermost first
    strides: array<array<vec4<u32>, 2>, 3>,     // element strides of a, b and out along each dimension
    base: vec4<u32>,                            // element offset of a, b, out's first element in its binding
    element_count: u32,
    unit_count: u32,                            // ceil(element_count / UNIT)
    row_count: u32,                             // ROWS: rows of the innermost dimension (element_count / its size)
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

// The tensor's last, partial unit, element by element (load_element / store_element come from the storage
// file, narrow.wgsl or wide.wgsl). The result is the lowest lane's. A two-input operator's element is put in every
// lane of its words, so that no lane computes an error (lib/error_flags.wgsl) the element does not.
fn run_elements(first: u32, count: u32) {
    for (var j = 0u; j < count; j += 1u) {
        let offsets = element_offsets(first + j);
        var a = load_element(OPERAND_A, offsets[OPERAND_A]);
        var b = InElem();
        if (HAS_B) {
            a = lanes_put(LANE_ONES, a);
            b = lanes_put(LANE_ONES, load_element(OPERAND_B, offsets[OPERAND_B]));
        }
        store_element(offsets[OPERAND_OUT], compute(a, b));
    }
}

fn run_unit(unit: u32) {
    let first = unit * UNIT;
    if (params.element_count - first >= UNIT) {  // (first + UNIT could pass 2^32)
        run_full_unit(first, unit_start(first));
    } else {
        run_elements(first, params.element_count - first);  // the tensor's last, partial unit
    }
}

// ROWS: offsets of the first element of row `row` of the innermost dimension (rows counted in row-major order).
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

// The ROWS grid (gpuops/plan.py: rows_grid): y and z count groups of ROW_GROUP rows, x counts blocks of one
// row, WORKGROUP_SIZE * UNITS_PER_INVOCATION units each. The first row of workgroup `group`'s group of rows:
fn group_first_row(group: vec3<u32>, groups: vec3<u32>) -> u32 {
    return (group.z * groups.y + group.y) * ROW_GROUP;
}

// The column (element within its row) where the invocation's unit i starts: consecutive invocations take
// consecutive units, so every memory access of a warp is coalesced.
fn row_unit_column(group: vec3<u32>, lane: u32, i: u32) -> u32 {
    return (group.x * (WORKGROUP_SIZE * UNITS_PER_INVOCATION) + lane + i * WORKGROUP_SIZE) * UNIT;
}

// ROWS kernels (strided layouts whose innermost dimension holds whole units, at least a workgroup's worth): the
// grid's x counts blocks of one row, y and z count groups of ROW_GROUP rows. A unit's offsets are then its row's
// plus a step along the row, with no division per unit (in a broadcast operand's kernel, which moves little
// memory, that division would dominate). Where every input is the same on every row (ROW_GROUP > 1, see
// device._row_group), a unit's results are computed once and stored to each row of the group. (Where b alone is,
// DIVISOR_ROWS, the entry point runs binary.wgsl's run_divisor_rows on the same grid instead: b's unit loaded once
// and the group's rows divided by it, their dividends loaded first, or for float16 the rows in a loop.)
fn run_row_units(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    let first_row = group_first_row(group, groups);
    if (first_row >= params.row_count) {
        return;  // the grid's surplus
    }
    let row_size = dim_size(RANK - 1u);
    let step = dim_strides(RANK - 1u);
    let offsets = row_offsets(first_row);
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        let column = row_unit_column(group, lane, i);
        if (column >= row_size) {
            return;
        }
        let first = first_row * row_size + column;
        if (ROW_GROUP == 1u) {
            run_full_unit(first, UnitStart(offsets + column * step, true));
            continue;
        }
        let out = unit_results(first, offsets + column * step, true);
        for (var r = 0u; r < ROW_GROUP; r += 1u) {
            let row = first_row + r;
            if (row >= params.row_count) {
                break;  // the last group's surplus
            }
            store_unit(row * row_size + column, UnitStart(row_offsets(row) + column * step, true), out);
        }
    }
}

// The unit of elements first .. first + UNIT - 1, whose offsets and row are `start` (unit_results and
// store_unit come from the storage file, narrow.wgsl or wide.wgsl).
fn run_full_unit(first: u32, start: UnitStart) {
    store_unit(first, start, unit_results(first, start.offsets, start.in_row));
}

// The entry point: the invocation's share of the grid, then the errors it noted reported once (the kernel's
// lib/error_flags.wgsl or lib/no_error_flags.wgsl).
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    run_grid(group, groups, lane);
    finish_invocation();
}

// (After the entry point: a kernel with an entry point of its own leaves both out, gpuops/shaders.py.)
fn run_grid(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    if (DIVISOR_ROWS) {
        run_divisor_rows(group, groups, lane);  // binary.wgsl: prepares the workgroup after its loads
        return;
    }
    prepare_workgroup(lane);  // lib/divide_*.wgsl: tables in workgroup memory, if the kernel has any
    if (ROWS) {
        run_row_units(group, groups, lane);
        return;
    }
    // A 2-D grid, because one dimension holds at most 65535 workgroups.
    let block = group.y * groups.x + group.x;
    let first_unit = block * (WORKGROUP_SIZE * UNITS_PER_INVOCATION) + lane;
    // Consecutive invocations take consecutive units, so every memory access of a warp is coalesced.
    for (var i = 0u; i < UNITS_PER_INVOCATION; i += 1u) {
        let unit = first_unit + i * WORKGROUP_SIZE;
        if (unit >= params.unit_count) {
            return;
        }
        run_unit(unit);
    }
}
