// The TILES grid (gpuops/plan.py: Grid.TILES, TilePlane): an input whose fastest dimension is not the output's
// (a transposed matrix, NCHW read into NHWC). Read where it lies, a warp's loads of it would each touch a line of
// their own; here the planner puts that input's fast dimension (stride 1) at RANK - 2 and the output's rows
// (stride 1) at RANK - 1, and a workgroup takes a tile of that plane: TILE_DEPTH elements along RANK - 2 by
// TILE_WIDTH along RANK - 1, at one index of the outer dimensions. Each tiled input's part of the tile is read into
// workgroup memory along that input's own rows (consecutive invocations, consecutive words); after a barrier, each
// invocation takes a group of UNIT consecutive elements of one output row (whole output words), picks its tiled
// inputs' elements out of the tile, reads the other inputs where they lie, and stores whole words, consecutive
// invocations consecutive words. A tile's edges (rows and columns past the tensor's end) run the same code with
// the missing lanes masked.
//
// The prelude adds TILE_GROUPS (groups across a tile), TILE_COLUMN_SLOTS (slots along a tile column), A_TILED /
// B_TILED and the tiles' sizes; tiles_narrow.wgsl or tiles_wide.wgsl give the storage's slots (SLOT_ELEMENTS,
// OUT_PER_SLOT, load_slot, slot_element), a group's work (run_tile_group) and how the rows are walked
// (run_tile_work: run_tile_rows below, or for 8/16-bit inputs blocks of rows); tiles_plain.wgsl or
// tiles_prepared.wgsl the workgroup's work (run_workgroup).

const TILE_WIDTH: u32 = TILE_GROUPS * UNIT;
const TILE_DEPTH: u32 = TILE_COLUMN_SLOTS * SLOT_ELEMENTS;
// One slot more per column: a column that starts inside a word spans one word more; and an odd stride puts a
// column's slots and the neighbouring columns' in different memory banks.
const TILE_STRIDE: u32 = TILE_COLUMN_SLOTS + 1u;
const TILE_ROWS_AT_ONCE: u32 = WORKGROUP_SIZE / TILE_GROUPS;

var<workgroup> tile_a: array<InElem, A_TILE_SLOTS>;
var<workgroup> tile_b: array<InElem, B_TILE_SLOTS>;

fn tile_slot(operand: u32, index: u32) -> InElem {
    if (operand == OPERAND_B) {
        return tile_b[index];
    }
    return tile_a[index];
}

fn set_tile_slot(operand: u32, index: u32, value: InElem) {
    if (operand == OPERAND_B) {
        tile_b[index] = value;
    } else {
        tile_a[index] = value;
    }
}

// First slot of tile column c. Columns lie by their place in a group first: a warp's invocations take consecutive
// groups, so each of their reads takes one column of consecutive groups, whose slots are TILE_STRIDE apart.
fn tile_column(c: u32) -> u32 {
    return ((c % UNIT) * TILE_GROUPS + c / UNIT) * TILE_STRIDE;
}

// Slot k of tile column c, whose first element lies at `start`: the k-th slot that holds one of the column's
// `rows` elements, if there is one (no slot past the tensor is read).
fn fill_slot(operand: u32, start: u32, c: u32, k: u32, columns: u32, rows: u32) {
    let first = start / SLOT_ELEMENTS;
    if (c < columns && first + k <= (start + rows - 1u) / SLOT_ELEMENTS) {
        set_tile_slot(operand, tile_column(c) + k, load_slot(operand, first + k));
    }
}

