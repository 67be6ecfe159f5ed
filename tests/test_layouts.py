"""Every operator x data type x rank 1-8 x layout, bit for bit against NumPy (by default the NumPy views and the zero
strides at three ranks, and the row layouts in full for one case of each kind of loop).

Two routes: NumPy views through the NumPy-level API (packed, permuted, broadcast operands, step-sliced, size-1
dimensions, reversed), and explicit DML descriptions whose padded, permuted and zero strides cannot be merged,
so the kernels really run at every rank, with binding offsets and canary bytes around the elements."""

import os
import zlib

import numpy as np
import pytest

from gpuops import DataType
from gpuops.kernel import Form, Grid, OutputStore

from .dml import device_with, kernel_keys, make_desc, made_plans, run_and_check
from .reference import (
    BINARY,
    assert_same_bits,
    op_cases,
    random_values,
    reference,
    run_numpy_api,
    special_values,
)

SHAPES = {1: (37,), 2: (5, 7), 3: (3, 4, 5), 4: (2, 3, 2, 5), 5: (2, 3, 2, 2, 3), 6: (2, 2, 3, 2, 2, 3),
          7: (2, 2, 2, 3, 2, 2, 2), 8: (2, 2, 2, 2, 2, 3, 2, 2)}
LAYOUTS = ["packed", "permuted", "broadcast_a", "broadcast_b", "sliced", "size_one", "reversed"]
# The NumPy views' ranks, and the ranks of DML strides with a zero stride (test_dml_strides runs every rank on
# strides that cannot merge): GPUOPS_LAYOUT_RANKS="1 2 3 4 5 6 7 8" takes them all.
VIEW_RANKS = [int(r) for r in os.environ.get("GPUOPS_LAYOUT_RANKS", "1 2 8").split()]
API_CASES = [(c, i) for c, i in op_cases() if c[3] != DataType.UINT32 or c[0] != "ELEMENT_WISE_IS_NAN"]


