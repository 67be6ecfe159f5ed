// TILES (tiles.wgsl) for 64-bit elements: a tile slot is one element, a group one element (UNIT 1), never
// partial: no word holds two elements.

const SLOT_ELEMENTS: u32 = 1u;
const OUT_PER_SLOT: u32 = 1u;

fn load_slot(operand: u32, index: u32) -> InElem {
    return load_element(operand, index);
}

fn slot_element(slot: InElem, lane: u32) -> InElem {
    return slot;
}

// Row by row: a slot is one element.
fn run_tile_work(origin: vec3<u32>, lane: u32, columns: u32, rows: u32) {
    run_tile_rows(origin, lane, columns, rows);
}

fn run_tile_group(origin: vec3<u32>, offsets: vec3<u32>, row: u32, first: u32, columns: u32) {
    let a = input_element(OPERAND_A, A_TILED, origin, offsets, row, first);
    var b = InElem();
    if (HAS_B) {
        b = input_element(OPERAND_B, B_TILED, origin, offsets, row, first);
    }
    store_element(offsets[OPERAND_OUT] + first, compute(a, b));
}
