"""gpuops-bench: every command runs on the CI's software adapter with small sizes, the JSON it writes follows
docs/bench-json.md, a wrong kernel is reported and never timed, every example DxDispatch model prints what NumPy
computes, and malformed models are refused with the JSON path of the bad key."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import wgpu

import gpuops
from gpuops.bench import cli, reference as bench_reference, stats
from gpuops.bench.model import format_value
from gpuops.bench.torch_compare import COMPARE_LAYOUTS
from gpuops.bench.workload import Workload, bytes_moved, make_case

from .cli_run import one_error_line, run
from .reference import assert_same_bits, reference

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "bench" / "models"
EXAMPLE = MODELS / "sign_in_place.json"  # the DxDispatch format's own example, verbatim


# ------------------------------------------------------------------------------------ the JSON schema, checked

NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))
OPTIONAL_INT = (int, type(None))
OPTIONAL_STR = (str, type(None))
LIMITS = {"max-buffer-size", "max-storage-buffer-binding-size", "max-compute-workgroups-per-dimension",
          "min-storage-buffer-offset-alignment", "max-storage-buffers-per-shader-stage",
          "max-compute-invocations-per-workgroup"}
DATA_TYPES = {t.name for t in gpuops.DataType}


def expect_keys(obj: dict, types: dict, where: str) -> None:
    assert isinstance(obj, dict), where
    assert set(obj) == set(types), f"{where}: keys {sorted(obj)} != {sorted(types)}"
    for key, kind in types.items():
        value = obj[key]
        assert isinstance(value, kind) and not (isinstance(value, bool) and bool not in _tuple(kind)), \
            f"{where}.{key}: {value!r} is not {kind}"


def _tuple(kind) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


RESULT_KEYS = {"operator": str, "mode": OPTIONAL_STR, "dtype": str, "output_dtype": str, "sizes": list,
               "layout": str, "strides": dict, "elements": int, "bytes_moved": int, "cache": str, "exact": bool,
               "error": OPTIONAL_STR, "warmup": OPTIONAL_INT, "iterations": OPTIONAL_INT, "stopped_on": OPTIONAL_STR,
               "gpu_median_ns": OPTIONAL_NUMBER, "gpu_min_ns": OPTIONAL_NUMBER, "gpu_max_ns": OPTIONAL_NUMBER,
               "gpu_noise": OPTIONAL_NUMBER, "host_median_ns": OPTIONAL_NUMBER, "host_noise": OPTIONAL_NUMBER,
               "gpu_samples_ns": (list, type(None)), "host_samples_ns": (list, type(None)),
               "gbps": OPTIONAL_NUMBER, "gbps_basis": OPTIONAL_STR, "copy_gbps": OPTIONAL_NUMBER,
               "percent_of_copy": OPTIONAL_NUMBER, "compare": dict}


def validate_document(doc: dict) -> None:
    """Every key and type docs/bench-json.md promises, nothing else."""
    expect_keys(doc, {"schema": str, "command": str, "created": str, "machine": dict, "adapter": dict,
                      "versions": dict, "feature_level": str, "runtime_checks": bool, "settings": dict,
                      "timestamp_conversion": dict,
                      "copy_roof": list, "results": list}, "top")
    assert doc["schema"] == "gpuops-bench/1"
    assert doc["command"] in ("default", "op", "sweep")
    assert re.fullmatch(r"\d+_\d+", doc["feature_level"])
    expect_keys(doc["machine"], {"hostname": str, "platform": str, "machine": str, "cpu": str,
                                 "cpu_count": OPTIONAL_INT, "memory_bytes": OPTIONAL_INT}, "machine")
    expect_keys(doc["adapter"], {"name": str, "implementation": str, "vendor": str, "backend": str, "type": str, "driver": str,
                                 "architecture": str, "vendor_id": int, "device_id": int, "limits": dict,
                                 "features": list}, "adapter")
    assert set(doc["adapter"]["limits"]) <= LIMITS and all(isinstance(v, int) for v in
                                                           doc["adapter"]["limits"].values())
    assert all(isinstance(f, str) for f in doc["adapter"]["features"])
    expect_keys(doc["versions"], {"gpuops": str, "wgpu": str, "wgpu_native": OPTIONAL_STR, "wgpudawn": OPTIONAL_STR,
                                  "numpy": str, "python": str, "torch": OPTIONAL_STR, "cupy": OPTIONAL_STR},
                "versions")
    assert doc["adapter"]["implementation"] in ("wgpu-native", "dawn")
    settings = doc["settings"]
    own = {"default": {"elements": int}, "op": {"case": dict},
           "sweep": {"layout": str, "min_elements": int, "max_elements": int}}[doc["command"]]
    expect_keys(settings, {"iterations": int, "warmup": int, "repeats": int, "max_noise": OPTIONAL_NUMBER,
                           "max_time_s": NUMBER, "max_samples": int, "cache": list, "flush_bytes": OPTIONAL_INT,
                           "compare": list, "cuda_context": bool, "data": str, **own}, "settings")
    assert settings["data"] in ("bench", "worst")
    assert settings["iterations"] >= 1 and settings["warmup"] >= 0 and settings["repeats"] >= 1
    assert settings["cache"] in (["warm"], ["cold"], ["warm", "cold"])
    assert (settings["flush_bytes"] is None) == ("cold" not in settings["cache"])
    assert set(settings["compare"]) <= {"numpy", "torch", "cupy"}
    conversion = doc["timestamp_conversion"]
    expect_keys(conversion, {"method": str, "tick_ns": OPTIONAL_NUMBER, "measured_ns_per_tick": OPTIONAL_NUMBER,
                             "short_pass": (dict, type(None)), "long_pass": (dict, type(None)), "note": str,
                             "rounded": bool},
                "timestamp_conversion")
    assert conversion["method"] in ("nanoseconds", "calibrated", "unavailable")
    assert (conversion["tick_ns"] is None) == (conversion["method"] == "unavailable")
    if conversion["method"] == "nanoseconds":
        assert conversion["tick_ns"] == 1.0 and abs(conversion["measured_ns_per_tick"] - 1) <= 0.05
    for entry in doc["copy_roof"]:
        expect_keys(entry, {"bytes_moved": int, "cache": str, "iterations": int, "gpu_median_ns": OPTIONAL_NUMBER,
                            "gpu_noise": OPTIONAL_NUMBER, "host_median_ns": NUMBER, "host_noise": OPTIONAL_NUMBER,
                            "gbps": NUMBER, "gbps_basis": str}, "copy_roof[]")
        assert entry["cache"] in settings["cache"] and entry["iterations"] >= settings["iterations"]
    for row in doc["results"]:
        validate_result(row, doc)


def validate_result(row: dict, doc: dict) -> None:
    expect_keys(row, RESULT_KEYS, "results[]")
    assert row["operator"].startswith("ELEMENT_WISE_")
    assert row["cache"] in doc["settings"]["cache"]
    assert row["dtype"] in DATA_TYPES and row["output_dtype"] in DATA_TYPES
    assert row["mode"] in (None, "EITHER", "POSITIVE", "NEGATIVE")
    assert np.prod(row["sizes"]) == row["elements"]
    assert set(row["strides"]) <= {"InputTensor", "ATensor", "BTensor", "OutputTensor"}
    if not row["exact"]:
        assert row["error"] and row["gbps"] is None and row["gpu_median_ns"] is None
        assert row["gpu_samples_ns"] is None and row["host_samples_ns"] is None and row["stopped_on"] is None
        return
    assert row["error"] is None
    assert row["gbps_basis"] in ("gpu", "host")
    # The summaries are those of the samples the row keeps.
    settings = doc["settings"]
    assert row["stopped_on"] in stats.STOPPED_ON
    assert len(row["host_samples_ns"]) == row["iterations"] >= settings["iterations"]
    if settings["max_noise"] is None:
        assert row["stopped_on"] == "min_samples" and row["iterations"] == settings["iterations"]
    assert row["host_median_ns"] == pytest.approx(np.median(row["host_samples_ns"]))
    assert row["host_noise"] == stats.noise(row["host_samples_ns"])
    if row["gpu_samples_ns"] is None:
        assert row["gpu_median_ns"] is None and row["gpu_noise"] is None and row["gbps_basis"] == "host"
    else:
        assert len(row["gpu_samples_ns"]) == row["iterations"]
        assert (row["gpu_median_ns"], row["gpu_min_ns"], row["gpu_max_ns"]) == pytest.approx(
            (np.median(row["gpu_samples_ns"]), min(row["gpu_samples_ns"]), max(row["gpu_samples_ns"])))
        assert row["gpu_noise"] == stats.noise(row["gpu_samples_ns"])
    timed = row["gpu_median_ns"] if row["gbps_basis"] == "gpu" else row["host_median_ns"]
    assert row["gbps"] == pytest.approx(row["bytes_moved"] / timed)
    if row["gpu_samples_ns"] is not None:
        assert row["gpu_min_ns"] <= row["gpu_median_ns"] <= row["gpu_max_ns"]
    elif doc["timestamp_conversion"]["method"] != "unavailable":
        # Timed, but below the timestamps' resolution (stats.resolved): rated on host time.
        assert row["gpu_min_ns"] is None and row["gbps_basis"] == "host"
    assert row["percent_of_copy"] == pytest.approx(100 * row["gbps"] / row["copy_gbps"])
    assert set(row["compare"]) <= {"numpy", "torch", "cupy"}
    if "numpy" in row["compare"]:
        expect_keys(row["compare"]["numpy"], {"median_ns": NUMBER, "min_ns": NUMBER, "max_ns": NUMBER,
                                              "gbps": NUMBER, "device": str}, "compare.numpy")
    for library in ("torch", "cupy"):
        entry = row["compare"].get(library)
        if entry is None:
            continue
        if "error" in entry:
            expect_keys(entry, {"error": str}, f"compare.{library}")
        else:
            expect_keys(entry, {"median_ns": NUMBER, "min_ns": NUMBER, "max_ns": NUMBER, "gbps": NUMBER,
                                f"{library}_counted_bytes": int, "device": str, "layout": str}, f"compare.{library}")
            assert entry["layout"] in COMPARE_LAYOUTS


# --------------------------------------------------------------------------------------------- adapters, help

def test_help_names_every_command(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0
    commands = ("default", "adapters", "op", "sweep", "targets", "compare", "model")
    for command in commands:
        assert command in out
    for command in commands:
        status, out, err = run(capsys, command, "--help")
        assert (status, err) == (0, "") and out.startswith(f"usage: gpuops-bench {command} "), command


def test_adapters_show_backend_type_limits_and_features(capsys):
    status, out, _ = run(capsys, "adapters")
    assert status == 0
    assert "backend: Vulkan" in out and "type: " in out
    assert "max-storage-buffer-binding-size" in out and "min-storage-buffer-offset-alignment" in out
    assert "timestamp-query" in out and "features: " in out
    assert "(default)" in out
    assert "[0] " in out and "[index] as Device(adapter=index) and GPUOPS_ADAPTER=index pick them" in out


# ---------------------------------------------------------------------------------------------------------- op

LAYOUT_BYTES = {  # modulus_floor float32, sizes 16 x 24 (384 elements): distinct elements read + written
    "packed": (384 + 384 + 384) * 4,
    "transposed": (384 + 384 + 384) * 4,
    "broadcast-a": (24 + 384 + 384) * 4,
    "broadcast-b": (384 + 24 + 384) * 4,
    "strided": (384 + 384 + 384) * 4,
}


@pytest.mark.parametrize("layout", sorted(LAYOUT_BYTES))
def test_op_checks_then_times_every_layout(capsys, tmp_path, layout):
    path = tmp_path / "op.json"
    status, out, err = run(capsys, "op", "modulus_floor", "--sizes", "16,24", "--layout", layout, "-i", "2",
                           "-w", "1", "--json", path)
    assert status == 0, err
    assert "exact against NumPy" in out and "% copy" in out and "host/dispatch" in out
    doc = json.loads(path.read_text())
    validate_document(doc)
    (row,) = doc["results"]
    assert (row["operator"], row["layout"], row["exact"], row["iterations"]) == \
        ("ELEMENT_WISE_MODULUS_FLOOR", layout, True, 2)
    assert row["bytes_moved"] == LAYOUT_BYTES[layout]
    strides = row["strides"]
    expected = {"packed": ([24, 1], [24, 1], [24, 1]), "transposed": ([1, 16], [1, 16], [24, 1]),
                "broadcast-a": ([0, 1], [24, 1], [24, 1]), "broadcast-b": ([24, 1], [0, 1], [24, 1]),
                "strided": ([48, 2], [48, 2], [48, 2])}[layout]
    assert (strides["ATensor"], strides["BTensor"], strides["OutputTensor"]) == expected
    assert len(doc["copy_roof"]) == 1 and doc["copy_roof"][0]["bytes_moved"] == -(-row["bytes_moved"] // 32) * 16 * 2


def test_runtime_checks_flag_is_used_and_recorded(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("GPUOPS_RUNTIME_CHECKS", raising=False)
    for flag, kept in (([], False), (["--runtime-checks"], True)):
        path = tmp_path / f"checks-{kept}.json"
        status, out, err = run(capsys, "op", "modulus_floor", "--dtype", "int8", "--sizes", "16,24", "-i", "2",
                               "-w", "1", *flag, "--json", path)
        assert status == 0, err
        assert f"shader runtime checks {'kept' if kept else 'left out'}" in out
        doc = json.loads(path.read_text())
        validate_document(doc)
        assert doc["runtime_checks"] is kept and doc["results"][0]["exact"] is True


def test_op_mode_strides_and_output_type(capsys, tmp_path):
    path = tmp_path / "op.json"
    status, out, err = run(capsys, "op", "DML_OPERATOR_ELEMENT_WISE_IS_INFINITY", "--dtype", "float16", "--mode",
                           "positive", "--sizes", "8,40", "--strides", "1,8", "-i", "2", "-w", "0", "--json", path)
    assert status == 0, err
    (row,) = json.loads(path.read_text())["results"]
    assert (row["mode"], row["dtype"], row["output_dtype"], row["layout"]) == \
        ("POSITIVE", "FLOAT16", "UINT8", "strides=1,8")
    status, _, err = run(capsys, "op", "is_nan", "--out-dtype", "uint32", "--sizes", "100", "-i", "1", "-w", "0",
                         "--feature-level", "3.0")
    assert status == 0, err


def test_repeats_time_several_passes_per_span(capsys, tmp_path, monkeypatch):
    """--repeats N (for Dawn's coarse timestamps): every timed span of the case and of the copy roof holds N
    passes, and the document says so."""
    from gpuops.bench import timing

    spans = []
    real_run = timing.GpuTimer.run

    def run_spy(self, record, iterations, warmup, repeats=1, before=None):
        spans.append(repeats)
        return real_run(self, record, iterations, warmup, repeats, before)

    monkeypatch.setattr(timing.GpuTimer, "run", run_spy)
    path = tmp_path / "op.json"
    status, _, err = run(capsys, "op", "sign", "--sizes", "1000", "-i", "2", "-w", "0", "--repeats", "3",
                         "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    assert doc["settings"]["repeats"] == 3 and doc["results"][0]["exact"]
    assert len(spans) >= 3 and set(spans) == {3}  # the floor, the roof's copy and the case
    status, _, err = run(capsys, "sweep", "--repeats", "0", "--json", tmp_path / "s.json")
    assert status != 0 and "--repeats" in err


def test_op_compares_with_numpy_and_notes_missing_torch(capsys, tmp_path):
    path = tmp_path / "op.json"
    status, out, err = run(capsys, "op", "sign", "--dtype", "int16", "--sizes", "1000", "-i", "2", "-w", "1",
                           "--compare", "numpy", "--compare", "torch", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_document(doc)
    compare = doc["results"][0]["compare"]
    assert compare["numpy"]["gbps"] > 0
    try:
        import torch  # noqa: F401

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        assert compare["torch"] == {"error": "PyTorch with CUDA is not available"}
        assert "PyTorch with CUDA is not available" in out


def test_wrong_kernel_is_reported_and_never_timed(capsys, tmp_path, monkeypatch):
    """The seam: the NumPy oracle the check uses. A result that differs is an error (status 1) and the operator is
    never recorded for timing."""
    honest = bench_reference.expected

    def off_by_one(operator, mode, out_type, *inputs):
        result = honest(operator, mode, out_type, *inputs).copy()
        result.reshape(-1)[5] += 1
        return result

    def timed(*args, **kwargs):
        raise AssertionError("a wrong kernel was timed")

    monkeypatch.setattr(bench_reference, "expected", off_by_one)
    monkeypatch.setattr(Workload, "record", timed)
    path = tmp_path / "op.json"
    status, out, err = run(capsys, "op", "sign", "--dtype", "int32", "--sizes", "4,8", "-i", "2", "-w", "1",
                           "--json", path)
    assert status == 1
    message = one_error_line(err)
    assert message.startswith("wrong result, not timed: ELEMENT_WISE_SIGN INT32->INT32")
    assert "1 of 32 elements differ from NumPy; first at index [0, 5]" in message
    assert "WRONG RESULT (not timed)" in out
    doc = json.loads(path.read_text())
    validate_document(doc)
    assert doc["results"][0]["exact"] is False and doc["results"][0]["gpu_median_ns"] is None


def test_op_without_timestamps_reports_host_times(capsys, tmp_path, monkeypatch):
    """An adapter without timestamp-query: host times only, said in the table and in the JSON."""
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    plain = gpuops.Device(wgpu_device=adapter.request_device_sync(required_features=[]))
    monkeypatch.setattr(cli, "_device", lambda args: plain)
    path = tmp_path / "op.json"
    status, out, err = run(capsys, "op", "sign", "--sizes", "256", "-i", "2", "-w", "0", "--json", path)
    assert status == 0, err
    assert "no timestamp-query" in out and "*" in out
    doc = json.loads(path.read_text())
    validate_document(doc)
    row = doc["results"][0]
    assert doc["timestamp_conversion"]["method"] == "unavailable"
    assert row["gpu_median_ns"] is None and row["gbps_basis"] == "host" and row["host_median_ns"] > 0


@pytest.mark.parametrize("argv, fragment", [
    (["op", "gemm"], "operator 'gemm' is not implemented by gpuops"),
    (["op", "sign", "--dtype", "float99"], "unknown data type 'float99'"),
    (["op", "is_nan", "--dtype", "int32", "--sizes", "8", "-i", "1"], "INT32 is not supported"),
    (["op", "sign", "--layout", "diagonal"], "argument --layout: invalid choice: 'diagonal'"),
    (["op", "sign", "--layout", "transposed", "--sizes", "64"], "layout 'transposed' needs 2 or more dimensions"),
    (["op", "sign", "--layout", "broadcast-b"], "layout 'broadcast-b' needs a second input"),
    (["op", "sign", "--mode", "positive"], "--mode applies to is_infinity only"),
    (["op", "sign", "--sizes", "0,4"], "every size must be at least 1"),
    (["op", "sign", "--compare", "jax"], "--compare 'jax'; allowed: numpy, torch, cupy"),
    (["op", "sign", "--layout", "nchw-to-nhwc"], ("layout 'nchw-to-nhwc' needs 4 sizes (N, C, H, W), e.g. --sizes "
                                                  "4,64,32,32; got 2 (1024,1024)")),
    (["op", "sign", "--layout", "nchw-to-nhwc", "--sizes", "2,3,4"], "needs 4 sizes (N, C, H, W)"),
    (["sweep", "--max-elements", "100"], "below the sweep's smallest size"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_usage_errors_are_one_line_and_status_2(capsys, argv, fragment):
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert fragment in one_error_line(err)


def test_what_the_machine_lacks_is_status_3(capsys, monkeypatch, tmp_path):
    """An adapter, a package or a file gpuops installed that is not there is no usage error: status 3."""
    status, _, err = run(capsys, "op", "sign", "-a", "no-such-adapter", "-q")
    assert status == 3 and "no adapter matches 'no-such-adapter'" in one_error_line(err)
    from gpuops import shaders

    emptied = tmp_path / "wgsl"  # an installation whose shaders went missing
    monkeypatch.setattr(shaders, "WGSL_DIR", emptied)
    shaders.wgsl_file.cache_clear()
    status, _, err = run(capsys, "op", "sign", "--sizes", "64", "-i", "1", "-w", "0", "-q")
    shaders.wgsl_file.cache_clear()
    assert status == 3
    assert one_error_line(err).startswith(f"cannot access {emptied / 'loop' / 'params.wgsl'}: No such file or directory")
    # A file the user named is a usage error.
    status, _, err = run(capsys, "targets", "--render", tmp_path / "missing.json")
    assert status == 2 and one_error_line(err).startswith(f"cannot access {tmp_path / 'missing.json'}")
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "3 the installation or the machine cannot do it" in " ".join(out.split())


# -------------------------------------------------------------------------------------------- sweep, default

def test_sweep_writes_table_json_and_says_about_the_plot(capsys, tmp_path):
    path = tmp_path / "sweep.json"
    status, out, err = run(capsys, "sweep", "--ops", "sign", "is_infinity", "--dtypes", "float32,int8",
                           "--max-elements", "4096", "-i", "2", "-w", "1", "--json", path)
    assert status == 0, err
    assert "[9/9]" in err  # progress
    doc = json.loads(path.read_text())
    validate_document(doc)
    got = sorted((r["operator"], r["dtype"], r["elements"]) for r in doc["results"])
    want = sorted([("ELEMENT_WISE_SIGN", t, n) for t in ("FLOAT32", "INT8") for n in (1024, 2048, 4096)]
                  + [("ELEMENT_WISE_IS_INFINITY", "FLOAT32", n) for n in (1024, 2048, 4096)])
    assert got == want  # is_infinity has no INT8: skipped, not an error
    assert doc["settings"]["max_elements"] == 4096
    try:
        import matplotlib  # noqa: F401

        assert (tmp_path / "sweep.png").stat().st_size > 0
    except ImportError:
        assert "plot skipped: matplotlib is not installed" in out


def test_default_is_the_main_job(capsys, tmp_path):
    path = tmp_path / "default.json"
    status, out, err = run(capsys, "-i", "2", "-w", "1", "--elements", "2048", "--ops", "sign", "modulus_floor",
                           "--dtypes", "float32", "float16", "-q", "--json", path)
    assert status == 0, err
    assert err == ""  # -q: no progress
    assert "default benchmark: 4 cases of 2048 elements" in out
    assert re.search(r"^sign\s+float16\s+2048\s+packed\s", out, re.M)
    doc = json.loads(path.read_text())
    validate_document(doc)
    assert doc["command"] == "default" and len(doc["results"]) == 4


def test_entry_point_runs_as_a_module():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    done = subprocess.run([sys.executable, "-m", "gpuops.bench", "model", str(EXAMPLE)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Resource 'A': -1, 0, 0, 1, 1, 0" in done.stdout.splitlines()
    done = subprocess.run([sys.executable, "-m", "gpuops.bench", "op", "sign", "--layout", "nope"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("gpuops-bench: error: argument --layout") and "Traceback" not in done.stderr


# -------------------------------------------------------------------------------------------- model: examples

def printed_resources(out: str) -> dict[str, list[str]]:
    found = {}
    for line in out.splitlines():
        match = re.fullmatch(r"Resource '([^']+)': (.*)", line)
        if match:
            found[match.group(1)] = match.group(2).split(", ")
    return found


def as_array(words: list[str], dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    values = [float(w) for w in words] if dtype.kind == "f" else [int(w) for w in words]
    return np.array(values, dtype)


def _sign(x):
    return reference("ELEMENT_WISE_SIGN", None, gpuops.DataType.from_numpy(x.dtype), x)


def _expect_sign_in_place():
    a = np.array([-2, -0.0, 0, 3, np.inf, np.nan], np.float32)
    return {"A": _sign(a)}


def _expect_sign_int8_sequence():
    x = np.array([-128 + 36 * i for i in range(8)], np.int8)
    h = np.array([65504, -65504, 4, 3, -4, -6, np.nan, np.inf, -np.inf, -0.0, 1e-7, -6e-8], np.float16)
    return {"X": x, "Y": _sign(x), "H": h, "HOut": _sign(h)}


def _expect_is_nan_float16():
    x = np.array([65504, -65504, 4, 3, -4, -6, np.nan, np.inf, -np.inf, np.nan, 0.1, -0.0], np.float16)
    return {"X": x, "Out8": np.isnan(x).astype(np.uint8), "Out32": np.isnan(x).astype(np.uint32)}


def _expect_is_infinity_modes():
    big = np.finfo(np.float32).max
    x = np.array([np.inf, -np.inf, np.nan, 0, -0.0, big, -big, np.inf, -np.inf, 1], np.float32)
    return {"X": x, "Either": np.isinf(x).astype(np.uint8), "Positive": np.isposinf(x).astype(np.uint8),
            "Negative": np.isneginf(x).astype(np.uint8)}


def _expect_modulus_floor_broadcast():
    a = (-7.5 + 1.25 * np.arange(12)).astype(np.float32)
    b = np.array([2, -3, 0.75, np.inf], np.float32)
    out = reference("ELEMENT_WISE_MODULUS_FLOOR", None, gpuops.DataType.FLOAT32, a.reshape(3, 4), b)
    return {"A": a, "B": b, "Out": out.reshape(-1)}


def _expect_modulus_truncate_offsets():
    data = np.array([-7, 7, -7, 7, 3, 3, -3, -3, -2**31, 100, -100, 5, -1, 0, 9, -9], np.int32)
    result = np.full(16, 1234, np.int32)
    fmod = lambda a, b: reference("ELEMENT_WISE_MODULUS_TRUNCATE", None, gpuops.DataType.INT32, a, b)  # noqa: E731
    result[8:12] = fmod(data[0:4], data[4:8])
    data[8:12] = fmod(data[8:12], data[12:16])  # in place
    return {"Data": data, "Result": result}


def _expect_modulus_floor_npy():
    a, b = np.load(MODELS / "modulus_floor_npy_a.npy"), np.load(MODELS / "modulus_floor_npy_b.npy")
    return {"Out": reference("ELEMENT_WISE_MODULUS_FLOOR", None, gpuops.DataType.FLOAT32, a, b).reshape(-1)}


EXPECTATIONS = {
    "sign_in_place.json": _expect_sign_in_place,
    "sign_int8_sequence.json": _expect_sign_int8_sequence,
    "is_nan_float16.json": _expect_is_nan_float16,
    "is_infinity_modes.json": _expect_is_infinity_modes,
    "modulus_floor_broadcast.json": _expect_modulus_floor_broadcast,
    "modulus_truncate_offsets.json": _expect_modulus_truncate_offsets,
    "modulus_floor_npy.json": _expect_modulus_floor_npy,
}
WRITTEN = {"modulus_floor_broadcast.json": ("modulus_floor_broadcast_out.npy", "Out", (3, 4)),
           "modulus_floor_npy.json": ("modulus_floor_npy_out.npy", "Out", (2, 4))}


def test_every_example_model_has_an_expectation():
    assert sorted(p.name for p in MODELS.glob("*.json")) == sorted(EXPECTATIONS)
    covered = " ".join(p.read_text() for p in MODELS.glob("*.json"))
    for operator in ("SIGN", "IS_NAN", "IS_INFINITY", "MODULUS_FLOOR", "MODULUS_TRUNCATE"):
        assert f"ELEMENT_WISE_{operator}\"" in covered


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_example_model_prints_what_numpy_computes(capsys, tmp_path, name):
    status, out, err = run(capsys, "model", MODELS / name, "-i", "2", "--output-dir", tmp_path)
    assert status == 0, err
    printed = printed_resources(out)
    expected = EXPECTATIONS[name]()
    assert set(printed) == set(expected)
    for resource, want in expected.items():
        assert_same_bits(as_array(printed[resource], want.dtype), want)
    dispatches = [line for line in out.splitlines() if line.startswith("Dispatch '")]
    assert dispatches and all(re.fullmatch(r"Dispatch '\w+': 2 iterations, [\d.]+ ms median \(CPU\), [\d.]+ ms "
                                           r"median \(GPU\)", line) for line in dispatches)
    if name in WRITTEN:
        target, resource, shape = WRITTEN[name]
        assert f"Resource '{resource}' written to {tmp_path / target}" in out.splitlines()
        written = np.load(tmp_path / target)
        assert written.shape == shape
        assert_same_bits(written.reshape(-1), expected[resource])


def test_dxdispatch_example_prints_exactly_its_line(capsys):
    status, out, err = run(capsys, "model", EXAMPLE)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Running on '")
    assert re.fullmatch(r"Dispatch 'sign': 1 iterations, [\d.]+ ms median \(CPU\), [\d.]+ ms median \(GPU\)",
                        lines[1])
    assert lines[2] == "Resource 'A': -1, 0, 0, 1, 1, 0"


def test_model_timing_flags_like_dxdispatch(capsys):
    status, out, err = run(capsys, "model", EXAMPLE, "-i", "4", "-r", "3", "-w", "1", "-v", "2")
    assert status == 0, err
    assert "Initialize 'sign': " in out
    assert "Dispatch 'sign': 4 iterations" in out.splitlines()
    assert re.search(r"^CPU Timings \(Cold\) : 1 samples, ", out, re.M)
    assert re.search(r"^GPU Timings \(Hot\)  : 3 samples, [\d.]+ ms average", out, re.M)
    assert re.search(r"^iteration 3: [\d.]+ ms \(CPU\), [\d.]+ ms \(GPU\)$", out, re.M)
    assert "Resource 'A': -1, 0, 0, 1, 1, 0" in out
    status, out, err = run(capsys, "model", EXAMPLE, "-t", "5")
    assert status == 0, err
    assert re.search(r"^Dispatch 'sign': \d+ iterations, ", out, re.M)


def test_model_show_adapters_and_feature_level(capsys):
    status, out, _ = run(capsys, "model", "-s")
    assert status == 0 and "backend: " in out
    # 4-D tensors run at feature level 2_1; IS_INFINITY does not exist at 2_0.
    status, out, err = run(capsys, "model", MODELS / "sign_int8_sequence.json", "--dml_feature_level", "2.1")
    assert status == 0, err
    status, _, err = run(capsys, "model", MODELS / "is_infinity_modes.json", "--dml_feature_level", "2_0")
    assert status == 2
    assert "dispatchables.either.type: the operator does not exist at feature level 2_0" in one_error_line(err)


def test_raw_binary_source_and_target(capsys, tmp_path, monkeypatch):
    values = np.array([-3, 0, 7, -1], np.int16)
    (tmp_path / "x.bin").write_bytes(values.tobytes())
    model = {"resources": {"X": {"initialValuesDataType": "INT16", "initialValues": {"sourcePath": "x.bin"}}},
             "dispatchables": {"s": {"type": "DML_OPERATOR_ELEMENT_WISE_SIGN",
                                     "desc": {"InputTensor": {"DataType": "INT16", "Sizes": [4]},
                                              "OutputTensor": {"DataType": "INT16", "Sizes": [4]}}}},
             "commands": [{"type": "dispatch", "dispatchable": "s", "bindings": {"InputTensor": "X",
                                                                                  "OutputTensor": "X"}},
                          {"type": "writeFile", "resource": "X", "targetPath": "out/y.bin"}]}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # sources are read next to the model, targets written in the current directory
    status, out, err = run(capsys, "model", path)
    assert status == 0, err
    assert f"Resource 'X' written to {elsewhere / 'out' / 'y.bin'}" in out.splitlines()
    assert np.frombuffer((elsewhere / "out" / "y.bin").read_bytes(), np.int16).tolist() == [-1, 0, 1, -1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "m.json", "x.bin"]


def test_print_format_matches_dxdispatch():
    f32, f16, u8 = gpuops.DataType.FLOAT32, gpuops.DataType.FLOAT16, gpuops.DataType.UINT8
    assert [format_value(np.float32(v), f32) for v in (-1.0, 0.0, -0.0, 1.0, np.nan, np.inf, -np.inf)] == \
        ["-1", "0", "-0", "1", "nan", "inf", "-inf"]
    assert format_value(np.float32(0.1), f32) == "0.1" and format_value(np.float16(0.1), f16) == "0.1"
    assert float(format_value(np.float32(3.4028235e38), f32)) == np.float32(3.4028235e38)
    assert format_value(np.uint8(255), u8) == "255"


# ------------------------------------------------------------------------------------ model: malformed models

def example() -> dict:
    return json.loads(EXAMPLE.read_text())


def is_infinity(mode) -> dict:
    return {"type": "DML_OPERATOR_ELEMENT_WISE_IS_INFINITY",
            "desc": {"InputTensor": {"DataType": "FLOAT32", "Sizes": [6]},
                     "OutputTensor": {"DataType": "UINT8", "Sizes": [6]}, "InfinityMode": mode}}


def edit(change):
    def build():
        model = example()
        change(model)
        return model
    return build


MALFORMED = [  # (id, model builder, JSON path, message fragment)
    ("unknown data type", edit(lambda m: m["resources"]["A"].update(initialValuesDataType="FLOAT99")),
     "resources.A.initialValuesDataType", "unknown data type 'FLOAT99'"),
    ("missing initialValues", edit(lambda m: m["resources"]["A"].pop("initialValues")),
     "resources.A.initialValues", "missing (required)"),
    ("bad valueCount", edit(lambda m: m["resources"]["A"].update(initialValues={"valueCount": 0, "value": 1})),
     "resources.A.initialValues.valueCount", "valueCount must be a positive integer"),
    ("valueCount not a number", edit(lambda m: m["resources"]["A"].update(
        initialValues={"valueCount": "6", "valueStart": 0, "valueDelta": 1})),
     "resources.A.initialValues.valueCount", "valueCount must be a positive integer"),
    ("string in an integer resource", edit(lambda m: m["resources"]["A"].update(initialValuesDataType="INT32")),
     "resources.A.initialValues[4]", "strings ('nan', 'inf', '-inf') are for floating-point types"),
    ("value out of range", edit(lambda m: m["resources"].update(
        B={"initialValuesDataType": "UINT8", "initialValues": [1, 256]})),
     "resources.B.initialValues[1]", "256 does not fit UINT8 (0 to 255)"),
    ("sizeInBytes smaller than the values", edit(lambda m: m["resources"]["A"].update(sizeInBytes=20)),
     "resources.A.sizeInBytes", "20 is smaller than the 24 bytes the initial values need"),
    ("missing source file", edit(lambda m: m["resources"]["A"].update(initialValues={"sourcePath": "nope.npy"})),
     "resources.A.initialValues.sourcePath", "'nope.npy' not found"),
    ("unknown dispatchable", edit(lambda m: m["commands"][0].update(dispatchable="sgn")),
     "commands[0].dispatchable", "unknown dispatchable 'sgn'; defined: sign"),
    ("unknown binding name", edit(lambda m: m["commands"][0]["bindings"].update(InputTensors="A")),
     "commands[0].bindings.InputTensors", "unknown binding; DML_OPERATOR_ELEMENT_WISE_SIGN binds InputTensor, "
                                          "OutputTensor"),
    ("missing binding", edit(lambda m: m["commands"][0]["bindings"].pop("OutputTensor")),
     "commands[0].bindings", "OutputTensor is not bound"),
    ("unknown resource", edit(lambda m: m["commands"][0]["bindings"].update(OutputTensor="B")),
     "commands[0].bindings.OutputTensor", "unknown resource 'B'; defined: A"),
    ("unknown resource in print", edit(lambda m: m["commands"][1].update(resource="Out")),
     "commands[1].resource", "unknown resource 'Out'"),
    ("unsupported operator", edit(lambda m: m["dispatchables"]["sign"].update(type="DML_OPERATOR_GEMM")),
     "dispatchables.sign.type", "DML_OPERATOR_GEMM is not implemented by gpuops"),
    ("unsupported operator, short name", edit(lambda m: m["dispatchables"]["sign"].update(type="ELEMENT_WISE_ADD")),
     "dispatchables.sign.type", "DML_OPERATOR_ELEMENT_WISE_ADD is not implemented by gpuops"),
    ("hlsl dispatchable", edit(lambda m: m["dispatchables"].update(
        add={"type": "hlsl", "sourcePath": "add.hlsl", "compiler": "dxc"})),
     "dispatchables.add.type", "'hlsl' dispatchables (HLSL compute shaders) are not supported"),
    ("bad InfinityMode", edit(lambda m: m["dispatchables"].update(inf=is_infinity("DML_IS_INFINITY_MODE_BOTH"))),
     "dispatchables.inf.desc.InfinityMode", "unknown infinity mode 'DML_IS_INFINITY_MODE_BOTH'"),
    ("InfinityMode out of range", edit(lambda m: m["dispatchables"].update(inf=is_infinity(3))),
     "dispatchables.inf.desc.InfinityMode", "unknown infinity mode 3"),
    ("unknown desc field", edit(lambda m: m["dispatchables"]["sign"]["desc"].update(ATensor={})),
     "dispatchables.sign.desc.ATensor", "unknown key; expected: InputTensor, OutputTensor"),
    ("desc refused by DirectML's rules", edit(
        lambda m: m["dispatchables"]["sign"]["desc"]["OutputTensor"].update(DataType="FLOAT16")),
     "dispatchables.sign.desc.OutputTensor.DataType", "FLOAT16 differs from InputTensor.DataType FLOAT32"),
    ("DimensionCount disagrees", edit(
        lambda m: m["dispatchables"]["sign"]["desc"]["InputTensor"].update(DimensionCount=2)),
     "dispatchables.sign.desc.InputTensor.DimensionCount", "2, but Sizes has 1 values"),
    ("elementOffset off 16 bytes", edit(lambda m: m["commands"][0]["bindings"].update(
        InputTensor={"name": "A", "elementOffset": 1})),
     "commands[0].bindings.InputTensor.elementOffset", "byte offset 4; DirectML binds at multiples of 16 bytes"),
    ("binding too small", edit(lambda m: m["commands"][0]["bindings"].update(
        InputTensor={"name": "A", "elementOffset": 4})),
     "commands[0].bindings.InputTensor", "offers 8 bytes from byte offset 16"),
    ("unknown command type", edit(lambda m: m["commands"].append({"type": "copy", "resource": "A"})),
     "commands[2].type", "unknown command type 'copy'; expected dispatch, print or writeFile"),
    ("writeFile to an image", edit(lambda m: m["commands"].append(
        {"type": "writeFile", "resource": "A", "targetPath": "a.png"})),
     "commands[2].targetPath", "only .npy, .dat and .bin files are supported"),
    ("non-object top level", lambda: [example()], "", "the top level must be an object"),
    ("missing commands", edit(lambda m: m.pop("commands")), "commands", "missing (required)"),
    ("commands not an array", edit(lambda m: m.update(commands={})), "commands", "expected an array, got an object"),
    ("unknown top-level key", edit(lambda m: m.update(resource={})), "resource", "unknown key"),
    # Checked against the real buffers, before any command runs:
    ("in place where DirectML forbids it", edit(lambda m: (
        m["dispatchables"].update(nan={"type": "DML_OPERATOR_ELEMENT_WISE_IS_NAN",
                                       "desc": {"InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                                                "OutputTensor": {"DataType": "UINT32", "Sizes": [4]}}}),
        m["commands"].insert(0, {"type": "dispatch", "dispatchable": "nan",
                                 "bindings": {"InputTensor": "A", "OutputTensor": "A"}}))),
     "commands[0].bindings.OutputTensor", "does not support in-place execution"),
]


@pytest.mark.parametrize("builder, path, fragment", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_model_is_refused_with_its_key_path(capsys, tmp_path, builder, path, fragment):
    model = tmp_path / "model.json"
    model.write_text(json.dumps(builder()))
    status, out, err = run(capsys, "model", model)
    assert status == 2
    message = one_error_line(err)
    prefix = f"{model}: {path}: " if path else f"{model}: "
    assert message.startswith(prefix), message
    assert fragment in message
    assert "Resource '" not in out  # nothing ran


def test_unreadable_models_are_refused_cleanly(capsys, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"resources": {}, "dispatchables": {},\n "commands": [}')
    status, _, err = run(capsys, "model", broken)
    assert status == 2 and "not valid JSON: line 2 column" in one_error_line(err)
    status, _, err = run(capsys, "model", tmp_path / "missing.json")
    assert status == 2 and "cannot read the model" in one_error_line(err)
    status, _, err = run(capsys, "model")
    assert status == 2 and "give a model file" in one_error_line(err)


# ---------------------------------------------------------------------------------------------- small pieces

def test_bench_reference_follows_the_contract():
    x = np.array([-2.0, -0.0, 0.0, np.nan, np.inf], np.float32)
    got = bench_reference.expected("ELEMENT_WISE_SIGN", None, gpuops.DataType.FLOAT32, x)
    assert got.view(np.uint32).tolist() == np.array([-1, 0, 0, 0, 1], np.float32).view(np.uint32).tolist()
    assert bench_reference.compare(got, got.copy()) is None
    nan_payload = np.array([np.nan], np.float32)
    other_nan = np.array([0x7fc00001], np.uint32).view(np.float32)
    assert bench_reference.compare(nan_payload, other_nan) is None
    mismatch = bench_reference.compare(np.array([0.0], np.float32), np.array([-0.0], np.float32))
    assert mismatch is not None and mismatch.count == 1


def test_bench_reference_reads_each_rows_attribute():
    x = np.array([-np.inf, -1.0, np.inf, np.nan], np.float32)
    u8 = gpuops.DataType.UINT8
    for mode, want in [(None, [1, 0, 1, 0]), ("positive", [0, 0, 1, 0]), (2, [1, 0, 0, 0])]:
        got = bench_reference.expected("ELEMENT_WISE_IS_INFINITY", mode, u8, x)
        assert got.dtype == np.uint8 and got.tolist() == want, mode
    assert bench_reference.expected("is_nan", None, gpuops.DataType.UINT32, x).dtype == np.uint32
    with pytest.raises(gpuops.ValidationError, match=r"ELEMENT_WISE_SIGN: SignDesc\.mode: 1: the operator has no "):
        bench_reference.expected("ELEMENT_WISE_SIGN", 1, gpuops.DataType.FLOAT32, x)
    with pytest.raises(gpuops.ValidationError, match=r"IsInfinityDesc\.infinity_mode: unknown infinity mode 'up'"):
        bench_reference.expected("ELEMENT_WISE_IS_INFINITY", "up", u8, x)


class _FakeTorch:
    """Records which torch function a row's torch_reference calls, and how."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: (name, len(args), "out" in kwargs and kwargs["out"] is not None)


@pytest.mark.parametrize(("operator", "mode", "out_given", "call"), [
    ("ELEMENT_WISE_SIGN", None, False, ("sign", 1, False)),
    ("ELEMENT_WISE_IS_NAN", None, False, ("isnan", 1, False)),
    ("ELEMENT_WISE_IS_NAN", None, True, ("ne", 2, True)),  # isnan has no out=
    ("ELEMENT_WISE_IS_INFINITY", None, False, ("isinf", 1, False)),
    ("ELEMENT_WISE_IS_INFINITY", 1, False, ("isposinf", 1, False)),
    ("ELEMENT_WISE_IS_INFINITY", 2, False, ("isneginf", 1, False)),
    ("ELEMENT_WISE_MODULUS_FLOOR", None, True, ("remainder", 2, True)),
    ("ELEMENT_WISE_MODULUS_TRUNCATE", None, True, ("fmod", 2, True)),
])
def test_torch_comparison_calls_the_rows_torch_function(operator, mode, out_given, call):
    from gpuops.bench.torch_compare import _function

    arity = len(gpuops.operators.spec_by_name(operator).inputs)
    function = _function(_FakeTorch(), operator, mode, out_given)
    assert function(*(["x"] * arity), "out" if out_given else None) == call


def test_rows_name_what_the_benchmarks_and_the_numpy_api_read():
    from gpuops.operators import OPERATORS

    for spec in OPERATORS:
        assert spec.numpy_reference and spec.torch_reference and isinstance(spec.numpy_ufunc, np.ufunc), spec.name
        assert callable(getattr(gpuops, spec.numpy_name)), spec.name
        modes = spec.modes()
        assert len(modes) == len({tuple(mode.items()) for mode in modes}) == \
            int(np.prod([len(a.values) for a in spec.attributes]))
        for mode in modes:  # every combination makes a desc
            f32 = gpuops.TensorDesc(gpuops.DataType.FLOAT32, (4,))
            out = gpuops.TensorDesc(spec.output_type(gpuops.DataType.FLOAT32), (4,))
            desc = spec.desc_type(**{name: f32 for name in spec.inputs}, **{spec.output: out}, **mode)
            assert {name: getattr(desc, name) for name in mode} == dict(mode)
    assert len(gpuops.operators.spec_by_name("is_infinity").modes()) == 3
    assert make_case("is_nan", "float16").out_dtype == gpuops.DataType.UINT8
    assert make_case("is_infinity", "float32").out_dtype == gpuops.DataType.UINT8
    assert make_case("modulus_floor", "int16").out_dtype == gpuops.DataType.INT16


def test_bytes_moved_counts_distinct_elements():
    case = make_case("modulus_truncate", "int16", (8, 32), "broadcast-b")
    assert bytes_moved(case) == (256 + 32 + 256) * 2
    assert bytes_moved(make_case("is_nan", "float16", (1000,), "broadcast-a")) == 1 * 2 + 1000 * 1


# ------------------------------------------------------------------------- PyTorch and CuPy: the same layouts

class _Tensor(np.ndarray):
    """A NumPy array with the few tensor methods the comparisons call."""

    def cuda(self):
        return self

    def permute(self, *dims):
        return self.transpose(dims)

    def expand(self, shape):
        return np.broadcast_to(self, shape).view(_Tensor)

    def dim(self):
        return self.ndim

    def numel(self):
        return self.size

    def element_size(self):
        return self.itemsize

    def copy_(self, source):
        self[...] = source
        return self


class _Event:
    def __init__(self, **kwargs):
        pass

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, end) -> float:
        return 0.002  # ms


