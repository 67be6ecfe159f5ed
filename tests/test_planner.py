"""The planner on the CPU: every planned dispatch, walked by the footprint model (gpuops/footprint.py), writes
exactly the output's element bytes, each from its own element's inputs, stays inside its bound views and never
rewrites without atomics a byte another invocation writes. No GPU: thousands of layouts a run
(GPUOPS_PLANNER_EXAMPLES raises the count)."""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpuops
from gpuops import DataType, IsNanDesc, TensorDesc
from gpuops.footprint import expected_values, footprint_of
from gpuops.operators import spec_by_name
from gpuops.plan import (BoundRegion, DispatchPlan, Form, Grid, Operand, OutputStore, Placement, PlanLimits,
                         operands_of, plan_dispatches, tile_shape)
from gpuops.shaders import shader_files

from .dml import make_desc
from .layout_strategies import LayoutCase, arrangement, layout_cases, transposed_cases

PLANNER_EXAMPLES = int(os.environ.get("GPUOPS_PLANNER_EXAMPLES", "3000"))


def plan_case(case: LayoutCase, alignment: int = 256) -> tuple[object, tuple[DispatchPlan, ...], dict, dict]:
    """(desc, plans, each field's binding offset, each operand's buffer size) of a drawn case."""
    desc = make_desc(case.operator, case.mode, case.in_type, case.out_type, case.sizes, case.strides)
    spec = spec_by_name(case.operator)
    tensors = {name: getattr(desc, name) for name in spec.tensor_fields}
    placed = arrangement(case, tensors)
    regions = tuple(BoundRegion(placed.buffer_of[name], placed.buffer_sizes[placed.buffer_of[name]],
                                placed.offset_of[name]) for name in spec.tensor_fields)
    policy = case.policy
    # (a binding limit leaves room for the alignment slack, as every adapter's does)
    binding_size = (policy.binding_size_limit or 2**27) + alignment + 16
    limits = PlanLimits(binding_size=binding_size, storage_offset_alignment=alignment,
                        workgroups_per_dimension=policy.max_workgroups_per_dimension or 65535,
                        workgroup_size=policy.workgroup_size, units_per_invocation=policy.units_per_invocation,
                        pack_rounds_to_nearest=bool(policy.pack_rounds_to_nearest))
    plans = plan_dispatches(spec, desc, tuple(tensors.values()), regions, limits)
    operands = operands_of(spec)
    buffer_sizes = {op: region.buffer_size for op, region in zip(operands, regions)}
    return desc, plans, {op: placed.offset_of[name] for op, name in zip(operands, spec.tensor_fields)}, buffer_sizes


def check_plans(desc, plans, offsets, buffer_sizes) -> None:
    spec = gpuops.operators.spec_of(desc)
    operands = operands_of(spec)
    tensors = tuple(getattr(desc, name) for name in spec.tensor_fields)
    touched = footprint_of(plans, operands, buffer_sizes)
    assert not touched.violations, touched.violations[:5]
    expected = expected_values(tensors, offsets, operands)
    outside = sorted(set(touched.values) - set(expected))
    assert not outside, f"bytes outside the output's elements written, e.g. {outside[:8]}"
    missing = sorted(set(expected) - set(touched.values))
    assert not missing, f"output bytes never written, e.g. {missing[:8]}"
    wrong = [b for b in expected if touched.values[b] != expected[b]]
    assert not wrong, f"bytes given another element's result, e.g. {[(b, touched.values[b], expected[b]) for b in wrong[:3]]}"


@settings(max_examples=PLANNER_EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
          deadline=None)
@given(layout_cases() | layout_cases(rows=True) | transposed_cases(), st.sampled_from([256, 32]))
def test_every_plan_writes_exactly_its_output(case, alignment):
    desc = make_desc(case.operator, case.mode, case.in_type, case.out_type, case.sizes, case.strides)
    try:
        gpuops.validate(desc)
    except gpuops.ValidationError:
        assume(False)
    check_plans(*plan_case(case, alignment))


