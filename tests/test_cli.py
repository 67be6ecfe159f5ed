"""What a stranger meets first: the distribution's name, version and license, install hints that name this
project, an import that prints nothing, and gpuops-bench's command line: --version, arguments refused before any
device work (a negative size named as such), skipped pairs said, model outputs said and written where the command
runs, model timings labelled truthfully, progress on slow steps, and a "% copy" shown only where it means
something."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

import gpuops
from gpuops import backends
from gpuops.bench import cli, report
from gpuops.bench.suite import Session

from .cli_run import one_error_line, run

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "bench" / "models"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------ name, version, license

def test_distribution_name_version_and_license():
    project = PYPROJECT["project"]
    assert project["name"] == cli.DISTRIBUTION == "gpuops-webgpu"  # "gpuops" on PyPI is another project
    assert project["version"] == gpuops.__version__
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("Copyright ") and "the gpuops authors" in text.splitlines()[0]
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def test_version_prints_distribution_and_version(capsys, monkeypatch):
    installed = {cli.DISTRIBUTION: "9.8.7"}

    def version(name):
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    status, out, err = run(capsys, "--version")
    assert (status, out, err) == (0, "gpuops-webgpu 9.8.7\n", "")
    installed.clear()  # run from a checkout: the package's own version
    status, out, _ = run(capsys, "--version")
    assert (status, out) == (0, f"gpuops-webgpu {gpuops.__version__}\n")


def test_install_hints_name_this_project_only(monkeypatch):
    """Install hints say how to install from the checkout or its wheel, never the PyPI name of another project."""
    offenders = []
    package = Path(gpuops.__file__).resolve().parent  # the gpuops imported: in CI, the installed one
    for folder in (package, ROOT / "bench", ROOT / "tests"):
        paths = list(folder.rglob("*.py"))
        assert paths, folder
        for path in paths:
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"pip install\s+['\"]?gpuops\b", line) and path.name != "test_cli.py":
                    offenders.append(f"{path}:{number}: {line.strip()}")
    assert offenders == []
    real_import = backends.importlib.import_module

    def no_dawn(name, *args):
        if name == "wgpudawn":
            raise ImportError("No module named 'wgpudawn'")
        return real_import(name, *args)

    monkeypatch.setattr(backends.importlib, "import_module", no_dawn)
    with pytest.raises(gpuops.DeviceError, match=re.escape("pip install '.[dawn]' in the gpuops checkout")):
        backends.load_backend("dawn")


# ---------------------------------------------------------------------------------------------- XDG_RUNTIME_DIR

def _python(code: str, env_changes: dict, cwd: Path) -> subprocess.CompletedProcess:
    """`code` in a new Python without XDG_RUNTIME_DIR (but for `env_changes`), importing the gpuops this process
    imported."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    package_parent = str(Path(gpuops.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH", "")) if p)
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