class FakeGpuLibrary:
    """NumPy standing in for PyTorch or CuPy on CUDA: what torch_compare and cupy_compare call, every call given an
    out= kept in `calls` as (function name, arguments, out)."""

    channels_last = "channels_last"
    _NAMES: ClassVar[dict[str, str]] = {"ne": "not_equal", "eq": "equal"}  # torch's names of NumPy's functions

    def __init__(self):
        self.calls: list[tuple[str, tuple, np.ndarray]] = []
        self.cuda = type("cuda", (), {
            "Event": _Event, "synchronize": staticmethod(lambda: None), "empty_cache": staticmethod(lambda: None),
            "is_available": staticmethod(lambda: True), "get_elapsed_time": staticmethod(lambda start, end: 0.002),
            "Device": staticmethod(lambda *args: type("device", (), {"synchronize": lambda self: None})())})

    @staticmethod
    def from_numpy(x):
        return x.view(_Tensor)

    @staticmethod
    def asarray(x):
        return np.array(x).view(_Tensor)

    @staticmethod
    def empty(shape, dtype=None, device=None, memory_format=None):
        if memory_format == FakeGpuLibrary.channels_last:
            n, c, h, w = shape
            return np.empty((n, h, w, c), dtype).transpose(0, 3, 1, 2).view(_Tensor)
        return np.empty(shape, dtype).view(_Tensor)

    @staticmethod
    def get_default_memory_pool():
        return type("pool", (), {"free_all_blocks": lambda self: None})()

    def __getattr__(self, name):
        if name == "bool":
            return np.bool_
        found = getattr(np, self._NAMES.get(name, name))
        if isinstance(found, type):  # a dtype: float32, uint8, ...
            return found

        def call(*args, out=None):
            if out is None:
                return found(*args)
            self.calls.append((name, args, out))
            with np.errstate(all="ignore"):  # x % 0 and friends, as on the GPU
                return found(*args, out=out)
        return call