def test_broadcast_row_into_a_stepped_output_with_an_unaligned_pitch():
    """IS_NAN of one float32 row broadcast over six rows, into every second byte of rows 8196 bytes apart: replicated
    rows' units are a whole chunk of output (16 elements), so a stepped store would need each row to start on a
    chunk, and 8196 is not a multiple of 16. The plan must not step (it once stepped with the unit of another grid,
    writing whole chunks at the wrong place)."""
    inp = TensorDesc(DataType.FLOAT32, (6, 4096), (0, 1))
    out = TensorDesc(DataType.UINT8, (6, 4096), (8196, 2))
    desc = IsNanDesc(inp, out)
    spec = spec_by_name("ELEMENT_WISE_IS_NAN")
    regions = (BoundRegion(0, inp.total_tensor_size_in_bytes, 0), BoundRegion(1, out.total_tensor_size_in_bytes + 64, 0))
    limits = PlanLimits(binding_size=2**27, storage_offset_alignment=256, workgroups_per_dimension=65535)
    plans = plan_dispatches(spec, desc, (inp, out), regions, limits)
    assert [p.key.grid for p in plans] == [Grid.REPLICATED_ROWS]
    assert plans[0].key.output_store is not OutputStore.STEPPED
    check_plans(desc, plans, {op: 0 for op in operands_of(spec)}, {op: r.buffer_size for op, r in
                                                                  zip(operands_of(spec), regions)})


def _key(operator, in_type, out_type, sizes, strides=None, **limits):
    desc = make_desc(operator, None, in_type, out_type, sizes, strides)
    spec = spec_by_name(operator)
    tensors = tuple(getattr(desc, name) for name in spec.tensor_fields)
    regions = tuple(BoundRegion(i, t.total_tensor_size_in_bytes + 64, 0) for i, t in enumerate(tensors))
    limits = PlanLimits(**{"binding_size": 2**27, "storage_offset_alignment": 256,
                           "workgroups_per_dimension": 65535, **limits})
    (plan,) = plan_dispatches(spec, desc, tensors, regions, limits)
    return plan.key


MOD_FLOOR, MOD_TRUNC, SIGN, IS_NAN = ("ELEMENT_WISE_MODULUS_FLOOR", "ELEMENT_WISE_MODULUS_TRUNCATE",
                                      "ELEMENT_WISE_SIGN", "ELEMENT_WISE_IS_NAN")


@pytest.mark.parametrize("data_type, divider, libraries", [
    (DataType.UINT8, "divide_by_reciprocals.wgsl", ()),
    (DataType.INT8, "divide_by_reciprocals.wgsl", ("signed_by_reciprocals.wgsl",)),
    (DataType.UINT16, "divide_by_estimate.wgsl", ("rem_by_estimate.wgsl",)),
    (DataType.INT16, "divide_plain.wgsl", ("signed_by_estimate.wgsl",)),
    (DataType.FLOAT16, None, ()),
    (DataType.INT64, None, ()),
    (DataType.INT32, "divide_plain.wgsl", ("signed_by_magnitudes.wgsl",)),
], ids=str)
def test_modulus_divides_by_width(data_type, divider, libraries):
    # 8-bit integers: a table of reciprocals (int8 by its signed entries); uint16: a corrected float estimate;
    # int16: remainders of its float32 values; 32-bit: `%` (int32 on magnitudes); floats and 64-bit types divide
    # in their own remainder libraries.
    files = shader_files(_key(MOD_FLOOR, data_type, data_type, (64,)))
    assert [f for f in files if f.startswith("lib/divide")] == ([f"lib/{divider}"] if divider else [])
    optional = {"rem_by_estimate.wgsl", "signed_by_estimate.wgsl", "signed_by_magnitudes.wgsl",
                "signed_by_reciprocals.wgsl"}
    assert {name for name in optional if f"lib/{name}" in files} == set(libraries) & optional