// The tiled inputs' parts of the tile whose first elements lie at `origin`: column by column, consecutive
// invocations taking consecutive slots of a column, each slot tested for holding an element of the tensor
// (fill_slot), but in a full tile (fill_full_tiles).
fn fill_tiles(origin: vec3<u32>, lane: u32, columns: u32, rows: u32) {
    if (columns == TILE_WIDTH && rows == TILE_DEPTH && FULL_FILL_STEPS * WORKGROUP_SIZE == FULL_FILL_SLOTS) {
        fill_full_tiles(origin, lane);
    } else {
        for (var i = lane; i < FULL_FILL_SLOTS; i += WORKGROUP_SIZE) {
            let c = i / TILE_COLUMN_SLOTS;
            let k = i - c * TILE_COLUMN_SLOTS;
            if (A_TILED) {
                fill_slot(OPERAND_A, origin[OPERAND_A] + c * dim_strides(RANK - 1u)[OPERAND_A], c, k, columns, rows);
            }
            if (B_TILED) {
                fill_slot(OPERAND_B, origin[OPERAND_B] + c * dim_strides(RANK - 1u)[OPERAND_B], c, k, columns, rows);
            }
        }
    }
    if (SLOT_ELEMENTS > 1u) {  // the columns that start inside a word
        for (var c = lane; c < TILE_WIDTH; c += WORKGROUP_SIZE) {
            if (A_TILED) {
                fill_slot(OPERAND_A, origin[OPERAND_A] + c * dim_strides(RANK - 1u)[OPERAND_A], c, TILE_COLUMN_SLOTS,
                          columns, rows);
            }
            if (B_TILED) {
                fill_slot(OPERAND_B, origin[OPERAND_B] + c * dim_strides(RANK - 1u)[OPERAND_B], c, TILE_COLUMN_SLOTS,
                          columns, rows);
            }
        }
    }
}

const FULL_FILL_SLOTS: u32 = TILE_WIDTH * TILE_COLUMN_SLOTS;  // slots of each tiled input in a full tile
const FULL_FILL_STEPS: u32 = max(FULL_FILL_SLOTS / WORKGROUP_SIZE, 1u);  // an invocation's share of them

// A full tile (every column present, TILE_DEPTH rows): slots 0 .. TILE_COLUMN_SLOTS - 1 of every column hold
// elements of it, so they are read without fill_slot's test. A column of TILE_DEPTH = TILE_COLUMN_SLOTS *
// SLOT_ELEMENTS elements from start = q * SLOT_ELEMENTS + r (r below SLOT_ELEMENTS) ends in slot (start +
// TILE_DEPTH - 1) / SLOT_ELEMENTS = q + TILE_COLUMN_SLOTS - 1 (r = 0) or q + TILE_COLUMN_SLOTS (r > 0), never
// before slot q + TILE_COLUMN_SLOTS - 1. Every load of the invocation, both inputs', is issued before any slot is
// stored into the tiles, so that they are in flight together (one memory round trip per tile): with loads and
// stores in one loop, the compiler waited for some loads before issuing the next.
fn fill_full_tiles(origin: vec3<u32>, lane: u32) {
    let steps = dim_strides(RANK - 1u);
    var a_slots: array<InElem, FULL_FILL_STEPS>;
    var b_slots: array<InElem, FULL_FILL_STEPS>;
    for (var s = 0u; s < FULL_FILL_STEPS; s += 1u) {
        let c = (lane + s * WORKGROUP_SIZE) / TILE_COLUMN_SLOTS;
        let k = (lane + s * WORKGROUP_SIZE) % TILE_COLUMN_SLOTS;
        if (A_TILED) {
            a_slots[s] = load_slot(OPERAND_A, (origin[OPERAND_A] + c * steps[OPERAND_A]) / SLOT_ELEMENTS + k);
        }
        if (B_TILED) {
            b_slots[s] = load_slot(OPERAND_B, (origin[OPERAND_B] + c * steps[OPERAND_B]) / SLOT_ELEMENTS + k);
        }
    }
    for (var s = 0u; s < FULL_FILL_STEPS; s += 1u) {
        let c = (lane + s * WORKGROUP_SIZE) / TILE_COLUMN_SLOTS;
        let k = (lane + s * WORKGROUP_SIZE) % TILE_COLUMN_SLOTS;
        if (A_TILED) {
            tile_a[tile_column(c) + k] = a_slots[s];
        }
        if (B_TILED) {
            tile_b[tile_column(c) + k] = b_slots[s];
        }
    }
}

// Element `row` (counted from the tile's first) of tile column c of a tiled input, whose column starts at `start`.
fn tile_element(operand: u32, start: u32, c: u32, row: u32) -> InElem {
    let e = start % SLOT_ELEMENTS + row;
    return slot_element(tile_slot(operand, tile_column(c) + e / SLOT_ELEMENTS), e % SLOT_ELEMENTS);
}

// An input's element at tile row `row` (whose offsets are `offsets`) and tile column c: out of the tile, or read
// where it lies (an input along the output's rows, broadcast, or read across them on another dimension).
fn input_element(operand: u32, tiled: bool, origin: vec3<u32>, offsets: vec3<u32>, row: u32, c: u32) -> InElem {
    let step = dim_strides(RANK - 1u)[operand];
    if (tiled) {
        return tile_element(operand, origin[operand] + c * step, c, row);
    }
    return load_element(operand, offsets[operand] + c * step);
}