def fake_gpu_libraries_on(monkeypatch) -> dict[str, FakeGpuLibrary]:
    """PyTorch and CuPy on CUDA, faked with NumPy: each time_* call runs its layout for real, on the host."""
    from gpuops.bench import cupy_compare, torch_compare

    libraries = {"torch": FakeGpuLibrary(), "cupy": FakeGpuLibrary()}
    monkeypatch.setattr(torch_compare, "torch_cuda", lambda: libraries["torch"])
    monkeypatch.setattr(cupy_compare, "cupy_cuda", lambda: libraries["cupy"])
    return libraries


@pytest.fixture
def fake_gpu_libraries(monkeypatch):
    return fake_gpu_libraries_on(monkeypatch)


def _timer(library: str):
    from gpuops.bench.cupy_compare import time_cupy
    from gpuops.bench.torch_compare import time_torch

    return {"torch": time_torch, "cupy": time_cupy}[library]


def _element_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_comparisons_write_the_cases_output_layout(fake_gpu_libraries, library):
    """A transposed input is read into a row-major output and an NCHW one written channels-last: the layout
    conversion gpuops does, not an operation in the input's order."""
    from gpuops.bench import torch_compare as tc

    rng = np.random.default_rng(0)
    memory = rng.standard_normal(6 * 10).astype(np.float32)
    transposed = memory.reshape(10, 6).T  # (6, 10) stored column-major, as the targets' transposed inputs
    nchw = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    row = np.broadcast_to(rng.standard_normal(6).astype(np.float32) + 3, (4, 6))
    cases = [  # operator, inputs, layout, the output's element strides, NumPy's result
        ("ELEMENT_WISE_SIGN", [transposed], tc.ROW_MAJOR_OUT, (10, 1), np.sign(transposed)),
        ("ELEMENT_WISE_SIGN", [nchw], tc.CHANNELS_LAST_OUT, (60, 1, 15, 3), np.sign(nchw)),
        ("ELEMENT_WISE_SIGN", [nchw], tc.CONTIGUOUS, (60, 20, 5, 1), np.sign(nchw)),
        ("ELEMENT_WISE_MODULUS_FLOOR", [a, row], tc.BROADCAST, (6, 1), np.remainder(a, row)),
        ("ELEMENT_WISE_SIGN", [memory], tc.STRIDED_OUT, (2,), np.sign(memory)),
    ]
    for operator, inputs, layout, strides, want in cases:
        result = _timer(library)(operator, None, inputs, np.float32, stats.StoppingRule(3), 1, layout)
        name, args, out = fake_gpu_libraries[library].calls[-1]
        assert _element_strides(out) == strides, (layout, name)
        assert np.array_equal(out, want) and all(np.array_equal(x, y) for x, y in zip(args, inputs)), layout
        read = sum(x.nbytes for x in inputs) - (row.nbytes - row[0].nbytes if layout == tc.BROADCAST else 0)
        assert result == {"gpu_median_ns": 2000.0, "gpu_min_ns": 2000.0, "gpu_max_ns": 2000.0, "gpu_noise": 0.0,
                          "iterations": 3, "stopped_on": "min_samples", "gpu_samples_ns": [2000.0] * 3,
                          "bytes": read + want.nbytes, "gbps": (read + want.nbytes) / 2000.0, "layout": layout}