@pytest.mark.parametrize("operator, in_type, out_type, sizes, strides, expected", [
    (SIGN, DataType.FLOAT32, DataType.FLOAT32, (64,), None, 4),  # a whole output chunk
    (IS_NAN, DataType.FLOAT32, DataType.UINT8, (64,), None, 4),  # one input chunk, one output word
    (IS_NAN, DataType.FLOAT32, DataType.UINT8, (8, 64), {"input_tensor": (128, 1)}, 4),  # ROWS
    (IS_NAN, DataType.FLOAT32, DataType.UINT8, (8, 64), {"input_tensor": (0, 1)}, 16),  # replicated rows
    (IS_NAN, DataType.FLOAT16, DataType.UINT8, (64,), None, 16),  # half width: one output chunk
    (IS_NAN, DataType.FLOAT32, DataType.UINT8, (8, 64), {"input_tensor": (0, 1), "output_tensor": (144, 2)}, 8),
    (SIGN, DataType.INT64, DataType.INT64, (64,), None, 2),
], ids=["same-width", "quarter", "quarter-rows", "quarter-replicated", "half", "replicated-stepped", "wide"])
def test_units(operator, in_type, out_type, sizes, strides, expected):
    """Elements per unit: float32 -> uint8 takes a whole output chunk only in replicated rows; a stepped output
    halves a chunk-sized unit."""
    assert _key(operator, in_type, out_type, sizes, strides, workgroup_size=2).unit == expected


@pytest.mark.parametrize("operator, data_type, sizes, strides, expected", [
    (MOD_TRUNC, DataType.FLOAT32, (256,), None, 1),  # linear, a whole output chunk per unit
    (MOD_TRUNC, DataType.INT8, (256,), None, 4),  # linear, the 8-bit table's fill
    (MOD_TRUNC, DataType.FLOAT32, (256,), {"output_tensor": (2,)}, 1),  # a strided output on the flat grid
    (MOD_TRUNC, DataType.FLOAT32, (4, 64), {"a_tensor": (80, 1)}, 4),  # ROWS: row offsets amortised
    (MOD_TRUNC, DataType.FLOAT32, (4, 64), {"a_tensor": (0, 1), "b_tensor": (0, 1)}, 1),  # replicated rows
    (MOD_FLOOR, DataType.FLOAT32, (256,), None, 4),  # linear, its row's policy asks for four
    (MOD_FLOOR, DataType.FLOAT16, (256,), None, 1),
], ids=["linear", "linear-table", "strided-out", "rows", "replicated", "linear-policy", "linear-other-type"])
def test_units_per_invocation(operator, data_type, sizes, strides, expected):
    assert _key(operator, data_type, data_type, sizes, strides, workgroup_size=2).units_per_invocation == expected


@pytest.mark.parametrize("operator, data_type", [(IS_NAN, DataType.FLOAT32), (IS_NAN, DataType.FLOAT16),
                                                 (SIGN, DataType.INT8), (SIGN, DataType.INT64),
                                                 (SIGN, DataType.UINT16)], ids=str)
def test_kernels_that_do_not_divide_include_no_division(operator, data_type):
    """A kernel includes the remainder libraries only where its operator divides."""
    out_type = DataType.UINT8 if operator == IS_NAN else data_type
    files = shader_files(_key(operator, data_type, out_type, (64,)))
    assert not [f for f in files if "modulus" in f or "divide" in f or "signed_by" in f or "_bits" in f
                or "rem_by" in f], files


def test_forms_and_placements_of_a_padded_layout():
    key = _key(MOD_FLOOR, DataType.INT16, DataType.INT16, (4, 64), {"a_tensor": (72, 1), "b_tensor": (0, 1)},
               workgroup_size=2)
    assert key.forms == (Form.CHUNK_ROWS, Form.CHUNK_ROWS, Form.LINEAR)
    assert key.placements == (Placement.SEPARATE, Placement.SEPARATE)
    assert key.grid is Grid.ROWS and key.output_store is OutputStore.UNITS


