"""gpuops-bench targets (the performance goals' measurements): its rows, the contiguous rows' sizes, the layouts
section's cases, the samples and noise of every timed figure, the document it writes (docs/bench-json.md), the tables
rendered from merged runs and from the committed records in bench/results/, and runs pooled for a before/after
comparison (bench/ab_targets.py)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from gpuops import DataType, Device
from gpuops.bench import cli, reference as bench_reference, stats, targets
from gpuops.bench.torch_compare import COMPARE_LAYOUTS
from gpuops.bench.workload import Workload

from .test_bench import (DATA_TYPES, NUMBER, OPTIONAL_INT, OPTIONAL_NUMBER, OPTIONAL_STR, expect_keys,
                         fake_gpu_libraries_on, one_error_line, run)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def test_rows_are_every_operator_and_mode():
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
def test_narrow_rows_run_at_the_copys_tensor_bytes(in_type, out_type, expected):
    assert targets.contiguous_elements(1 << 26, in_type, out_type) == expected
    assert targets.contiguous_elements(1 << 26, in_type, out_type, same_elements=True) == 1 << 26


def test_goal_data_has_specials_and_no_zero_divisors():
    rng = np.random.default_rng(0)
    x = targets.goal_values(DataType.FLOAT32, 100_000, rng, "a_tensor")
    assert 0 < np.isinf(x).sum() <= 100 and 0 < np.isnan(x).sum() <= 100
    divisors = targets.goal_values(DataType.INT8, 100_000, rng, "b_tensor")
    assert divisors.min() == -128 and divisors.max() == 127 and not (divisors == 0).any()
    assert (targets.goal_values(DataType.INT8, 100_000, rng, "a_tensor") == 0).any()


# --------------------------------------------------------------------------------- the document, checked

ENVELOPE_KEYS = {"schema": str, "command": str, "created": str, "machine": dict, "adapter": dict, "versions": dict,
                 "feature_level": str, "runtime_checks": bool, "settings": dict, "timestamp_conversion": dict}
TOP_KEYS = {"cuda_context": bool, "torch_device": OPTIONAL_STR, "cupy_device": OPTIONAL_STR,
            "wgsl_copy_gbps": NUMBER, "wgsl_copy": dict, "torch_copy": dict, "torch_copy_samples": list,
            "contiguous": list, "packed-2d": list, "broadcast": list,
            "transposed": list, "nchw-to-nhwc": list, "transposed-k": list, "strided-out": list,
            "host": (dict, type(None))}


def validate_targets_document(doc: dict) -> None:
    """Every key and type docs/bench-json.md's targets section promises, nothing else."""
    expect_keys(doc, {**ENVELOPE_KEYS, **TOP_KEYS}, "top")
    assert (doc["schema"], doc["command"]) == ("gpuops-bench/1", "targets")
    settings = doc["settings"]
    expect_keys(settings, {"iterations": int, "warmup": int, "repeats": int, "max_noise": OPTIONAL_NUMBER,
                           "max_time_s": NUMBER, "max_samples": int, "elements": int, "same_elements": bool,
                           "sections": list, "layouts": list, "match": OPTIONAL_STR,
                           "units_per_invocation": OPTIONAL_INT, "data": str}, "settings")
    assert settings["data"] in ("goals", "bench", "worst")
    expect_keys(doc["wgsl_copy"], {"bytes": int, **TIMED_KEYS}, "wgsl_copy")
    validate_timing(doc["wgsl_copy"], settings, "wgsl_copy")
    assert doc["wgsl_copy"]["bytes"] == 8 * settings["elements"]
    assert doc["wgsl_copy_gbps"] == doc["wgsl_copy"]["gbps"]
    assert doc["torch_copy"] in doc["torch_copy_samples"]
    for copy in doc["torch_copy_samples"]:
        validate_torch(copy, settings)
    for section in targets.ROW_SECTIONS:
        for row in doc[section]:
            validate_row(row, section, settings)
    if doc["host"] is not None:
        validate_host(doc["host"])