def test_import_without_xdg_runtime_dir_prints_nothing_and_leaves_the_environment(tmp_path):
    """Without XDG_RUNTIME_DIR libwayland complains on every adapter enumeration; gpuops drops its messages and
    leaves the environment as it was, for its own device and for wgpu's enumeration alike."""
    code = ("import os, gpuops, wgpu; gpuops.default_device(); wgpu.gpu.enumerate_adapters_sync(); "
            "print(os.environ.get('XDG_RUNTIME_DIR'))")
    done = _python(code, {}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert not [line for line in done.stderr.splitlines() if "XDG_RUNTIME_DIR" in line], done.stderr
    assert done.stdout.strip() == "None"


def test_xdg_runtime_dir_is_kept_as_given(tmp_path):
    show = "import os, gpuops; gpuops.default_device(); print(os.environ['XDG_RUNTIME_DIR'])"
    for given in (tmp_path, tmp_path / "missing"):
        assert _python(show, {"XDG_RUNTIME_DIR": str(given)}, tmp_path).stdout.strip() == str(given)


# ------------------------------------------------------------------------------ refused before the device opens

@pytest.fixture
def no_device(monkeypatch):
    """Any attempt to open a device fails the test: these command lines must be refused before that."""
    def refuse(*args, **kwargs):
        raise AssertionError("the device was opened before the arguments were checked")

    monkeypatch.setattr(cli, "Device", refuse)


@pytest.mark.parametrize("argv, fragment", [
    (["op", "is_nan", "--dtype", "int32"], "INT32 is not supported at feature level 6_4; allowed: FLOAT16, FLOAT32"),
    (["op", "sign", "--dtype", "uint64", "--feature-level", "3.0"], "UINT64 is not supported at feature level 3_0"),
    (["op", "modulus_floor", "--sizes", "1,1,1,1,1,1,1,1,1"], "9 dimensions [1, 1, 1, 1, 1, 1, 1, 1, 1] at feature "
                                                              "level 6_4; allowed: 1 to 8"),
    (["op", "sign", "--compare", "torch,jax"], "--compare 'jax'; allowed: numpy, torch, cupy"),
    (["op", "sign", "--layout", "nchw-to-nhwc", "--sizes", "64,64"], "layout 'nchw-to-nhwc' needs 4 sizes"),
    (["sweep", "--dtypes", "float99"], "unknown data type 'float99'"),
    (["sweep", "--ops", "is_nan", "--dtypes", "int8"],
     "nothing to run: the data types asked for (int8) at feature level 6_4: is_nan int8 (IS_NAN takes float32, "
     "float16 at feature level 6_4)"),
    (["sweep", "--ops", "is_infinity", "--feature-level", "2.0"],
     "nothing to run: the operators asked for at feature level 2_0: is_infinity (IS_INFINITY does not exist at "
     "feature level 2_0)"),
    (["sweep", "--ops", "is_infinity", "--mode", "sideways"], "unknown --mode 'sideways'"),
    (["sweep", "--min-elements", "4096", "--max-elements", "2048"], "--min-elements 4096 is above"),
    (["default", "--ops", "gemm"], "operator 'gemm' is not implemented by gpuops"),
    (["model", MODELS / "sign_in_place.json", "--output-dir", MODELS / "sign_in_place.json"], "is not a directory"),
    # A value that starts with '-' is read as a value and refused for what it is, not reported missing.
    (["op", "sign", "--sizes", "-5,3"], "argument --sizes: size -5 in '-5,3': every size must be at least 1"),
    (["op", "sign", "--sizes", "4,-3"], "argument --sizes: size -3 in '4,-3': every size must be at least 1"),
    (["op", "sign", "--strides", "-1,1"], "argument --strides: '-1,1': give non-negative integers"),
    (["op", "sign", "-i", "-3"], "argument -i/--iterations/--min-samples: -3; must be at least 1"),
    (["default", "--max-noise", "-1%"], "argument --max-noise: '-1%'; must be 0% or more"),
    (["sweep", "--flush-bytes", "lots"], "argument --flush-bytes: 'lots' is not a byte count (e.g. 256MiB"),
])
def test_arguments_are_refused_before_the_device_opens(capsys, no_device, argv, fragment):
    start = time.perf_counter()
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert fragment in one_error_line(err)
    assert time.perf_counter() - start < 5


def test_byte_counts_read_units():
    assert [cli._bytes(text) for text in ("4096", "256MiB", "256M", "1GiB", "2^28", "64 KiB")] == \
        [4096, 256 << 20, 256 << 20, 1 << 30, 1 << 28, 64 << 10]
    assert cli._percent("2%") == cli._percent("2") == pytest.approx(0.02)


def test_model_errors_come_before_the_device_opens(capsys, no_device, tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"resources": {}, "dispatchables": {}, "commands": [{"type": "copy"}]}))
    status, _, err = run(capsys, "model", path)
    assert status == 2 and "commands[0].type: unknown command type 'copy'" in one_error_line(err)


# ----------------------------------------------------------------------------------------- skipped pairs said

