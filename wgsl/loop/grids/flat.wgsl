// The FLAT grid (gpuops/plan.py: flat_grid): consecutive units, each found by dividing its index by the sizes
// (units.wgsl: unit_start), the tensor's last partial unit element by element.

// The tensor's last, partial unit, element by element (load_element / store_element come from the storage
// file, loop/narrow.wgsl or loop/wide.wgsl). The result is the lowest lane's. A two-input operator's element is put
// in every lane of its words, so that no lane computes an error case the element does not (an operation that notes
// them, lib/error_notes.wgsl, sees only elements).
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

fn run_workgroup(group: vec3<u32>, groups: vec3<u32>, lane: u32) {
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