# A timed figure's keys (workload.timed_fields, and the GB/s rated on them), as rows and the WGSL copy carry them.
TIMED_KEYS = {"iterations": OPTIONAL_INT, "stopped_on": OPTIONAL_STR, "gpu_median_ns": OPTIONAL_NUMBER,
              "gpu_min_ns": OPTIONAL_NUMBER, "gpu_max_ns": OPTIONAL_NUMBER, "gpu_noise": OPTIONAL_NUMBER,
              "host_median_ns": OPTIONAL_NUMBER, "host_noise": OPTIONAL_NUMBER, "gpu_samples_ns": (list, type(None)),
              "host_samples_ns": (list, type(None)), "gbps": OPTIONAL_NUMBER, "gbps_basis": OPTIONAL_STR}


def validate_timing(entry: dict, settings: dict, where: str) -> None:
    """A timed row's (or copy's) summaries are those of its samples, taken as the settings say."""
    gpu, host = entry["gpu_samples_ns"], entry["host_samples_ns"]
    assert entry["iterations"] == len(host) and (gpu is None or len(gpu) == len(host)), where
    assert entry["stopped_on"] in stats.STOPPED_ON, where
    if settings["max_noise"] is None:
        assert entry["stopped_on"] == "min_samples" and entry["iterations"] == settings["iterations"], where
    else:
        assert settings["iterations"] <= entry["iterations"] <= settings["max_samples"], where
    for clock, samples in (("gpu", gpu), ("host", host)):
        figures = stats.summary(samples or [])
        assert [entry[f"{clock}_{key}_ns"] for key in ("median",) + (("min", "max") if clock == "gpu" else ())] \
            == [figures[key] for key in ("median",) + (("min", "max") if clock == "gpu" else ())], where
        assert entry[f"{clock}_noise"] == figures["noise"], where
    assert entry["gbps_basis"] == ("gpu" if gpu else "host"), where
    assert entry["gbps"] == pytest.approx(entry.get("bytes", 0) / entry[f"{entry['gbps_basis']}_median_ns"]), where


def validate_torch(entry: dict, settings: dict, where: str = "torch") -> None:
    """A `torch` or `cupy` figure."""
    if "error" in entry:
        expect_keys(entry, {"error": str}, where)
    else:
        expect_keys(entry, {"gpu_median_ns": NUMBER, "gpu_min_ns": NUMBER, "gpu_max_ns": NUMBER,
                            "gpu_noise": OPTIONAL_NUMBER, "iterations": int, "stopped_on": str,
                            "gpu_samples_ns": list, "bytes": int, "gbps": NUMBER, "layout": str}, where)
        assert entry["layout"] in COMPARE_LAYOUTS
        samples = entry["gpu_samples_ns"]
        assert entry["iterations"] == len(samples) >= settings["iterations"], where
        assert entry["gpu_median_ns"] == stats.summary(samples)["median"] and \
            entry["gpu_noise"] == stats.noise(samples), where


def validate_host(host: dict) -> None:
    expect_keys(host, {"batch_host_us_per_op": NUMBER, "batch_table_host_us_per_op": NUMBER,
                       "bare_batch_host_us_per_op": NUMBER, "small_op_readback_us": NUMBER,
                       "bare_submit_readback_us": NUMBER, "numpy_api_small_op_us": NUMBER,
                       "large_batch_wall_ns_per_op": NUMBER, "large_gpu_median_ns": OPTIONAL_NUMBER,
                       "large_elements": int, "large_wall_fraction_of_gpu": OPTIONAL_NUMBER, "samples": dict}, "host")
    assert set(host["samples"]) == set(targets.HOST_FIGURES)
    for key, figure in host["samples"].items():
        expect_keys(figure, {"iterations": int, "noise": OPTIONAL_NUMBER, "values": list}, f"host.samples.{key}")
        assert figure["iterations"] == len(figure["values"])
        assert host[key] == stats.summary(figure["values"])["median"] and figure["noise"] == stats.noise(
            figure["values"]), key
    gpu, wall = host["large_gpu_median_ns"], host["large_batch_wall_ns_per_op"]
    assert host["large_wall_fraction_of_gpu"] == (None if gpu is None else pytest.approx(gpu / wall))


ROW_KEYS = {"operator": str, "mode": OPTIONAL_INT, "dtype": str, "out_dtype": str, "sizes": list, "strides": dict,
            "bytes": int, "exact": bool, "error": OPTIONAL_STR, **TIMED_KEYS, "torch": (dict, type(None)),
            "cupy": (dict, type(None))}