def test_kernels_show_the_exact_shader_and_a_dump_holds_every_compiled_one(device, tmp_path, monkeypatch):
    """CompiledOperator.kernels gives each dispatch's key, grid and WGSL; $GPUOPS_DUMP_SHADERS receives every shader
    compiled, named by its key's digest, with every key field named in its head."""
    from gpuops.shaders import DUMP_ENV, shader_source
    from .dml import USAGE, device_with
    monkeypatch.setenv(DUMP_ENV, str(tmp_path))
    fresh = device_with(device)  # its own pipelines: compiled now
    desc = make_desc(MOD_FLOOR, None, DataType.INT8, DataType.INT8, (4, 64), {"b_tensor": (0, 1)})
    buffers = {name: fresh.wgpu_device.create_buffer(size=512, usage=USAGE) for name in ("a", "b", "out")}
    bindings = {"a_tensor": gpuops.Binding(buffers["a"]), "b_tensor": gpuops.Binding(buffers["b"]),
                "output_tensor": gpuops.Binding(buffers["out"])}
    compiled = fresh.compile(desc)
    kernels = compiled.kernels(bindings)
    assert len(kernels) == 1 and kernels[0].source == shader_source(kernels[0].key)
    head = kernels[0].source.split("alias InElem")[0]
    for field in kernels[0].key.__dataclass_fields__:
        assert f"//   {field} = " in head
    assert not list(tmp_path.iterdir())  # nothing compiled yet
    compiled.execute(bindings)
    dumped = tmp_path / kernels[0].name
    assert dumped.read_text() == kernels[0].source


