"""The planner on the CPU: every planned dispatch, walked by the footprint model (tests/footprint.py), writes
exactly the output's element bytes, each from its own element's inputs, stays inside its bound views and never
rewrites without atomics a byte another invocation writes. No GPU: thousands of layouts a run
(GPUOPS_PLANNER_EXAMPLES raises the count)."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpuops
from gpuops import DataType, IsNanDesc, TensorDesc
from gpuops.kernel import Form, Grid, Operand, OutputStore, Placement, operands_of, tile_shape
from gpuops.operators import spec_by_name, spec_of
from gpuops.plan import BoundRegion, PlanLimits
from gpuops.shaders import prelude, shader_files, shader_source, wgsl_file

from .dml import make_desc
from .footprint import footprint_of
from .layout_strategies import layout_cases, transposed_cases
from .planning import CASES_BY_KIND, check_plans, kind_id, kind_of, plan_case, plan_of

PLANNER_EXAMPLES = int(os.environ.get("GPUOPS_PLANNER_EXAMPLES", "300"))


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
    plans = plan_of(desc, (inp, out), regions, limits)
    assert [p.key.loop.grid for p in plans] == [Grid.REPLICATED_ROWS]
    assert plans[0].key.loop.output_store is not OutputStore.STEPPED
    operands = operands_of(len(spec.inputs))
    check_plans(desc, plans, {op: 0 for op in operands}, {op: r.buffer_size for op, r in zip(operands, regions)})


def _key(operator, in_type, out_type, sizes, strides=None, **limits):
    desc = make_desc(operator, None, in_type, out_type, sizes, strides)
    spec = spec_by_name(operator)
    tensors = tuple(getattr(desc, name) for name in spec.tensor_fields)
    regions = tuple(BoundRegion(i, t.total_tensor_size_in_bytes + 64, 0) for i, t in enumerate(tensors))
    limits = PlanLimits(**{"binding_size": 2**27, "storage_offset_alignment": 256,
                           "workgroups_per_dimension": 65535, **limits})
    (only,) = plan_of(desc, tensors, regions, limits)
    return only.key


MOD_FLOOR, MOD_TRUNC, SIGN, IS_NAN = ("ELEMENT_WISE_MODULUS_FLOOR", "ELEMENT_WISE_MODULUS_TRUNCATE",
                                      "ELEMENT_WISE_SIGN", "ELEMENT_WISE_IS_NAN")


@pytest.mark.parametrize("data_type, libraries, table", [
    (DataType.UINT8, ("divide_by_reciprocals.wgsl",), True),
    (DataType.INT8, ("signed_by_reciprocals.wgsl",), True),
    (DataType.UINT16, ("rem_by_estimate.wgsl", "divide_by_estimate.wgsl"), False),
    (DataType.INT16, ("signed_by_estimate.wgsl",), False),
    (DataType.INT32, ("divide_plain.wgsl", "signed_by_magnitudes.wgsl"), False),
    (DataType.UINT32, ("divide_plain.wgsl",), False),
    (DataType.FLOAT32, ("f32_bits.wgsl", "rem_by_estimate.wgsl"), False),
    (DataType.FLOAT16, ("f16_bits.wgsl",), False),
    (DataType.INT64, ("u64.wgsl",), False),
], ids=str)
def test_modulus_divides_by_width(data_type, libraries, table):
    """8-bit integers: a table of reciprocals in workgroup memory (uint8's magnitudes, int8 by its signed entries);
    uint16: a corrected float estimate; int16: remainders of its float32 values; 32-bit: `%` (int32 on magnitudes);
    floats and 64-bit types divide in their own remainder libraries. A kernel holds the libraries its type divides
    with and no other, and the one that keeps the error cases the modulus notes (lib/error_notes.wgsl)."""
    key = _key(MOD_FLOOR, data_type, data_type, (64,))
    files = shader_files(key)
    assert tuple(f.removeprefix("lib/") for f in files if f.startswith("lib/") and "lanes" not in f) == \
        ("error_notes.wgsl",) + libraries + (("reciprocal_table.wgsl",) if table else ())
    assert (key.operation.workgroup_file is not None) == table
    assert ("loop/main_prepared.wgsl" in files) == table


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
    assert _key(operator, data_type, data_type, sizes, strides, workgroup_size=2).loop.units_per_invocation == expected


@pytest.mark.parametrize("operator, data_type", [(IS_NAN, DataType.FLOAT32), (IS_NAN, DataType.FLOAT16),
                                                 (SIGN, DataType.INT8), (SIGN, DataType.INT64),
                                                 (SIGN, DataType.UINT16)], ids=str)
def test_kernels_that_do_not_divide_include_no_division(operator, data_type):
    """A kernel includes the remainder libraries only where its operator divides."""
    out_type = DataType.UINT8 if operator == IS_NAN else data_type
    files = shader_files(_key(operator, data_type, out_type, (64,)))
    assert "loop/main.wgsl" in files
    assert not [f for f in files if "modulus" in f or "divide" in f or "signed_by" in f or "_bits" in f
                or "rem_by" in f], files


def test_forms_and_placements_of_a_padded_layout():
    key = _key(MOD_FLOOR, DataType.INT16, DataType.INT16, (4, 64), {"a_tensor": (72, 1), "b_tensor": (0, 1)},
               workgroup_size=2)
    assert key.loop.forms == (Form.CHUNK_ROWS, Form.CHUNK_ROWS, Form.LINEAR)
    assert key.loop.placements == (Placement.SEPARATE, Placement.SEPARATE)
    assert key.loop.grid is Grid.ROWS and key.loop.output_store is OutputStore.UNITS


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
    for part in ("operation", "loop"):
        for field in getattr(kernels[0].key, part).__dataclass_fields__:
            assert f"//   {part}.{field} = " in head
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
        tiles = [plan for plan in plans if plan.key.loop.grid is Grid.TILES]
        if tiles:
            seen["tiles"] = seen.get("tiles", 0) + 1
        for tiled in tiles:
            key, loop = tiled.key, tiled.key.loop
            shape = key.tile
            width, depth = tiled.uniforms.sizes[-1], tiled.uniforms.sizes[-2]
            bits = key.operation.input_type.size * 8
            for fact in (loop.output_store.name, f"{bits}-bit", f"rank {min(loop.rank, 3)}",
                         {Form.TILED: "b tiled", Form.STRIDED: "b where it lies", None: "unary"}[loop.forms[1]],
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
    plans = plan_of(desc, tensors, regions, limits)
    operands = operands_of(len(spec.inputs))
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
    assert plan.key.loop.grid is Grid.TILES
    loop_forms = plan.key.loop.forms
    assert tuple(f.name if f else None for f in loop_forms[:2]) == forms and loop_forms[2] is Form.STRIDED
    assert plan.key.loop.output_store.name == store
    assert (plan.uniforms.sizes, plan.uniforms.strides[0]) == plane


@pytest.mark.parametrize("strides, reason", [
    ({"input_tensor": (1, 64), "output_tensor": (128, 2)}, "stepped output"),
    ({"input_tensor": (1, 3)}, "three rows"),
    ({"input_tensor": (64, 1)}, "not transposed"),
], ids=["stepped-output", "short", "padded"])
def test_no_tiles_where_they_do_not_apply(strides, reason):
    sizes = (3, 64) if reason == "three rows" else (64, 64)
    plans = _plans(SIGN, F32, F32, sizes, strides)
    assert all(plan.key.loop.grid is not Grid.TILES for plan in plans)


def test_tiles_grid_is_capped_per_dimension():
    """One workgroup per tile along (columns, rows, planes), each capped at the adapter's limit: past it a
    workgroup takes several tiles, and only such kernels have the loops (the footprint model follows them;
    test_tiles runs them)."""
    strides = {"input_tensor": (1, 256)}
    (plan,) = _plans(SIGN, F32, F32, (256, 256), strides, workgroups_per_dimension=8)
    assert (plan.key.loop.grid, plan.grid_size, plan.key.loop.tile_loops) == (Grid.TILES, (8, 8, 1), False)
    (plan,) = _plans(SIGN, F32, F32, (256, 256), strides, workgroups_per_dimension=7)
    assert (plan.key.loop.grid, plan.grid_size, plan.key.loop.tile_loops) == (Grid.TILES, (7, 7, 1), True)
    (plan,) = _plans(SIGN, F32, F32, (3, 5, 64, 64), {"input_tensor": (5 * 4096, 4096, 1, 64)},
                     workgroups_per_dimension=4)
    assert (plan.key.loop.grid, plan.grid_size, plan.uniforms.plane_count) == (Grid.TILES, (2, 2, 4), 15)
    from gpuops.shaders import shader_source
    assert plan.key.loop.tile_loops and "const TILE_LOOPS: bool = true;" in shader_source(plan.key)


def test_the_model_finds_plain_stores_to_shared_words():
    """int8 rows of 70 bytes share words between rows (and tiles): the plan stores them atomically; with plain
    stores, the footprint model reports the lost updates."""
    (plan,) = _plans(SIGN, I8, I8, (66, 70), {"input_tensor": (1, 66)})
    assert plan.key.loop.output_store is OutputStore.SCATTER_ATOMIC
    loop = dataclasses.replace(plan.key.loop, output_store=OutputStore.SCATTER_WORDS)
    plain = dataclasses.replace(plan, key=dataclasses.replace(plan.key, loop=loop))
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


@pytest.mark.parametrize("kind", list(CASES_BY_KIND), ids=kind_id)
def test_every_kind_of_kernel_is_planned_and_holds_only_its_own_code(kind):
    """Each kind of kernel (grid, output store, storage, workgroup memory) has a layout that plans it, whose
    footprint is exact. Its text is the prelude and whole files, one entry point; the files of a grid, an output
    store and a unit shape (wgsl/loop/grids/, stores/, units/) are in the kernels of that grid, store and shape
    only, and every function they define is called in the kernel: no stubs, nothing cut out of a file, no other
    grid's or store's code."""
    desc, plans, offsets, buffer_sizes = plan_case(CASES_BY_KIND[kind])
    check_plans(desc, plans, offsets, buffer_sizes)
    (key,) = {plan.key for plan in plans if kind_of(plan) == kind}
    text, files = shader_source(key), shader_files(key)
    assert text == "\n".join([prelude(key)] + [f"// ---- {f}\n{wgsl_file(f)}" for f in files])
    assert text.count("@compute") == 1 and text.count("fn main(") == 1
    own = [f for f in files if f.startswith(("loop/grids/", "loop/stores/", "loop/units/"))]
    for name in (name for f in own for name in re.findall(r"\bfn (\w+)\(", wgsl_file(f))):
        assert len(re.findall(rf"\b{name}\(", text)) >= 2, f"{name} is never called"
    grid_files = {f for f in files if f.startswith("loop/grids/")}
    assert all(kind[0].name.lower().split("_")[0] in f for f in grid_files), grid_files
    assert all(kind[1].name.lower().split("_")[0] in f or "whole" in f for f in own if "/stores/" in f)
    if spec_of(desc).error_flags:
        # The NumPy level's variant (Operation.error_flags): the same loop, windows and grid; its text adds the flag
        # word's binding after the loop's views, the report and an entry point that calls it, and no other file.
        _, reporting, _, _ = plan_case(CASES_BY_KIND[kind], error_flags=True)
        assert [(p.key.loop, p.windows, p.uniforms, p.grid_size) for p in reporting] == \
            [(p.key.loop, p.windows, p.uniforms, p.grid_size) for p in plans]
        (flagged,) = {plan.key for plan in reporting if kind_of(plan) == kind}
        assert flagged.operation == dataclasses.replace(key.operation, error_flags=True)
        added = [f for f in shader_files(flagged) if f not in files]
        assert added == [f for f in added if "reporting" in f] + ["lib/error_flags.wgsl"] and len(added) == 2, added
        flagged_text = shader_source(flagged)
        assert flagged_text.count("fn main(") == 1 and flagged_text.count("finish_invocation();") == 1


def test_no_wgsl_function_is_a_stub():
    """Every function in wgsl/ does something: a kernel without a path has no call to it."""
    from gpuops.shaders import WGSL_DIR
    for path in WGSL_DIR.rglob("*.wgsl"):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        assert not re.search(r"\bfn \w+\([^)]*\)[^{]*\{\s*\}", text), path
