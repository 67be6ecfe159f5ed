"""bench/targets.py (the performance goals' measurements): its rows, the contiguous rows' sizes and the rendering
of merged runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from gpuops import DataType

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "targets.py"


@pytest.fixture(scope="module")
def targets():
    spec = importlib.util.spec_from_file_location("bench_targets", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_are_every_operator_and_mode(targets):
    assert sorted(targets.OPS, key=str) == sorted([
        ("ELEMENT_WISE_SIGN", None), ("ELEMENT_WISE_IS_NAN", None), ("ELEMENT_WISE_IS_INFINITY", 0),
        ("ELEMENT_WISE_IS_INFINITY", 1), ("ELEMENT_WISE_IS_INFINITY", 2), ("ELEMENT_WISE_MODULUS_FLOOR", None),
        ("ELEMENT_WISE_MODULUS_TRUNCATE", None)], key=str)
    row = {"operator": "ELEMENT_WISE_IS_INFINITY", "mode": 1, "dtype": "FLOAT16", "out_dtype": "UINT8"}
    assert targets.label(row) == "is_infinity-positive float16->uint8"
    assert targets.label({**row, "operator": "ELEMENT_WISE_MODULUS_FLOOR", "mode": None, "out_dtype": "FLOAT16"}) \
        == "modulus_floor float16"


@pytest.mark.parametrize(("in_type", "out_type", "expected"), [
    (DataType.FLOAT32, DataType.FLOAT32, 1 << 26),
    (DataType.FLOAT16, DataType.FLOAT16, 1 << 27),
    (DataType.FLOAT16, DataType.UINT8, 1 << 27),   # the largest tensor decides
    (DataType.FLOAT16, DataType.UINT32, 1 << 26),
    (DataType.FLOAT32, DataType.UINT8, 1 << 26),
    (DataType.INT8, DataType.INT8, 1 << 28),
    (DataType.INT64, DataType.INT64, 1 << 26),      # never fewer than asked for
])
def test_narrow_rows_run_at_the_copys_tensor_bytes(targets, in_type, out_type, expected):
    assert targets.contiguous_elements(1 << 26, in_type, out_type) == expected
    assert targets.contiguous_elements(1 << 26, in_type, out_type, same_elements=True) == 1 << 26


def _run(backend: str, copy: float, rows: dict[str, list[tuple[str, str, float]]]) -> dict:
    def row(operator: str, dtype: str, gbps: float) -> dict:
        return {"operator": operator, "mode": None, "dtype": dtype, "out_dtype": dtype, "sizes": [1 << 26],
                "gbps": gbps, "torch": {"gbps": 1000.0}}
    run = {"backend": backend, "adapter": {"device": "GPU", "backend_type": "Vulkan", "description": "driver"},
           "elements": 1 << 26, "same_elements": False, "wgsl_copy_gbps": copy, "versions": {},
           "torch_copy": {"gbps": copy}}
    for section, items in rows.items():
        run[section] = [row(*item) for item in items]
    return run


def test_render_merges_runs_row_by_row(targets, tmp_path):
    full = _run("wgpu-native", 4000.0, {
        "contiguous": [("ELEMENT_WISE_SIGN", "FLOAT32", 4000.0), ("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2000.0)],
        "packed-2d": [("ELEMENT_WISE_SIGN", "FLOAT32", 4000.0), ("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2000.0)],
        "broadcast": [("ELEMENT_WISE_SIGN", "FLOAT32", 3600.0), ("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 1000.0)]})
    rows = _run("wgpu-native", 2000.0, {
        "contiguous": [("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 1900.0)],
        "packed-2d": [("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2500.0)],
        "broadcast": [("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2000.0)]})
    paths = []
    for name, run in (("full.json", full), ("rows.json", rows)):
        (tmp_path / name).write_text(json.dumps(run))
        paths.append(str(tmp_path / name))
    text = targets.render(paths)
    # a contiguous row against the copy of its own run: 4000 of 4000, and the later run's 1900 of its 2000
    assert "| sign float32 | 2^26 | 4000 | 100% |" in text
    assert "| modulus_floor float16 | 2^26 | 1900 | 95% |" in text
    assert "2000 | 2000 (80%)" not in text  # the earlier run's float16 layout rows are replaced...
    assert "| 2500 | 2000 (80%)" in text
    assert "| 4000 | 3600 (90%)" in text  # ...and its other rows kept
    assert "PyTorch CUDA copy 2000 GB/s" in text  # the header names the run of the last contiguous rows


def test_percentages_round_down_so_a_goal_is_never_shown_met_when_missed(targets):
    assert targets._pct(1981, 4000) == "49%"  # 49.5%
    assert targets._pct(2000, 4000) == "50%"
    assert targets._pct(3816, 4000) == "95%"  # 95.4%
    assert targets._pct(3600, 4000) == "90%"
    assert targets._pct(None, 4000) == "n/a"


def test_render_host_side_with_and_without_binding_tables(targets, tmp_path):
    host = {"batch_host_us_per_op": 6.25, "bare_batch_host_us_per_op": 3.5, "small_op_readback_us": 200.0,
            "bare_submit_readback_us": 190.0, "numpy_api_small_op_us": 600.0, "large_elements": 1 << 28,
            "large_wall_fraction_of_gpu": 0.95}
    runs = {"old.json": host, "new.json": {**host, "batch_table_host_us_per_op": 4.25}}
    texts = {}
    for name, section in runs.items():
        (tmp_path / name).write_text(json.dumps({**_run("dawn", 4000.0, {}), "host": section}))
        texts[name] = targets.render([str(tmp_path / name)])
    from_bindings = ("| batch of 1000 ops of 1024 elements recorded from bindings (plan cache), host time per op "
                     "| 6.2 us |")
    from_tables = "recorded from binding tables (`compiled.bind`), host time per op | 4.2 us | <= 10 us |"
    assert from_bindings in texts["old.json"] and from_tables not in texts["old.json"]  # (results before tables)
    assert from_bindings in texts["new.json"] and from_tables in texts["new.json"]
    assert "| one small op + read-back (DML level, cached plan) | 200 us = 1.05x" in texts["new.json"]