def validate_row(row: dict, section: str, settings: dict) -> None:
    expect_keys(row, ROW_KEYS, section)
    assert row["dtype"] in DATA_TYPES and row["out_dtype"] in DATA_TYPES
    if not row["exact"]:
        assert row["error"] and row["torch"] is None and row["cupy"] is None
        assert all(row[key] is None for key in TIMED_KEYS)
        return
    assert row["error"] is None
    validate_timing(row, settings, f"{section} {targets.label(row)}")
    assert (row["torch"] is None) == (section in ("packed-2d", "transposed-k"))
    assert (row["cupy"] is None) == (section not in ("transposed", "nchw-to-nhwc"))
    for library in ("torch", "cupy"):
        if row[library] is not None:
            validate_torch(row[library], settings, f"{section}.{library}")
            expected = targets.TORCH_LAYOUTS[section] if library == "torch" else targets.CUPY_LAYOUTS[section]
            assert row[library].get("layout", expected) == expected


def test_a_cuda_context_is_held_before_the_first_figure(capsys, tmp_path, monkeypatch):
    """NVIDIA runs Vulkan compute in a lower performance state until a CUDA context exists: the run holds one (where
    PyTorch or CuPy reaches CUDA) before it times the WGSL copy, its first figure, and says so."""
    events = []
    monkeypatch.setattr(targets, "hold_cuda_contexts", lambda: events.append("context") or ["held"])
    real_time = targets.TargetRun.time
    monkeypatch.setattr(targets.TargetRun, "time", lambda *a, **k: events.append("timed") or real_time(*a, **k))
    path = tmp_path / "held.json"
    status, _, err = run(capsys, "targets", "--elements", "1024", "--only", "contiguous", "--match",
                         "^sign float32$", "-i", "2", "-q", "--json", path)
    assert status == 0, err
    assert events[:2] == ["context", "timed"] and events.count("context") == 1
    assert json.loads(path.read_text())["cuda_context"] is True


def test_the_schema_page_names_every_key_of_a_targets_document():
    from .test_bench_compare import table_keys

    assert table_keys("## Targets documents") == set(TOP_KEYS) | {"settings"}
    assert table_keys("### A targets row") == set(ROW_KEYS)


# ------------------------------------------------------------------------------------- the command, measured

def small_host_section(monkeypatch) -> None:
    """The host section at sizes a software adapter runs in a moment: batches of 8 small operations, and 2 batches
    of 3 large operations of 2^12 elements."""
    monkeypatch.setattr(targets, "HOST_BATCH_OPS", 8)
    monkeypatch.setattr(targets, "HOST_LARGE_OPS", 3)
    monkeypatch.setattr(targets, "HOST_LARGE_BATCHES", 2)
    monkeypatch.setattr(targets, "large_elements", lambda device: 4096)