def test_sweep_says_which_pairs_it_skips_and_why(capsys, tmp_path):
    status, out, err = run(capsys, "sweep", "--ops", "sign", "is_nan", "--dtypes", "float32", "int8",
                           "--max-elements", "1024", "-i", "1", "-w", "0", "-q", "--json", tmp_path / "s.json")
    assert status == 0, err
    assert "skipped: is_nan int8 (IS_NAN takes float32, float16 at feature level 6_4)" in out.splitlines()
    assert [line for line in out.splitlines() if line.startswith("skipped:")] == \
        ["skipped: is_nan int8 (IS_NAN takes float32, float16 at feature level 6_4)"]
    rows = json.loads((tmp_path / "s.json").read_text())["results"]
    assert sorted((r["operator"], r["dtype"]) for r in rows) == [
        ("ELEMENT_WISE_IS_NAN", "FLOAT32"), ("ELEMENT_WISE_SIGN", "FLOAT32"), ("ELEMENT_WISE_SIGN", "INT8")]


def test_sweep_says_a_layout_skips_an_operator(capsys):
    status, out, err = run(capsys, "sweep", "--ops", "sign", "modulus_floor", "--dtypes", "int16", "--layout",
                           "broadcast-b", "--max-elements", "1024", "-i", "1", "-w", "0", "-q", "--json", "")
    assert status == 0, err
    assert "skipped: sign (layout broadcast-b needs a second input; SIGN has one)" in out.splitlines()
    assert re.search(r"^modulus_floor\s+int16\s+32x32\s+broadcast-b\s", out, re.M)


# ------------------------------------------------------------------------------------------ model: output files

def test_model_writes_into_the_current_directory_and_says_where(capsys, tmp_path, monkeypatch):
    """writeFile targets land where the command runs (or in --output-dir), never among the model's files: running
    the examples leaves bench/models/ as it was."""
    models_before = sorted(MODELS.iterdir())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    status, out, err = run(capsys, "model", MODELS / "modulus_floor_npy.json")
    assert status == 0, err
    target = cwd / "modulus_floor_npy_out.npy"
    assert f"Resource 'Out' written to {target}" in out.splitlines()
    assert np.load(target).shape == (2, 4) and sorted(MODELS.iterdir()) == models_before
    chosen = tmp_path / "chosen"
    status, out, err = run(capsys, "model", MODELS / "modulus_floor_npy.json", "--output-dir", chosen)
    assert status == 0, err
    assert f"Resource 'Out' written to {chosen / 'modulus_floor_npy_out.npy'}" in out.splitlines()
    assert np.array_equal(np.load(chosen / "modulus_floor_npy_out.npy"), np.load(target), equal_nan=True)
    assert sorted(p.name for p in cwd.iterdir()) == ["modulus_floor_npy_out.npy"]
    assert sorted(MODELS.iterdir()) == models_before


def test_model_never_reports_a_first_use_sample_as_hot(capsys):
    """A dispatch's first sample pays first-use costs: it is cold (-w), and -t runs past its time until a hot
    sample follows; with fewer iterations than -w every sample is reported cold."""
    example = MODELS / "sign_in_place.json"
    status, out, err = run(capsys, "model", example, "-t", "0.001", "-v", "1")
    assert status == 0, err
    assert re.search(r"^CPU Timings \(Cold\)\s*: 1 samples, ", out, re.M)
    assert re.search(r"^CPU Timings \(Hot\)\s*: [1-9]\d* samples, ", out, re.M)
    status, out, err = run(capsys, "model", example, "-t", "0.001", "-w", "3", "-v", "1")
    assert status == 0, err
    assert re.search(r"^CPU Timings \(Cold\)\s*: 3 samples, ", out, re.M) and "(Hot)" in out
    status, out, err = run(capsys, "model", example, "-i", "1", "-v", "1")
    assert status == 0, err
    assert re.search(r"^CPU Timings \(Cold\)\s*: 1 samples, ", out, re.M) and "(Hot)" not in out
    status, out, err = run(capsys, "model", example, "-i", "1")
    assert status == 0 and re.search(r"^Dispatch 'sign': 1 iterations, [\d.]+ ms median \(CPU\)", out, re.M)


def test_plot_hint_installs_matplotlib_alone(monkeypatch):
    """The hint must not reinstall gpuops from wherever the user stands: only the missing package."""
    import builtins

    from gpuops.bench.suite import plot_sweep

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert plot_sweep([], [], "unused.png", "run") == \
        "plot skipped: matplotlib is not installed (pip install matplotlib)"