def _rng(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def _array(layout: str, shape: tuple[int, ...], data_type: DataType, rng, operand: int) -> np.ndarray:
    def values(s):
        return random_values(data_type, int(np.prod(s)), rng).reshape(s)

    rank = len(shape)
    if layout == "permuted":
        return np.transpose(values(shape[::-1]))  # strides reversed: the innermost dimension is the slowest
    if layout in ("broadcast_a", "broadcast_b") and operand == (0 if layout == "broadcast_a" else 1):
        small = tuple(1 if d % 2 == 0 else n for d, n in enumerate(shape)) if rank > 1 else (1,)
        return np.broadcast_to(values(small), shape)  # zero strides
    if layout == "sliced":
        return values(tuple(2 * n + 1 for n in shape))[tuple(slice(1, None, 2) for _ in shape)]
    if layout == "reversed":
        return values(shape)[tuple(slice(None, None, -1) for _ in shape)]
    return values(shape)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("rank", VIEW_RANKS)
@pytest.mark.parametrize("case", [c for c, _ in API_CASES], ids=[i for _, i in API_CASES])
def test_numpy_views(device, case, rank, layout):
    operator, mode, in_type, out_type = case
    shape = SHAPES[rank]
    if layout == "size_one":
        shape = tuple(1 if d % 2 else n for d, n in enumerate(shape))
    rng = _rng(case, rank, layout)
    arity = 2 if operator in BINARY else 1
    inputs = [_array(layout, shape, in_type, rng, operand) for operand in range(arity)]
    got = run_numpy_api(operator, mode, out_type, *inputs, device=device)
    assert_same_bits(got, reference(operator, mode, out_type, *inputs), *inputs)


def _padded_permuted_strides(shape, rng, zero_dim: int | None = None) -> tuple[int, ...]:
    """Strides of a layout with padding after every dimension, in a random dimension order."""
    order = rng.permutation(len(shape))  # order[0] is the outermost in memory
    strides = [0] * len(shape)
    step = 1
    for d in order[::-1]:
        strides[d] = step
        step *= shape[d] + 1
    if zero_dim is not None:
        strides[zero_dim] = 0
    return tuple(strides)


STRIDE_CASES = [pytest.param(rank, zero, id=f"{rank}-{'zero-strides' if zero else 'strided'}")
                for rank in SHAPES for zero in (False, True) if not zero or rank in VIEW_RANKS]


@pytest.mark.parametrize(("rank", "zero_strides"), STRIDE_CASES)
@pytest.mark.parametrize("case", [c for c, _ in op_cases()], ids=[i for _, i in op_cases()])
def test_dml_strides(device, case, rank, zero_strides):
    operator, mode, in_type, out_type = case
    shape = SHAPES[rank]
    rng = _rng(case, rank, zero_strides)
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    strides = {name: _padded_permuted_strides(shape, rng, int(rng.integers(rank)) if zero_strides else None)
               for name in names}
    strides["output_tensor"] = _padded_permuted_strides(shape, rng)
    desc = make_desc(operator, mode, in_type, out_type, shape, strides)
    offsets = {name: 16 * int(rng.integers(0, 5)) for name in (*names, "output_tensor")}
    run_and_check(device, desc, rng, lambda t, n: random_values(t, n, rng), offsets=offsets)


DIVISOR_GRIDS = (Grid.DIVISOR_ROWS, Grid.DIVISOR_ROWS_LOOPED)


def chunk_rows(key) -> tuple[bool, bool, bool]:
    """Per operand A, B, OUT: declared to lie in rows of whole aligned units."""
    return tuple(form is Form.CHUNK_ROWS for form in key.loop.forms)


ROW_LAYOUTS = ["row-broadcast", "column-broadcast", "middle-broadcast", "strided-output", "stepped-output",
               "in-place", "replicated"]


@pytest.fixture(scope="module")
def row_grid_device(device):
    """Workgroups of two invocations, four units each, at most four workgroups per grid dimension: rows of 64
    elements hold whole units of every type, at least a workgroup's worth, in at most four blocks, and 15 rows
    need the grid's third dimension (with one row of surplus)."""
    return device_with(device, workgroup_size=2, units_per_invocation=4, max_workgroups_per_dimension=4)


# Types whose modulus divides a group of rows at once where the divisor alone is the same on every row
# (DIVISOR_ROWS).
DIVISOR_ROW_TYPES = (DataType.INT8, DataType.INT64, DataType.FLOAT16)

# Every row layout for one case of each kind of loop (inputs, element widths, float or integer arithmetic), the
# others on the two layouts that group rows; GPUOPS_LAYOUT_RANKS set (a full run) takes every case on every layout.
def _row_cases():
    seen = set()
    for case, name in op_cases():
        operator, _, in_type, out_type = case
        kind = (operator in BINARY, in_type.size, out_type.size, in_type in (DataType.FLOAT16, DataType.FLOAT32))
        every = kind not in seen or "GPUOPS_LAYOUT_RANKS" in os.environ
        seen.add(kind)
        for layout in ROW_LAYOUTS:
            if layout == "in-place" and case[2] != case[3]:  # in place: the output's type is the input's
                continue
            if every or layout in ("row-broadcast", "replicated"):
                yield pytest.param(case, layout, id=f"{name}-{layout}")


ROW_CASES = list(_row_cases())


@pytest.mark.parametrize(("case", "layout"), ROW_CASES)
def test_row_grid(row_grid_device, monkeypatch, case, layout):
    """Strided layouts whose rows hold whole units run on the ROWS grid (wgsl/loop/rows.wgsl): x = blocks of a row,
    y and z = rows, offsets stepped along the row. Where every input is the same on every row ("replicated", and
    a one-input operator's "row-broadcast"), each invocation computes a unit once for a group of rows: 25 rows make
    six groups of four and one of one, and a surplus group on the grid's third dimension. Where the divisor alone is
    ("row-broadcast" of a two-input operator) of DIVISOR_ROW_TYPES, each invocation divides a unit's column in
    the same groups of rows at once (DIVISOR_ROWS)."""
    operator, mode, in_type, out_type = case
    replicated = layout == "replicated" or (layout == "row-broadcast" and operator not in BINARY)
    divisor_rows = (layout == "row-broadcast" and operator in BINARY
                    and in_type in DIVISOR_ROW_TYPES)
    grouped = replicated or divisor_rows
    shape = (5, 5, 64) if grouped else (3, 5, 64)
    padded = (5 * 80, 80, 1)
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    strides = {name: padded for name in names}
    strides["output_tensor"] = None
    broadcast = names[-1]
    if layout == "row-broadcast":
        strides[broadcast] = (0, 0, 1)
    elif layout == "replicated":
        strides.update({name: (0, 0, 1) for name in names})
    elif layout == "column-broadcast":
        strides[broadcast] = (5, 1, 0)
    elif layout == "middle-broadcast":
        strides[broadcast] = (64, 0, 1)
    elif layout == "strided-output":
        strides["output_tensor"] = (5 * 130, 130, 2)
    elif layout == "stepped-output":  # rows on the chunk grid: 8/16-bit outputs run stepped (OUT_STEP 2)
        strides["output_tensor"] = (5 * 144, 144, 2)
    elif layout == "in-place":
        strides["output_tensor"] = padded
    keys = kernel_keys(row_grid_device, monkeypatch)
    plans = made_plans(monkeypatch)
    rng = _rng(case, layout, "rows")
    desc = make_desc(operator, mode, in_type, out_type, shape, strides)
    run_and_check(row_grid_device, desc, rng, lambda t, n: random_values(t, n, rng), offsets={names[0]: 32},
                  in_place=names[0] if layout == "in-place" else None)
    assert keys and all(key.loop.grid.rows and (key.row_group > 1) == grouped
                        and (key.loop.grid in DIVISOR_GRIDS) == divisor_rows for key in keys)
    assert all((key.loop.output_store is OutputStore.STEPPED) == (layout == "stepped-output" and out_type.size < 4)
               for key in keys)
    # Inputs in rows of whole aligned units (padded, or broadcast along rows) are declared so, and their kernels
    # hold no gather path; a column-broadcast operand (innermost stride 0) is not, nor is a packed output (linear).
    arity = len(names)
    expected_rows = tuple(slot < arity and not (layout == "column-broadcast" and names[slot] == broadcast)
                          for slot in range(2)) + (layout == "in-place",)
    assert all(chunk_rows(key) == expected_rows for key in keys)
    plan = plans[-1]
    assert all(dispatch.grid[2] > 1 for dispatch in plan)


def _divisor_rows_values(data_type: DataType, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(row values, divisor row) for test_divisor_rows: every int8 value, or the type's special values and random
    bit patterns, 256 in all."""
    if data_type == DataType.INT8:
        return np.arange(-128, 128, dtype=np.int8), np.arange(-128, 128, dtype=np.int8)
    specials = special_values(data_type)
    return specials, np.concatenate([specials, _bit_patterns(data_type, 256 - specials.size, rng)])


def _bit_patterns(data_type: DataType, count: int, rng: np.random.Generator) -> np.ndarray:
    bits = np.dtype(f"u{data_type.size}")
    return rng.integers(0, 1 << (8 * data_type.size), count, dtype=bits).view(data_type.numpy_dtype)


@pytest.mark.parametrize("out_step", [1, 2, 3], ids=["packed-out", "stepped-out", "strided-out"])
@pytest.mark.parametrize("data_type", DIVISOR_ROW_TYPES, ids=lambda t: t.name.lower())
@pytest.mark.parametrize("operator", sorted(BINARY))
def test_divisor_rows(device, monkeypatch, operator, data_type, out_step):
    """DIVISOR_ROWS: a divisor the same on every row is loaded once for a group of rows
    (wgsl/loop/grids/divisor_rows.wgsl): four rows whose dividends are loaded before any is divided, or (float16) the
    group's rows in a loop. Row i holds dividend i throughout, for every int8 value (so every int8 pair is divided)
    or the type's special values, and the divisor row holds every one of them (with random bit patterns up to 256
    columns); three more rows of random bit patterns make an odd count of rows: whole groups and a partial last one.
    The output is packed, or every second element (8/16-bit: stepped, each unit's span read and written whole) or
    every third (8/16-bit: lanes stored atomically), whose elements between must keep their values."""
    rng = np.random.default_rng(1009)
    dividends, divisors = _divisor_rows_values(data_type, rng)
    columns = divisors.size
    noise = _bit_patterns(data_type, 3 * columns, rng)
    rows = dividends.size + 3
    values = iter([np.concatenate([np.repeat(dividends, columns), noise]), np.tile(divisors, rows)])
    small = device_with(device, workgroup_size=2, units_per_invocation=4, max_workgroups_per_dimension=16)
    keys = kernel_keys(small, monkeypatch)
    out_strides = None if out_step == 1 else (columns * out_step, out_step)
    desc = make_desc(operator, None, data_type, data_type, (rows, columns),
                     {"a_tensor": None, "b_tensor": (0, 1), "output_tensor": out_strides})
    run_and_check(small, desc, rng, lambda t, n: next(values))
    looped = data_type == DataType.FLOAT16
    grid = Grid.DIVISOR_ROWS_LOOPED if looped else Grid.DIVISOR_ROWS
    assert keys and all(key.loop.grid is grid for key in keys)
    stepped = out_step == 2 and data_type.size <= 2
    assert all((key.loop.output_store is OutputStore.STEPPED) == stepped for key in keys)


CHUNK_ROW_CASES = [pytest.param(c, id=i) for c, i in op_cases() if i in (
    "sign-int8-int8", "is_nan-float32-uint8", "is_nan-float16-uint8", "is_nan-float16-uint32",
    "modulus_floor-float16-float16", "modulus_truncate-int64-int64")]


@pytest.mark.parametrize("row_stride", [96, 97], ids=["aligned-rows", "unaligned-rows"])
@pytest.mark.parametrize("case", CHUNK_ROW_CASES)
def test_chunk_rows_only_where_every_unit_is_whole(device, monkeypatch, case, row_stride):
    """An input in padded rows is declared to move by whole chunks (Form.CHUNK_ROWS: no gather path in its
    kernel) only where every row starts on a unit; rows of an odd stride are gathered where they must be."""
    operator, mode, in_type, out_type = case
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    keys = kernel_keys(device, monkeypatch)
    rng = _rng(case, row_stride)
    desc = make_desc(operator, mode, in_type, out_type, (4, 64), {name: (row_stride, 1) for name in names})
    # (32 bytes: a whole unit of every type, float16 -> uint8's 16 elements included)
    run_and_check(device, desc, rng, lambda t, n: random_values(t, n, rng), offsets={names[0]: 32})
    assert keys and all(chunk_rows(key) == (row_stride == 96, len(names) == 2 and row_stride == 96, False)
                        for key in keys)


@pytest.fixture(scope="module")
def default_shape_device(device):
    """Workgroups of two, at most four per grid dimension, units per invocation left to the kernels."""
    return device_with(device, workgroup_size=2, max_workgroups_per_dimension=4)


@pytest.mark.parametrize("case", [c for c, _ in op_cases()], ids=[i for _, i in op_cases()])
def test_replicated_rows_fall_back_to_single_rows(default_shape_device, monkeypatch, case):
    """Replicated rows take one unit per invocation; where a row's units then need more workgroups than a grid
    dimension allows, the kernel runs single rows of several units per invocation instead."""
    operator, mode, in_type, out_type = case
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    keys = kernel_keys(default_shape_device, monkeypatch)
    rng = _rng(case, "replicated-default")
    desc = make_desc(operator, mode, in_type, out_type, (3, 5, 64), {name: (0, 0, 1) for name in names})
    run_and_check(default_shape_device, desc, rng, lambda t, n: random_values(t, n, rng))
    assert keys
    for key in keys:
        fits = -(-64 // key.unit // 2) <= 4  # blocks of a row at one unit per invocation
        assert key.loop.grid.rows and (key.row_group > 1) == fits and (key.loop.units_per_invocation == 1) == fits