// The tile's rows, TILE_ROWS_AT_ONCE at a time, each TILE_GROUPS invocations across. An output row that starts
// inside a word (8/16-bit outputs in rows of other pitches) has its groups follow the output's words: its first
// group begins before the tile's first column (`first` wraps below zero) and has only its last lanes.
fn run_tile_rows(origin: vec3<u32>, lane: u32, columns: u32, rows: u32) {
    let first_row = lane / TILE_GROUPS;
    if (first_row >= TILE_ROWS_AT_ONCE) {
        return;  // (a workgroup size that is not a multiple of TILE_GROUPS)
    }
    let down = dim_strides(RANK - 2u);
    for (var row = first_row; row < rows; row += TILE_ROWS_AT_ONCE) {
        let offsets = origin + row * down;
        let skew = offsets[OPERAND_OUT] % OUT_PER_SLOT;
        for (var g = lane % TILE_GROUPS; g * UNIT < skew + columns; g += TILE_GROUPS) {
            run_tile_group(origin, offsets, row, g * UNIT - skew, columns);
        }
    }
}

// Offsets of the first element of the plane at index `outer` of the dimensions outside it (0 .. RANK - 3): what
// loop/rows.wgsl's row_offsets does over one dimension more (row kernels do not include this file).
fn plane_offsets(outer: u32) -> vec3<u32> {
    var rest = outer;
    var offsets = params.base.xyz;
    for (var d = RANK - 2u; d > 1u; d -= 1u) {  // dimensions RANK - 3 down to 1
        let size = dim_size(d - 1u);
        let quotient = rest / size;
        offsets += (rest - quotient * size) * dim_strides(d - 1u);
        rest = quotient;
    }
    if (RANK > 2u) {
        offsets += rest * dim_strides(0u);
    }
    return offsets;
}

// A tile: where its first elements lie, and how many of its columns and rows the tensor has.
struct Tile {
    origin: vec3<u32>,
    columns: u32,
    rows: u32,
}

// The tile at `tile` (x: its column of tiles, y: its row of tiles, z: its plane).
fn tile_at(tile: vec3<u32>) -> Tile {
    let first_column = tile.x * TILE_WIDTH;
    let first_row = tile.y * TILE_DEPTH;
    let columns = min(TILE_WIDTH, dim_size(RANK - 1u) - first_column);
    let rows = min(TILE_DEPTH, dim_size(RANK - 2u) - first_row);
    let origin = plane_offsets(tile.z) + first_row * dim_strides(RANK - 2u) + first_column * dim_strides(RANK - 1u);
    return Tile(origin, columns, rows);
}

// The tile at `tile`: its inputs read into workgroup memory, then, once every invocation's reads are there, its
// groups.
fn run_tile(tile: vec3<u32>, lane: u32) {
    let t = tile_at(tile);
    fill_tiles(t.origin, lane, t.columns, t.rows);
    workgroupBarrier();
    run_tile_work(t.origin, lane, t.columns, t.rows);
}

// The grid (gpuops/plan.py: tiles_key_and_grid) is x = columns of tiles, y = rows of tiles, z = planes (the index
// of the outer dimensions), so a tile's position takes no division by a size known only at run time. A grid
// dimension holds at most 65535 workgroups: past that (TILE_LOOPS), a workgroup takes every groups-th tile after
// its first. Only kernels that need them have the loops: present but never run, they still made the compiled
// kernel slower. Their bounds are uniform, so their barriers are in uniform control flow.
fn run_later_tiles(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
    if (!TILE_LOOPS) {
        return;
    }
    let tiles = vec3<u32>((dim_size(RANK - 1u) + TILE_WIDTH - 1u) / TILE_WIDTH,
                          (dim_size(RANK - 2u) + TILE_DEPTH - 1u) / TILE_DEPTH, params.plane_count);
    for (var outer = group.z; outer < tiles.z; outer += groups.z) {
        for (var tile_row = group.y; tile_row < tiles.y; tile_row += groups.y) {
            for (var tile_column = group.x; tile_column < tiles.x; tile_column += groups.x) {
                let tile = vec3<u32>(tile_column, tile_row, outer);
                if (any(tile != group)) {
                    workgroupBarrier();  // every slot of the previous tile read before this tile's fill
                    run_tile(tile, lane);
                }
            }
        }
    }
}