# ---------------------------------------------------------------------------------------------------- progress

def test_slow_step_speaks_only_when_slow(capsys, monkeypatch):
    monkeypatch.setattr(report, "SLOW_SECONDS", 0.1)
    with report.slow_step("quick thing"):
        pass
    with report.slow_step("slow thing"):
        time.sleep(0.5)
    with report.slow_step("silenced thing", enabled=False):
        time.sleep(0.3)
    time.sleep(0.3)  # a timer that was not cancelled would have spoken by now
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["running: slow thing"] and captured.out == ""


def test_a_slow_case_says_what_is_running(capsys, monkeypatch):
    monkeypatch.setattr(report, "SLOW_SECONDS", 0.1)
    real_run = Session.run

    def slow_run(self, case):
        time.sleep(0.5)
        return real_run(self, case)

    monkeypatch.setattr(Session, "run", slow_run)
    status, out, err = run(capsys, "op", "sign", "--sizes", "64", "-i", "1", "-w", "0")
    assert status == 0, err
    assert "running: op: checking sign float32 64 against NumPy, then timing 1 samples" in err.splitlines()
    status, _, err = run(capsys, "op", "sign", "--sizes", "64", "-i", "1", "-w", "0", "-q")
    assert status == 0 and err == ""


# ------------------------------------------------------------------------------------------------------ % copy

def _row(own_ns: float, copy_ns: float, moved: int = 1 << 20) -> dict:
    gbps, copy_gbps = moved / own_ns, moved / copy_ns
    return {"operator": "ELEMENT_WISE_SIGN", "mode": None, "dtype": "FLOAT32", "output_dtype": "FLOAT32",
            "sizes": [moved // 8], "layout": "packed", "cache": "warm", "exact": True, "bytes_moved": moved,
            "iterations": 3, "stopped_on": "min_samples", "gpu_median_ns": own_ns, "gpu_min_ns": own_ns,
            "gpu_max_ns": own_ns, "gpu_noise": 0.0, "host_median_ns": own_ns + 50_000, "host_noise": 0.0,
            "gbps": gbps, "gbps_basis": "gpu", "copy_gbps": copy_gbps, "percent_of_copy": 100 * gbps / copy_gbps}


def _percent_cells(table: str) -> list[str]:
    header, _, *rows = table.splitlines()
    start = header.index("% copy")
    return [row[start:start + len("% copy")].strip() for row in rows]


def test_percent_of_copy_only_where_both_kernels_run_long_enough():
    rows = [_row(400_000, 200_000), _row(400_000, 15_000), _row(15_000, 400_000), _row(30_000, 30_000)]
    # floor 1 us: the threshold is the 20 us minimum; floor 5 us: 50 us
    assert _percent_cells(report.results_table(rows, (), 1_000)) == ["50%", "-", "-", "100%"]
    assert _percent_cells(report.results_table(rows, (), 5_000)) == ["50%", "-", "-", "-"]
    notes = report.table_notes(rows, (), 5_000)
    assert "% copy '-': the operator's or the copy's median time is under 50 us (10x the 5 us of a dispatch that " \
           "moves nothing in this run; at least 20 us): at such times fixed costs, not bandwidth, set the ratio " \
           "(the JSON keeps it)." in notes
    assert not any(n.startswith("% copy '-'") for n in report.table_notes(rows[:1], (), 5_000))


def test_tiny_case_shows_no_percent_and_says_why(capsys, tmp_path):
    status, out, err = run(capsys, "op", "sign", "--sizes", "64", "-i", "2", "-w", "1", "--json", tmp_path / "o.json")
    assert status == 0, err
    table = out[out.index("operator "):].split("\n\n")[0]
    assert _percent_cells(table) == ["-"]
    assert "note: % copy '-': the operator's or the copy's median time is under " in out
    row = json.loads((tmp_path / "o.json").read_text())["results"][0]
    assert row["percent_of_copy"] is not None  # the JSON keeps it
