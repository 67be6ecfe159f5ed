// The DIVISOR_ROWS grid (loop/rows.wgsl; gpuops/kernel.py: Grid.DIVISOR_ROWS): b alone is the same on every row
// (zero strides outside its rows), so an invocation loads its unit of b once and divides the unit's column in the
// group's four rows (ROW_GROUP, 4 wherever DIVISOR_ROWS is set) by it. The four rows' dividends are loaded before
// any is divided: with b read from the cache, a warp that loaded one row's unit at a time kept too few loads in
// flight to cover the memory's latency (the operator row's TypePolicy.divisor_rows). A kernel whose operation
// keeps a table in workgroup memory prepares it after the loads (divisor_rows_prepared.wgsl), so that the table's
// fill and its barrier run while the loads are in flight. Every invocation reaches that barrier: a lane past its
// row's end loads the row's last unit and stores nothing. A partial last group takes its last row again in place
// of the rows it lacks: the same results to the same place, stored by the one invocation that owns them. Those
// stores are not skipped, because a branch around them lets the shader compiler move the loads after the first
// rows' work. The work: divisor_rows_plain.wgsl or divisor_rows_prepared.wgsl.

// The group's four rows (the last row in place of those past the tensor's end), where each starts, and the rows'
// size and step.
struct DivisorRows {
    row_size: u32,
    step: vec3<u32>,
    rows: vec4<u32>,
    offsets0: vec3<u32>,
    offsets1: vec3<u32>,
    offsets2: vec3<u32>,
    offsets3: vec3<u32>,
}

fn divisor_rows(first_row: u32) -> DivisorRows {
    let last = params.row_count - 1u;
    let rows = min(vec4<u32>(first_row) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(last));
    return DivisorRows(dim_size(RANK - 1u), dim_strides(RANK - 1u), rows, row_offsets(rows.x), row_offsets(rows.y),
                       row_offsets(rows.z), row_offsets(rows.w));
}

// The invocation's unit i in each of the four rows, its inputs loaded: b's once, a's of every row.
struct DivisorUnits {
    wanted: bool,  // the unit's column lies in the row (else the row's last unit was loaded, and nothing is stored)
    firsts: vec4<u32>,
    s0: UnitStart,
    s1: UnitStart,
    s2: UnitStart,
    s3: UnitStart,
    b: vec4<u32>,
    a0: vec4<u32>,
    a1: vec4<u32>,
    a2: vec4<u32>,
    a3: vec4<u32>,
}

fn load_divisor_units(g: DivisorRows, group: vec3<u32>, lane: u32, i: u32) -> DivisorUnits {
    let column_wanted = row_unit_column(group, lane, i);
    let column = min(column_wanted, g.row_size - UNIT);
    let firsts = g.rows * g.row_size + vec4<u32>(column);
    let s0 = UnitStart(g.offsets0 + column * g.step, true);
    let s1 = UnitStart(g.offsets1 + column * g.step, true);
    let s2 = UnitStart(g.offsets2 + column * g.step, true);
    let s3 = UnitStart(g.offsets3 + column * g.step, true);
    let b = unit_input(OPERAND_B, B_LINEAR, firsts.x, s0.offsets);
    let a0 = unit_input(OPERAND_A, A_LINEAR, firsts.x, s0.offsets);
    let a1 = unit_input(OPERAND_A, A_LINEAR, firsts.y, s1.offsets);
    let a2 = unit_input(OPERAND_A, A_LINEAR, firsts.z, s2.offsets);
    let a3 = unit_input(OPERAND_A, A_LINEAR, firsts.w, s3.offsets);
    return DivisorUnits(column_wanted < g.row_size, firsts, s0, s1, s2, s3, b, a0, a1, a2, a3);
}

fn store_divisor_units(u: DivisorUnits) {
    if (u.wanted) {
        store_unit(u.firsts.x, u.s0, unit_results_of(u.a0, u.b));
        store_unit(u.firsts.y, u.s1, unit_results_of(u.a1, u.b));
        store_unit(u.firsts.z, u.s2, unit_results_of(u.a2, u.b));
        store_unit(u.firsts.w, u.s3, unit_results_of(u.a3, u.b));
    }
}