def test_contiguous_rows_and_host_figures_checked_timed_and_sampled(capsys, tmp_path, monkeypatch):
    small_host_section(monkeypatch)
    path = tmp_path / "targets.json"
    status, out, err = run(capsys, "targets", "--elements", "4096", "--only", "contiguous", "host", "--match",
                           "^sign (float32|int8)$", "-i", "3", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_targets_document(doc)
    rows = {targets.label(row): row for row in doc["contiguous"]}
    assert sorted(rows) == ["sign float32", "sign int8"]
    assert rows["sign float32"]["sizes"] == [4096] and rows["sign float32"]["bytes"] == 2 * 4096 * 4
    assert rows["sign int8"]["sizes"] == [4 * 4096]  # as many bytes as the float32 copy
    assert all(row["exact"] and row["iterations"] == 3 and row["strides"] == {} for row in rows.values())
    assert len(doc["torch_copy_samples"]) == 2  # once before the rows, once after
    assert doc["settings"]["sections"] == ["contiguous", "host"] and doc["packed-2d"] == []
    assert doc["settings"]["max_noise"] is None and doc["wgsl_copy"]["iterations"] == 3
    samples = doc["host"]["samples"]
    assert [samples[key]["iterations"] for key in targets.HOST_FIGURES] == [7, 7, 7, 200, 200, 100, 10, 2]
    assert doc["host"]["large_elements"] == 4096
    # The tables: every timed figure with its noise and sample count (the share of PyTorch's copy where it runs).
    assert re.search(r"^\| sign float32 \| 2\^12 \| \d+ \| [\d.]+% \(3\) \| (n/a|\d+%) \| ", out, re.M), out
    assert "| sign int8 | 2^14 | " in out
    assert "noise (samples): the relative interquartile range of a figure's samples" in out
    assert f"WGSL copy {targets._noise_cell(doc['wgsl_copy'])}, PyTorch copy" in out
    assert re.search(r"^\| one small op \+ read-back .* \| <= 1\.2x \| [\d.]+% \(200\) / [\d.]+% \(200\) \|$", out,
                     re.M), out
    assert "contiguous   sign int8" in err  # progress, on stderr
    assert f"note: results written to {path}" in out
    assert targets.render([path]) in out  # the tables printed are those the document renders to


def test_a_noise_target_samples_every_figure_until_met_or_out_of_time(capsys, tmp_path, monkeypatch):
    """--max-noise applies to gpuops' rows, the WGSL copy and PyTorch's and CuPy's figures (faked here: CUDA
    events that always read the same, so they meet any target at once)."""
    fake_gpu_libraries_on(monkeypatch)
    path = tmp_path / "noisy.json"
    status, out, err = run(capsys, "targets", "--elements", "1024", "--only", "layouts", "--layouts", "transposed",
                           "--match", "^sign float32$", "-i", "3", "--max-noise", "0.01%", "--max-time", "0.2",
                           "-q", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_targets_document(doc)
    assert (doc["settings"]["max_noise"], doc["settings"]["max_time_s"]) == (pytest.approx(1e-4), 0.2)
    (row,) = doc["transposed"]
    for library in ("torch", "cupy"):
        assert (row[library]["stopped_on"], row[library]["iterations"], row[library]["gpu_noise"]) == ("noise", 3, 0)
    assert f"| sign float32 | 32x32 | {row['gbps']:.0f} | {targets._noise_cell(row)} | " in out
    if row["stopped_on"] == "noise":  # the GPU's timestamps met the target, at once or after more samples
        assert row["gpu_noise"] <= 1e-4 and row["iterations"] >= 3
        return
    assert row["stopped_on"] in stats.ABOVE_TARGET and row["iterations"] > 3  # (llvmpipe: always)
    assert "'!': sampling ended on its budget above the target 0.01%" in out
    assert targets._noise_cell(row).endswith(f"! ({row['iterations']})")


def test_layouts_section_cases(capsys, tmp_path, monkeypatch):
    policies = []

    def device(*args, **kwargs):
        policies.append(kwargs["policy"])
        return Device(*args, **kwargs)

    monkeypatch.setattr(cli, "Device", device)
    path = tmp_path / "layouts.json"
    status, out, err = run(capsys, "targets", "--elements", "4096", "--only", "layouts", "--match",
                           "^modulus_floor int8$", "-i", "2", "-q", "--units-per-invocation", "2", "--json", path)
    assert status == 0, err
    assert err == ""  # --quiet
    assert [policy.units_per_invocation for policy in policies] == [2]
    doc = json.loads(path.read_text())
    validate_targets_document(doc)
    assert doc["settings"]["units_per_invocation"] == 2
    square = [64, 64]
    expected = {  # sizes, strides, bytes: distinct int8 elements read + written
        "packed-2d": (square, {}, 3 * 4096),
        "broadcast": (square, {"b_tensor": [0, 1]}, 4096 + 64 + 4096),
        "transposed": (square, {"a_tensor": [1, 64], "b_tensor": [1, 64]}, 3 * 4096),
        "nchw-to-nhwc": ([4, 64, 4, 4], {"output_tensor": [1024, 1, 256, 64]}, 3 * 4096),
        "transposed-k": (square, {"a_tensor": [1, 64], "b_tensor": [1, 64], "output_tensor": [1, 64]}, 3 * 4096),
        "strided-out": ([2048], {"output_tensor": [2]}, 3 * 2048),
    }
    for section, (sizes, strides, moved) in expected.items():
        (row,) = doc[section]
        assert (row["sizes"], row["strides"], row["bytes"], row["exact"]) == (sizes, strides, moved, True), section
    assert doc["contiguous"] == [] and "| modulus_floor int8 | " in out


def test_layouts_choose_cases_and_skip_wide_strided_outputs(capsys, tmp_path):
    path = tmp_path / "layouts.json"
    status, _, err = run(capsys, "targets", "--elements", "1024", "--only", "layouts", "--layouts", "packed-2d",
                         "strided-out", "--match", "^sign (float32|float16)$", "-i", "1", "-q", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    assert [targets.label(r) for r in doc["packed-2d"]] == ["sign float32", "sign float16"]
    assert [targets.label(r) for r in doc["strided-out"]] == ["sign float16"]  # 8/16-bit outputs only
    assert doc["broadcast"] == doc["transposed"] == doc["nchw-to-nhwc"] == []


def test_layout_conversions_beside_pytorch_and_cupy(capsys, tmp_path, monkeypatch):
    """The goals' layout conversions: each row checked, timed, and PyTorch and CuPy (faked here with NumPy) writing
    the same output layout; their tables rendered."""
    fake_gpu_libraries = fake_gpu_libraries_on(monkeypatch)
    path = tmp_path / "layouts.json"
    status, out, err = run(capsys, "targets", "--elements", "4096", "--only", "layouts", "--layouts", "transposed",
                           "nchw-to-nhwc", "--match", "^(sign float32|is_infinity-either float16->uint8)$", "-i",
                           "2", "-q", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_targets_document(doc)
    assert doc["settings"]["layouts"] == ["transposed", "nchw-to-nhwc"] and doc["packed-2d"] == []
    for section, sizes, strides, layout in [
            ("transposed", [64, 64], (64, 1), "row-major out"),
            ("nchw-to-nhwc", [4, 64, 4, 4], (1024, 1, 256, 64), "channels-last out")]:
        rows = {targets.label(row): row for row in doc[section]}
        assert sorted(rows) == ["is_infinity-either float16->uint8", "sign float32"], section
        assert all(row["exact"] and row["sizes"] == sizes for row in rows.values())
        assert rows["is_infinity-either float16->uint8"]["mode"] == 0
        for library in ("torch", "cupy"):
            assert {row[library]["layout"] for row in rows.values()} == {layout}
        title = {"transposed": "Transposed 2-D inputs into a row-major output",
                 "nchw-to-nhwc": "NCHW inputs into an NHWC output"}[section]
        assert f"{title} (PyTorch and CuPy: {layout}):" in out
        assert f"| sign float32 | {'x'.join(map(str, sizes))} | " in out
    written = [out for _, _, out in fake_gpu_libraries["cupy"].calls]
    assert sorted({tuple(s // w.itemsize for s in w.strides) for w in written}) == [(64, 1), (1024, 1, 256, 64)]
    assert targets.render([path]) in out


def test_nchw_to_nhwc_runs_without_cuda_libraries(capsys, tmp_path):
    path = tmp_path / "layouts.json"
    status, out, err = run(capsys, "targets", "--elements", "4096", "--only", "layouts", "--layouts",
                           "nchw-to-nhwc", "--match", "sign float32", "-i", "1", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_targets_document(doc)
    (row,) = doc["nchw-to-nhwc"]
    assert row["exact"] and row["strides"] == {"output_tensor": [1024, 1, 256, 64]}
    assert "nchw-to-nhwc sign float32" in err
    if doc["torch_device"] is None:
        assert row["torch"] == {"error": "PyTorch with CUDA is not available"}
        assert "| sign float32 | 4x64x4x4 | " in out and "n/a (PyTorch with CUDA is not available)" in out
    if doc["cupy_device"] is None:
        assert row["cupy"] == {"error": "CuPy with CUDA is not available"}


def test_wrong_row_is_reported_and_never_timed(capsys, tmp_path, monkeypatch):
    honest = bench_reference.expected

    def off_by_one(operator, mode, out_type, *inputs):
        result = honest(operator, mode, out_type, *inputs).copy()
        result.reshape(-1)[3] += 1
        return result

    def timed(*args, **kwargs):
        raise AssertionError("a wrong kernel was timed")

    monkeypatch.setattr(bench_reference, "expected", off_by_one)
    monkeypatch.setattr(Workload, "record", timed)
    path = tmp_path / "targets.json"
    status, _, err = run(capsys, "targets", "--elements", "256", "--only", "contiguous", "--match",
                         "^sign int32$", "-i", "1", "-q", "--json", path)
    assert status == 1
    message = one_error_line(err)
    assert message.startswith("wrong result, not timed: sign int32 sizes [256]")
    assert "1 of 256 elements differ from NumPy" in message
    doc = json.loads(path.read_text())
    validate_targets_document(doc)
    (row,) = doc["contiguous"]
    assert row["exact"] is False and row["gpu_median_ns"] is None


@pytest.mark.parametrize("argv, fragment", [
    (["targets", "--match", "sign ("], "--match 'sign (' is not a regular expression"),
    (["targets", "--only", "everything"], "argument --only: invalid choice: 'everything'"),
    (["targets", "--layouts", "diagonal"], "argument --layouts: invalid choice: 'diagonal'"),
    (["targets", "--elements", "0"], "must be at least 1"),
    (["targets", "--render", ROOT / "bench" / "models" / "sign_in_place.json"], "not a targets document"),
    (["targets", "--render", ROOT / "bench" / "results" / "missing.json"], "cannot access"),
])
def test_refused_before_the_device_opens(capsys, monkeypatch, argv, fragment):
    def refuse(*args, **kwargs):
        raise AssertionError("the device was opened before the arguments were checked")

    monkeypatch.setattr(cli, "Device", refuse)
    status, _, err = run(capsys, *argv)
    assert status == 2 and fragment in one_error_line(err)


# ------------------------------------------------------------------------------------------------ rendering

# The tables of the committed records, byte for byte: docs/performance.md's tables were made from them, so a change
# to the rendering that alters them must be deliberate (and these digests updated with it).
COMMITTED_TABLES = {
    "h100-dawn": "fe08c00dd1f310f95d720879aec2ee894eeeaf205111c54dd71a3985436b6207",
    "h100-wgpu-native": "7056779f65bef76cfbb99a13bc11aa4ff809cf3ba319ac392f93a52545295269",
    "h200-dawn": "9d3244d3d1a589106fbe4badbd730d18bc60cbac22dacc4eff7f7599f5892708",
    "h200-wgpu-native": "5d87b7fead5a2424583a71288df388f9ebca9ed9ea9c38170d6f4a3516b4def7",
}


@pytest.mark.parametrize("run_name", sorted(COMMITTED_TABLES))
def test_committed_records_render_as_before(run_name):
    text = targets.render([RESULTS / f"{run_name}-targets.json", RESULTS / f"{run_name}-layouts.json"])
    assert hashlib.sha256(text.encode()).hexdigest() == COMMITTED_TABLES[run_name], text


def test_render_command_prints_the_tables(capsys):
    files = [RESULTS / "h100-wgpu-native-targets.json", RESULTS / "h100-wgpu-native-layouts.json"]
    status, out, err = run(capsys, "targets", "--render", *files)
    assert (status, err) == (0, "")
    assert out == targets.render(files) + "\n"
    assert out.startswith("### NVIDIA H100 80GB HBM3 (Vulkan), wgpu-native, driver 580.159.04\n")
    assert "| sign float32 | 2^26 | 2962 | 103% | 2863 | 1.03x |" in out


def _run(backend: str, copy: float, rows: dict[str, list[tuple[str, str, float]]]) -> dict:
    def row(operator: str, dtype: str, gbps: float) -> dict:
        return {"operator": operator, "mode": None, "dtype": dtype, "out_dtype": dtype, "sizes": [1 << 26],
                "gbps": gbps, "torch": {"gbps": 1000.0}}
    run = {"schema": "gpuops-bench/1", "command": "targets",
           "adapter": {"name": "GPU", "implementation": backend, "backend": "Vulkan", "driver": "driver"},
           "settings": {"elements": 1 << 26, "same_elements": False}, "wgsl_copy_gbps": copy, "versions": {},
           "torch_copy": {"gbps": copy}, "torch_copy_samples": [{"gbps": copy}], "host": None}
    for section in targets.ROW_SECTIONS:
        run[section] = [row(*item) for item in rows.get(section, [])]
    return run


def test_render_merges_runs_row_by_row(tmp_path):
    full = _run("wgpu-native", 4000.0, {
        "contiguous": [("ELEMENT_WISE_SIGN", "FLOAT32", 4000.0), ("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2000.0)],
        "packed-2d": [("ELEMENT_WISE_SIGN", "FLOAT32", 4000.0), ("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2000.0)],
        "broadcast": [("ELEMENT_WISE_SIGN", "FLOAT32", 3600.0), ("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 1000.0)]})
    rows = _run("wgpu-native", 2000.0, {
        "contiguous": [("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 1900.0)],
        "packed-2d": [("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2500.0)],
        "broadcast": [("ELEMENT_WISE_MODULUS_FLOOR", "FLOAT16", 2000.0)]})
    paths = []
    for name, data in (("full.json", full), ("rows.json", rows)):
        (tmp_path / name).write_text(json.dumps(data))
        paths.append(str(tmp_path / name))
    text = targets.render(paths)
    # a contiguous row against the copy of its own run: 4000 of 4000, and the later run's 1900 of its 2000
    assert "| sign float32 | 2^26 | 4000 | 100% |" in text
    assert "| modulus_floor float16 | 2^26 | 1900 | 95% |" in text
    assert "2000 | 2000 (80%)" not in text  # the earlier run's float16 layout rows are replaced...
    assert "| 2500 | 2000 (80%)" in text
    assert "| 4000 | 3600 (90%)" in text  # ...and its other rows kept
    assert "PyTorch CUDA copy 2000 GB/s" in text  # the header names the run of the last contiguous rows


def test_render_reads_old_and_new_documents_together(tmp_path):
    """A run of the command updates rows of a committed gpuops-targets/1 record of the same implementation."""
    old = json.loads((RESULTS / "h200-wgpu-native-layouts.json").read_text())
    new = _run("wgpu-native", 4000.0, {"packed-2d": [("ELEMENT_WISE_SIGN", "FLOAT32", 1234.0)]})
    (tmp_path / "new.json").write_text(json.dumps(new))
    text = targets.render([RESULTS / "h200-wgpu-native-layouts.json", tmp_path / "new.json"])
    assert text.count("### ") == 1 and "### NVIDIA H200 (Vulkan), wgpu-native, driver 580.159.04" in text
    assert "| sign float32 | 1234 | " in text
    assert len([line for line in text.splitlines() if line.startswith("| ")]) == 1 + len(old["packed-2d"])


def test_render_tells_pytorch_figures_of_another_output_layout_apart(tmp_path):
    """The committed records' transposed PyTorch figures wrote x.t()'s order; merged with a run that compares the
    same row-major output, those figures are marked and the conversion table names them."""
    new = _run("wgpu-native", 4000.0, {"packed-2d": [("ELEMENT_WISE_SIGN", "FLOAT32", 3000.0)],
                                       "transposed": [("ELEMENT_WISE_SIGN", "FLOAT32", 2000.0)]})
    (row,) = new["transposed"]
    row.update(sizes=[8192, 8192], torch={"gbps": 1000.0, "layout": "row-major out"},
               cupy={"gbps": 800.0, "layout": "row-major out"})
    (tmp_path / "new.json").write_text(json.dumps(new))
    old = RESULTS / "h200-wgpu-native-layouts.json"
    alone = targets.render([old])
    assert "| PyTorch on x.t() |" in alone and "x.t()'s order" not in alone and "CuPy" not in alone
    text = targets.render([old, tmp_path / "new.json"])
    assert "| PyTorch on x.t(), row-major out |" in text
    assert "| sign float32 | 3000 | " in text and "| 2000 (66%) | 1000 | " in text  # the new row: not marked
    assert "| 219 (5%) | 3773 (out in x.t()'s order) |" in text  # sign float16 of the record
    conversions = text[text.index("Transposed 2-D inputs into a row-major output"):]
    assert "| sign float32 | 8192x8192 | 2000 | 50% | 1000 | 2.00x | 800 | 2.50x |" in conversions
    assert "| sign float16 | 8192x8192 | 219 | 5% | 3773 (x.t() order) | 0.06x | n/a | n/a |" in conversions


def test_percentages_round_down_so_a_goal_is_never_shown_met_when_missed():
    assert targets._pct(1981, 4000) == "49%"  # 49.5%
    assert targets._pct(2000, 4000) == "50%"
    assert targets._pct(3816, 4000) == "95%"  # 95.4%
    assert targets._pct(3600, 4000) == "90%"
    assert targets._pct(None, 4000) == "n/a"


def test_render_host_side_with_and_without_binding_tables(tmp_path):
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
    both = targets.render([str(tmp_path / "new.json"), str(tmp_path / "old.json")])
    assert from_tables not in both  # the last document's host figures win


def test_render_refuses_what_is_not_a_targets_document(tmp_path):
    bench_doc = tmp_path / "op.json"
    bench_doc.write_text(json.dumps({"schema": "gpuops-bench/1", "command": "op", "results": []}))
    with pytest.raises(targets.TargetsDocumentError, match=r"op\.json: schema 'gpuops-bench/1', command 'op'"):
        targets.render([bench_doc])
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(targets.TargetsDocumentError, match=r"broken\.json: not JSON"):
        targets.render([broken])