@pytest.mark.parametrize("library", ["torch", "cupy"])
@pytest.mark.parametrize(("operator", "mode", "numpy_function"), [
    ("ELEMENT_WISE_IS_NAN", None, np.isnan),
    ("ELEMENT_WISE_IS_INFINITY", 0, np.isinf),
    ("ELEMENT_WISE_IS_INFINITY", 1, np.isposinf),
    ("ELEMENT_WISE_IS_INFINITY", 2, np.isneginf),
])
def test_predicates_write_into_the_uint8_output(fake_gpu_libraries, library, operator, mode, numpy_function):
    """torch.isinf takes no out=: the comparison still writes the row-major uint8 output itself, not a tensor in
    the input's order that would then need a copy."""
    from gpuops.bench.torch_compare import ROW_MAJOR_OUT

    x = np.array([[0.0, np.inf, -np.inf], [np.nan, -1.0, 2.0]], np.float32).T  # transposed storage
    result = _timer(library)(operator, mode, [x], np.uint8, stats.StoppingRule(2), 0, ROW_MAJOR_OUT)
    assert result["layout"] == ROW_MAJOR_OUT and result["bytes"] == x.nbytes + x.size
    *_, out = fake_gpu_libraries[library].calls[-1]
    assert _element_strides(out) == (2, 1)  # row-major (3, 2)
    assert out.view(np.uint8).tolist() == numpy_function(x).astype(np.uint8).tolist()