def test_drawn_layout_conversions_run_on_tiles():
    """The property test above covers the TILES grid: among the drawn layout conversions, a good part plan TILES
    kernels, with plain and atomic stores, a second input tiled and read where it lies, 64-bit and 8-bit types,
    more than two dimensions, and tensors that end inside a tile."""
    seen: dict[str, int] = {}

    @settings(max_examples=600, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(transposed_cases())
    def draw(case):
        desc = make_desc(case.operator, case.mode, case.in_type, case.out_type, case.sizes, case.strides)
        try:
            gpuops.validate(desc)
        except gpuops.ValidationError:
            return
        seen["cases"] = seen.get("cases", 0) + 1
        _, plans, _, _ = plan_case(case)
        tiles = [plan for plan in plans if plan.key.grid is Grid.TILES]
        if tiles:
            seen["tiles"] = seen.get("tiles", 0) + 1
        for plan in tiles:
            key = plan.key
            shape = tile_shape(key.input_type, key.output_type, key.workgroup_size)
            width, depth = plan.uniforms.sizes[-1], plan.uniforms.sizes[-2]
            for fact in (key.output_store.name, f"{key.input_type.size * 8}-bit", f"rank {min(key.rank, 3)}",
                         {Form.TILED: "b tiled", Form.STRIDED: "b where it lies", None: "unary"}[key.forms[1]],
                         "edge" if width % shape.width or depth % shape.depth else "whole tiles"):
                seen[fact] = seen.get(fact, 0) + 1

    draw()
    assert seen["tiles"] >= seen["cases"] // 6, seen
    for fact in ("SCATTER_WORDS", "SCATTER_ATOMIC", "8-bit", "64-bit", "rank 2", "rank 3", "b tiled",
                 "b where it lies", "unary", "edge", "whole tiles"):
        assert seen.get(fact, 0) >= 3, (fact, seen)


def _plans(operator, in_type, out_type, sizes, strides, offsets=None, **limits):
    desc = make_desc(operator, None, in_type, out_type, sizes, strides)
    spec = spec_by_name(operator)
    tensors = tuple(getattr(desc, name) for name in spec.tensor_fields)
    offsets = offsets or {}
    regions = tuple(BoundRegion(i, t.total_tensor_size_in_bytes + 256, offsets.get(name, 0))
                    for i, (name, t) in enumerate(zip(spec.tensor_fields, tensors)))
    limits = PlanLimits(**{"binding_size": 2**27, "storage_offset_alignment": 256,
                           "workgroups_per_dimension": 65535, **limits})
    plans = plan_dispatches(spec, desc, tensors, regions, limits)
    operands = operands_of(spec)
    check_plans(desc, plans, {op: offsets.get(name, 0) for op, name in zip(operands, spec.tensor_fields)},
                {op: r.buffer_size for op, r in zip(operands, regions)})
    return plans


F32, I8, F16, I64 = DataType.FLOAT32, DataType.INT8, DataType.FLOAT16, DataType.INT64
NCHW_AS_NHWC = (64 * 8 * 16, 16, 1, 8 * 16)  # (n, h, w, c) of an NCHW tensor of 4 x 64 x 8 x 16


@pytest.mark.parametrize("operator, data_type, sizes, strides, forms, store, plane", [
    (MOD_FLOOR, F32, (256, 256), {"a_tensor": (1, 256), "b_tensor": (1, 256)}, ("TILED", "TILED"), "SCATTER_WORDS",
     ((256, 256), (1, 256))),
    (MOD_FLOOR, F32, (256, 256), {"a_tensor": (1, 256), "b_tensor": (0, 1)}, ("TILED", "STRIDED"), "SCATTER_WORDS",
     ((256, 256), (1, 256))),
    (MOD_FLOOR, F32, (256, 256), {"a_tensor": (1, 256)}, ("TILED", "STRIDED"), "SCATTER_WORDS",
     ((256, 256), (1, 256))),
    (SIGN, I8, (4, 8, 16, 64), {"input_tensor": NCHW_AS_NHWC}, ("TILED", None), "SCATTER_WORDS",
     ((4, 128, 64), (8192, 1, 128))),
    (SIGN, I8, (66, 70), {"input_tensor": (1, 66)}, ("TILED", None), "SCATTER_ATOMIC", ((66, 70), (1, 66))),
    (SIGN, F16, (66, 70), {"input_tensor": (1, 66)}, ("TILED", None), "SCATTER_WORDS", ((66, 70), (1, 66))),
    (SIGN, I64, (3, 40, 50), {"input_tensor": (40 * 50, 1, 40)}, ("TILED", None), "SCATTER_WORDS",
     ((3, 40, 50), (2000, 1, 40))),
    (IS_NAN, F32, (3, 40, 52), {"input_tensor": (1, 3 * 54, 3)}, ("TILED", None), "SCATTER_WORDS",
     ((40, 3, 52), (162, 1, 3))),
], ids=["both-transposed", "b-broadcast", "b-packed", "nchw-nhwc", "int8-odd-rows", "float16-rows-on-words",
        "int64-3d", "short-fast-dimension-outer"])
def test_layout_conversions_choose_tiles(operator, data_type, sizes, strides, forms, store, plane):
    """The plane: the tiled input's fast dimension second to last, the output's rows last, the others outer
    (even a fast dimension of three elements, once tiles of 32-bit elements are at most 4 deep)."""
    out_type = DataType.UINT8 if operator == IS_NAN else data_type
    (plan,) = _plans(operator, data_type, out_type, sizes, strides, workgroup_size=256 if sizes[0] != 3 else 4)
    assert plan.key.grid is Grid.TILES
    assert tuple(f.name if f else None for f in plan.key.forms[:2]) == forms and plan.key.forms[2] is Form.STRIDED
    assert plan.key.output_store.name == store
    assert (plan.uniforms.sizes, plan.uniforms.strides[0]) == plane


@pytest.mark.parametrize("strides, reason", [
    ({"input_tensor": (1, 64), "output_tensor": (128, 2)}, "stepped output"),
    ({"input_tensor": (1, 3)}, "three rows"),
    ({"input_tensor": (64, 1)}, "not transposed"),
], ids=["stepped-output", "short", "padded"])
def test_no_tiles_where_they_do_not_apply(strides, reason):
    sizes = (3, 64) if reason == "three rows" else (64, 64)
    plans = _plans(SIGN, F32, F32, sizes, strides)
    assert all(plan.key.grid is not Grid.TILES for plan in plans)


def test_tiles_grid_is_capped_per_dimension():
    """One workgroup per tile along (columns, rows, planes), each capped at the adapter's limit: past it a
    workgroup takes several tiles, and only such kernels have the loops (the footprint model follows them;
    test_tiles runs them)."""
    strides = {"input_tensor": (1, 256)}
    (plan,) = _plans(SIGN, F32, F32, (256, 256), strides, workgroups_per_dimension=8)
    assert (plan.key.grid, plan.grid_size, plan.key.tile_loops) == (Grid.TILES, (8, 8, 1), False)
    (plan,) = _plans(SIGN, F32, F32, (256, 256), strides, workgroups_per_dimension=7)
    assert (plan.key.grid, plan.grid_size, plan.key.tile_loops) == (Grid.TILES, (7, 7, 1), True)
    (plan,) = _plans(SIGN, F32, F32, (3, 5, 64, 64), {"input_tensor": (5 * 4096, 4096, 1, 64)},
                     workgroups_per_dimension=4)
    assert (plan.key.grid, plan.grid_size, plan.uniforms.plane_count) == (Grid.TILES, (2, 2, 4), 15)
    from gpuops.shaders import shader_source
    assert plan.key.tile_loops and "const TILE_LOOPS: bool = true;" in shader_source(plan.key)


def test_the_model_finds_plain_stores_to_shared_words():
    """int8 rows of 70 bytes share words between rows (and tiles): the plan stores them atomically; with plain
    stores, the footprint model reports the lost updates."""
    (plan,) = _plans(SIGN, I8, I8, (66, 70), {"input_tensor": (1, 66)})
    assert plan.key.output_store is OutputStore.SCATTER_ATOMIC
    plain = dataclasses.replace(plan, key=dataclasses.replace(plan.key, output_store=OutputStore.SCATTER_WORDS))
    sizes = {Operand.A: 66 * 70 + 256, Operand.OUT: 66 * 70 + 256}
    violations = footprint_of((plain,), (Operand.A, Operand.OUT), sizes).violations
    assert violations and all("not atomically" in v for v in violations)


@pytest.mark.parametrize("in_type, out_type, width, depth", [
    (F32, F32, 32, 32), (DataType.UINT16, DataType.UINT16, 64, 32), (I8, I8, 64, 64), (F32, DataType.UINT8, 64, 16),
    (F16, DataType.UINT8, 64, 32), (F16, DataType.UINT32, 64, 32), (I64, I64, 32, 16),
], ids=str)
def test_tile_shapes(in_type, out_type, width, depth):
    """Tiles of about 4 KiB of each input, 64 or 128 bytes along each input column: two tiles and the 8-bit
    division table fit 16 KiB of workgroup memory; whole output words across; small workgroups, small tiles."""
    shape = tile_shape(in_type, out_type, 256)
    assert (shape.width, shape.depth) == (width, depth)
    assert shape.depth * in_type.size in (64, 128) and shape.width * out_type.size % 4 == 0
    assert 2 * shape.slots * max(4, in_type.size) + 2048 <= 16384
    small = tile_shape(in_type, out_type, 2)
    assert small.groups <= 2 and small.column_slots <= 2


def test_only_tiles_kernels_change():
    """A TILES kernel has its own entry point and files; every other kernel's code is what it was (no tile
    constant, no tile file; its header lists every key field, tile_loops among them)."""
    from gpuops.shaders import shader_source
    (tiles,) = _plans(MOD_FLOOR, I8, I8, (64, 64), {"a_tensor": (1, 64), "b_tensor": (1, 64)})
    (rows,) = _plans(MOD_FLOOR, I8, I8, (64, 64), {"a_tensor": (80, 1), "b_tensor": (0, 1)})
    tiles_text, rows_text = shader_source(tiles.key), shader_source(rows.key)
    assert tiles_text.count("fn main(") == 1 and "// ---- tiles.wgsl" in tiles_text and "TILE_GROUPS" in tiles_text
    rows_code = "\n".join(line for line in rows_text.splitlines() if not line.startswith("//   "))
    assert rows_code.count("fn main(") == 1 and "tile" not in rows_code.lower()
