"""The TILES grid on the GPU (wgsl/loop/grids/tiles.wgsl): inputs whose fastest dimension is not the output's (2-D
transposes, NCHW read into NHWC, other orders), every operator x type (every layout for one case of each kind of
loop, the others on one), bit for bit against NumPy, with canary bytes around the elements and binding offsets.
Tiles are small (workgroups of eight) so that tensors of a few thousand elements hold whole tiles, edge tiles and
rows that start inside a word; one layout runs at the default workgroup size."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

from gpuops import DataType
from gpuops.kernel import Form, Grid, OutputStore

from .dml import device_with, kernel_keys, made_plans, make_desc, run_and_check
from .reference import BINARY, op_cases, random_values


def _nchw(n: int, c: int, h: int, w: int, pad: int = 0) -> tuple[int, ...]:
    """Strides (n, h, w, c) of an NCHW tensor (rows of w + pad elements), indexed as the NHWC output is."""
    row = w + pad
    return (c * h * row, row, 1, h * row)


@dataclass(frozen=True)
class Layout:
    sizes: tuple[int, ...]
    first: tuple[int, ...]  # strides of a (or the one input)
    second: tuple[int, ...] | None  # strides of b (None: packed)
    out: tuple[int, ...] | None = None  # None: packed
    offsets: tuple[int, int, int] = (0, 0, 0)  # bytes: a, b, out
    tiles: bool = True  # the planner takes the TILES grid
    second_tiled: bool = True
    default_workgroups: bool = False
    looped: bool = False  # two workgroups per grid dimension: each workgroup takes several tiles along each


LAYOUTS = {
    "square": Layout((64, 64), (1, 64), (1, 64)),
    "ragged-offsets": Layout((33, 70), (1, 33), (1, 33), offsets=(16, 48, 32)),
    "padded-rows": Layout((40, 24), (1, 43), (1, 40), out=(28, 1), offsets=(32, 0, 16)),
    "odd-pitch-rows": Layout((40, 24), (1, 40), (1, 41), out=(27, 1), offsets=(0, 16, 48)),
    "broadcast-row": Layout((40, 48), (1, 40), (0, 1), second_tiled=False),
    "broadcast-column": Layout((40, 48), (1, 40), (1, 0), second_tiled=False, offsets=(48, 16, 0)),
    "broadcast-outer": Layout((3, 40, 48), (0, 1, 40), (48 * 40, 48, 1), second_tiled=False),
    "nchw-nhwc": Layout((2, 5, 17, 33), _nchw(2, 33, 5, 17), _nchw(2, 33, 5, 17, pad=1), offsets=(16, 32, 0)),
    "nchw-nhwc-default": Layout((2, 8, 16, 64), _nchw(2, 64, 8, 16), None, second_tiled=False,
                                default_workgroups=True),
    "several-tiles-per-workgroup": Layout((5, 40, 70), (2800, 1, 40), (2800, 1, 40), offsets=(16, 0, 32),
                                          looped=True),
    "several-tiles-broadcast-row": Layout((4, 64, 64), (4096, 1, 64), (0, 0, 1), out=(64 * 66, 66, 1),
                                          second_tiled=False, looped=True),
    "one-by-forty": Layout((1, 40), (1, 1), (1, 1), tiles=False),
    "forty-by-one": Layout((40, 1), (1, 40), (1, 40), tiles=False),
}
# Every layout for one case of each loop the tiles run (inputs, element widths, float or integer arithmetic); the
# other cases on the square transpose. GPUOPS_ALL_TILE_CASES=1 runs every case on every layout.
CORE_LAYOUTS = ("square",)


def _loop_kind(case) -> tuple:
    operator, _, in_type, out_type = case
    return operator in BINARY, in_type.size, out_type.size, in_type in (DataType.FLOAT16, DataType.FLOAT32)


def _cases():
    every = os.environ.get("GPUOPS_ALL_TILE_CASES") == "1"
    seen = set()
    for case, case_id in op_cases():
        first = _loop_kind(case) not in seen
        seen.add(_loop_kind(case))
        for name in LAYOUTS:
            if every or first or name in CORE_LAYOUTS:
                yield pytest.param(case, name, id=f"{case_id}-{name}")


CASES = list(_cases())


@pytest.fixture(scope="module")
def tiles_device(device):
    """Workgroups of eight, sixteen per grid dimension: tiles of 8 x 8 float32 elements to 32 x 32 int8 ones, one
    workgroup each."""
    return device_with(device, workgroup_size=8, max_workgroups_per_dimension=16)


@pytest.fixture(scope="module")
def looped_device(device):
    """Two workgroups per grid dimension: more tiles than workgroups, so that each takes several."""
    return device_with(device, workgroup_size=8, max_workgroups_per_dimension=2)


def _rows_on_words(layout: Layout, out_type: DataType) -> bool:
    pitch = layout.out[-2] if layout.out else layout.sizes[-1]
    return out_type.size >= 4 or (pitch * out_type.size % 4 == 0 and layout.offsets[2] % 4 == 0)


@pytest.mark.parametrize(("case", "name"), CASES)
def test_layout_conversions(device, tiles_device, looped_device, monkeypatch, case, name):
    operator, mode, in_type, out_type = case
    layout = LAYOUTS[name]
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    strides = {names[0]: layout.first, "output_tensor": layout.out}
    if len(names) == 2:
        strides["b_tensor"] = layout.second
    offsets = dict(zip((*names, "output_tensor"), layout.offsets[:len(names)] + layout.offsets[2:]))
    runner = looped_device if layout.looped else device if layout.default_workgroups else tiles_device
    keys = kernel_keys(runner, monkeypatch)
    made = made_plans(monkeypatch)
    rng = np.random.default_rng(zlib.crc32(repr((case, name)).encode()))
    desc = make_desc(operator, mode, in_type, out_type, layout.sizes, strides)
    run_and_check(runner, desc, rng, lambda t, n: random_values(t, n, rng), offsets=offsets)
    assert keys
    if not layout.tiles:
        assert all(key.loop.grid is not Grid.TILES for key in keys)
        return
    assert all(key.loop.grid is Grid.TILES for key in keys)
    if layout.looped:  # more tiles than workgroups along every grid dimension
        assert {dispatch.grid for dispatches in made for dispatch in dispatches} == {(2, 2, 2)}
    assert all(key.loop.tile_loops == layout.looped for key in keys)
    tiled = (Form.TILED, Form.TILED if layout.second_tiled else Form.STRIDED)
    assert all(key.loop.forms[:len(names)] == tiled[:len(names)] for key in keys)
    atomic = not _rows_on_words(layout, out_type)
    assert all((key.loop.output_store is OutputStore.SCATTER_ATOMIC) == atomic for key in keys)