def test_comparisons_refuse_a_layout_the_inputs_cannot_take(fake_gpu_libraries):
    from gpuops.bench.torch_compare import CHANNELS_LAST_OUT, time_torch

    with pytest.raises(gpuops.ValidationError, match=r"'channels-last out' needs 4-D \(N, C, H, W\) inputs; got "
                                                     r"shape \(8, 8\)"):
        time_torch("ELEMENT_WISE_SIGN", None, [np.ones((8, 8), np.float32)], np.float32, stats.StoppingRule(1), 0,
                   CHANNELS_LAST_OUT)
    with pytest.raises(gpuops.ValidationError, match="comparison layout 'diagonal'; allowed: contiguous"):
        _timer("cupy")("ELEMENT_WISE_SIGN", None, [np.ones(8, np.float32)], np.float32, stats.StoppingRule(1), 0,
                       "diagonal")


def test_comparisons_say_when_their_library_is_missing():
    from gpuops.bench.cupy_compare import cupy_cuda, time_cupy
    from gpuops.bench.torch_compare import ROW_MAJOR_OUT, time_torch, torch_cuda

    x = np.ones((4, 4), np.float32)
    if torch_cuda() is None:
        assert time_torch("sign", None, [x], np.float32, stats.StoppingRule(1), 0, ROW_MAJOR_OUT) == \
            {"error": "PyTorch with CUDA is not available"}
    if cupy_cuda() is None:
        assert time_cupy("sign", None, [x], np.float32, stats.StoppingRule(1), 0, ROW_MAJOR_OUT) == \
            {"error": "CuPy with CUDA is not available"}


def test_cupy_runs_each_rows_numpy_function():
    from gpuops.bench.cupy_compare import function_name

    assert [function_name(op, mode) for op, mode in [
        ("ELEMENT_WISE_SIGN", None), ("ELEMENT_WISE_IS_NAN", None), ("ELEMENT_WISE_IS_INFINITY", None),
        ("ELEMENT_WISE_IS_INFINITY", 1), ("ELEMENT_WISE_IS_INFINITY", "negative"), ("ELEMENT_WISE_MODULUS_FLOOR", None),
        ("ELEMENT_WISE_MODULUS_TRUNCATE", None), ("COPY", None)]] == \
        ["sign", "isnan", "isinf", "isposinf", "isneginf", "remainder", "fmod", "copyto"]


def test_nhwc_strides_are_channels_last_and_nchw_sizes_fill_the_count():
    from gpuops.bench.workload import nchw_sizes, nhwc_strides

    for sizes in [(4, 64, 512, 512), (2, 3, 4, 5), (1, 1, 1, 1)]:
        n, c, h, w = sizes
        assert nhwc_strides(sizes) == _element_strides(np.empty((n, h, w, c), np.int8).transpose(0, 3, 1, 2))
    with pytest.raises(gpuops.ValidationError, match=r"NHWC strides need 4 sizes \(N, C, H, W\); got \(8, 8\)"):
        nhwc_strides((8, 8))
    assert nchw_sizes(1 << 26) == (4, 64, 512, 512)
    assert nchw_sizes(1 << 27) == (4, 64, 512, 1024)
    assert nchw_sizes(4096) == (4, 64, 4, 4)
    assert nchw_sizes(3 * (1 << 20)) == (4, 64, 96, 128)
    for count in (1, 63, 100, 1000, 4096 + 7):
        sizes = nchw_sizes(count)
        assert len(sizes) == 4 and 0 < np.prod(sizes) <= count and sizes[2] <= sizes[3], count


@pytest.mark.parametrize(("layout", "expected"), [
    ("packed", "contiguous"), ("transposed", "row-major out"), ("nchw-to-nhwc", "channels-last out"),
    ("broadcast-b", "broadcast"), ("strided", "contiguous")])
def test_op_layouts_compare_in_the_same_layout(layout, expected):
    from gpuops.bench.workload import compare_layout

    sizes = (2, 3, 4, 5) if layout == "nchw-to-nhwc" else (4, 6)
    assert compare_layout(make_case("modulus_floor", "float32", sizes, layout)) == expected
    assert compare_layout(make_case("modulus_floor", "float32", (4, 6), "broadcast-a")) == "contiguous"
    assert compare_layout(make_case("sign", "float32", (4, 6), "broadcast-a")) == "broadcast"  # its last input


def test_op_nchw_to_nhwc_compares_channels_last(capsys, tmp_path, fake_gpu_libraries):
    path = tmp_path / "op.json"
    status, out, err = run(capsys, "op", "sign", "--dtype", "float16", "--sizes", "2,8,4,6", "--layout",
                           "nchw-to-nhwc", "-i", "2", "-w", "1", "--compare", "torch,cupy", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_document(doc)
    (row,) = doc["results"]
    assert (row["layout"], row["exact"], row["sizes"]) == ("nchw-to-nhwc", True, [2, 8, 4, 6])
    assert row["strides"] == {"InputTensor": [192, 24, 6, 1], "OutputTensor": [192, 1, 48, 8]}
    for library in ("torch", "cupy"):
        assert row["compare"][library]["layout"] == "channels-last out"
        *_, written = fake_gpu_libraries[library].calls[-1]
        assert _element_strides(written) == (192, 1, 48, 8)
    assert "torch GB/s (channels-last out)" in out and "cupy GB/s (channels-last out)" in out


def test_sweep_nchw_to_nhwc_runs_4d_sizes(capsys, tmp_path):
    path = tmp_path / "sweep.json"
    status, _, err = run(capsys, "sweep", "--ops", "is_nan", "--dtypes", "float16", "--layout", "nchw-to-nhwc",
                         "--max-elements", "2048", "-i", "1", "-w", "0", "-q", "--json", path, "--plot",
                         tmp_path / "sweep.png")
    assert status == 0, err
    rows = json.loads(path.read_text())["results"]
    assert [(r["sizes"], r["strides"]["OutputTensor"], r["exact"]) for r in rows] == \
        [([4, 64, 2, 2], [256, 1, 128, 64], True), ([4, 64, 2, 4], [512, 1, 256, 64], True)]


def test_op_transposed_compares_into_a_row_major_output(capsys, tmp_path, fake_gpu_libraries):
    path = tmp_path / "op.json"
    status, out, err = run(capsys, "op", "modulus_truncate", "--sizes", "16,24", "--layout", "transposed", "-i",
                           "2", "-w", "1", "--compare", "torch", "--json", path)
    assert status == 0, err
    (row,) = json.loads(path.read_text())["results"]
    assert row["strides"]["OutputTensor"] == [24, 1] and row["strides"]["ATensor"] == [1, 16]
    assert row["compare"]["torch"]["layout"] == "row-major out"
    name, (a, _), written = fake_gpu_libraries["torch"].calls[-1]
    assert name == "fmod" and written.flags.c_contiguous and _element_strides(a) == (1, 16)
    assert "torch GB/s (row-major out)" in out


def test_copy_roof_splits_copies_over_the_binding_limit():
    """The copy kernel binds at most the adapter's storage binding size: larger copies become several dispatches,
    between a run's own buffers and between the kernel's."""
    from gpuops.bench.timing import CopyKernel, GpuTimer
    from gpuops.bench.workload import Arena

    device = gpuops.Device()
    device.limits = {**dict(device.limits), "max-storage-buffer-binding-size": 4096}
    arena = Arena(device)
    size = 40000  # 9 whole pieces of 4096 bytes and a part of one
    data = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
    source, target = arena.slot(0, size), arena.slot(2, size)
    device.wgpu_device.queue.write_buffer(source, 0, data)
    record = CopyKernel(device).recorder(source, target, size)
    GpuTimer(device).run(record, 1, 0)
    copied = np.frombuffer(device.wgpu_device.queue.read_buffer(target, 0, size), np.uint8)
    assert np.array_equal(copied, data)
    arena.release()
    own = CopyKernel(device, size)
    assert len(own.dispatches) == 10 and own.bytes_moved == 2 * size
    device.wgpu_device.queue.write_buffer(own.src, 0, data[::-1].copy())
    GpuTimer(device).run(own.record, 1, 0)
    assert np.array_equal(np.frombuffer(device.wgpu_device.queue.read_buffer(own.dst, 0, size), np.uint8), data[::-1])
    own.release()


@pytest.mark.parametrize("script", ["broadcast_roof", "strided_roof", "transpose_roof", "modulus_slow_lanes"])
def test_roof_scripts_do_nothing_at_import(monkeypatch, capsys, script):
    """Importing a roof script parses no arguments and opens no device: its work is main()'s."""
    import argparse
    import importlib.util

    def refuse(*args, **kwargs):
        raise AssertionError(f"bench/{script}.py did work at import")

    monkeypatch.setattr(gpuops, "Device", refuse)
    monkeypatch.setattr(gpuops.device, "Device", refuse)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", refuse)
    spec = importlib.util.spec_from_file_location(f"bench_{script}", ROOT / "bench" / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert capsys.readouterr() == ("", "")
    assert callable(module.main)
    monkeypatch.undo()  # --help through main(): argparse inside it, still no device
    monkeypatch.setattr(gpuops, "Device", refuse)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0 and "usage:" in capsys.readouterr().out


def test_transpose_roof_operator_kernels_are_exact(capsys):
    """The minimal operator kernels bench/transpose_roof.py times beside gpuops' give NumPy's results bit for bit,
    as gpuops' own kernel does on the same buffers: a roof is only worth quoting for a kernel that computes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_transpose_roof", ROOT / "bench" / "transpose_roof.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--side", "128", "--tile-rows", "64", "--iterations", "1",
                        "--operators", "sign", "modulus_floor", "modulus_truncate"]) == 0
    checked = [line for line in capsys.readouterr().out.splitlines() if "exact=" in line]
    # per width: the transposing copy, then per operator the minimal kernel and gpuops'
    assert len(checked) == 3 * (1 + 3 * 2)
    assert all("exact=True" in line for line in checked), checked
    assert sum("gpuops (TILES grid)" in line for line in checked) == 9


def test_modulus_slow_lanes_kernels_are_exact(capsys, tmp_path):
    """bench/modulus_slow_lanes.py's minimal kernels give NumPy's remainders bit for bit on the worst-case data, as
    gpuops' own kernels do, and every row is written to its JSON."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_modulus_slow_lanes", ROOT / "bench" / "modulus_slow_lanes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--tensor-mib", "1", "--iterations", "1", "--json", str(tmp_path / "roof.json")]) == 0
    checked = [line for line in capsys.readouterr().out.splitlines() if "exact=" in line]
    assert len(checked) == 3 * 4 and all("exact=True" in line for line in checked), checked
    rows = json.loads((tmp_path / "roof.json").read_text())["rows"]
    assert [(row["type"], row["kernel"]) for row in rows][:4] == [
        ("float32", "copy"), ("float32", "slow lanes"), ("float32", "gpuops modulus_truncate"),
        ("float32", "gpuops modulus_floor")]


def test_missing_backend_is_a_clean_error(capsys):
    pytest.importorskip("wgpu")
    try:
        import wgpudawn  # noqa: F401
        pytest.skip("wgpudawn is installed here")
    except ImportError:
        pass
    status, _, err = run(capsys, "op", "sign", "--backend", "dawn", "--sizes", "64")
    assert status == 3 and "needs the Python package 'wgpudawn'" in one_error_line(err)


def test_kernel_ab_builds_both_versions_alike(monkeypatch, capsys, tmp_path):
    """bench/kernel_ab.py builds the other version's shader modules as the device builds this checkout's (without
    runtime checks where the backend allows: a plain module keeps wgpu-native's bounds checks, which slow a tiled
    kernel by a third and would favour this checkout), and checks both against NumPy before timing them."""
    import importlib.util

    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    modules = {}
    for script in ("kernel_lines", "kernel_ab"):
        spec = importlib.util.spec_from_file_location(script, ROOT / "bench" / f"{script}.py")
        modules[script] = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, script, modules[script])
        spec.loader.exec_module(modules[script])
    dump = tmp_path / "kernels"
    assert modules["kernel_lines"].main(["--dump", str(dump), "--elements", "4096"]) == 0
    built = []
    real = gpuops.backends.create_shader_module

    def recording(module, wgpu_device, label, code, runtime_checks):
        built.append((label, runtime_checks))
        return real(module, wgpu_device, label, code, runtime_checks)

    monkeypatch.setattr(gpuops.backends, "create_shader_module", recording)
    capsys.readouterr()
    result = tmp_path / "ab.json"
    assert modules["kernel_ab"].main([str(dump), "--elements", "4096", "--match", "^(contiguous|transposed) +sign int8",
                                      "--rounds", "1", "--iterations", "1", "--json", str(result)]) == 0
    rows = json.loads(result.read_text())["rows"]
    assert [(row["section"], row["row"], row["exact"]) for row in rows] == [
        ("contiguous", "sign int8", True), ("transposed", "sign int8", True)]
    others = [checks for label, checks in built if label.endswith("(other)")]
    assert len(others) == 2 and all(checks == gpuops.default_device().runtime_checks for checks in others), built


def test_timestamps_come_unrounded_where_the_benchmark_asks(device):
    """Dawn rounds its timestamps down unless exact_dawn_timestamps() ran before its instance was made (a fresh
    process here); wgpu-native never rounds them."""
    from gpuops.bench.timing import timestamps_quantized

    if device.backend != "dawn":
        assert not timestamps_quantized(device)
        return
    script = ("import sys, gpuops\n"
              "from gpuops.bench.timing import exact_dawn_timestamps, timestamps_quantized\n"
              "if sys.argv[1] == 'exact':\n"
              "    exact_dawn_timestamps()\n"
              "print(timestamps_quantized(gpuops.Device(backend='dawn')))\n")
    for how, quantized in (("default", True), ("exact", False)):
        done = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] == str(quantized), done.stdout


def test_the_benchmark_reads_dawns_timestamps_unrounded(tmp_path):
    """gpuops-bench on Dawn turns off Dawn's rounding of timestamps (a fresh process: its own Dawn instance), and
    the JSON says so."""
    if "dawn" not in gpuops.backends.installed_backends():
        pytest.skip("Dawn (wgpudawn) is not installed here")
    path = tmp_path / "dawn.json"
    done = subprocess.run([sys.executable, "-m", "gpuops.bench", "op", "sign", "--backend", "dawn", "--sizes", "1024",
                           "-i", "2", "-w", "1", "--json", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    conversion = json.loads(path.read_text())["timestamp_conversion"]
    assert conversion["rounded"] is False and "rounds these timestamps" not in conversion["note"]
