"""What a benchmark result needs besides its numbers: the machine, the adapter and its driver, the versions of
everything involved, and the readable table. The JSON layout is documented in docs/bench-json.md."""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import wgpu

from ..backends import BACKENDS
from ..operators import spec_by_name
from .stats import ABOVE_TARGET
from .workload import copy_size

SCHEMA = "gpuops-bench/1"
# What makes two runs the same adapter: its name and PCI ids, and the WebGPU implementation and graphics API
# that ran it (the `adapter` keys).
ADAPTER_IDENTITY = ("name", "vendor_id", "device_id", "implementation", "backend")
# The adapter limits gpuops requests or depends on (device.py, the dispatch grid and binding alignment).
USED_LIMITS = ("max-buffer-size", "max-storage-buffer-binding-size", "max-compute-workgroups-per-dimension",
               "min-storage-buffer-offset-alignment", "max-storage-buffers-per-shader-stage",
               "max-compute-invocations-per-workgroup")
# "% copy" is a ratio of two bandwidths only where both kernels run long enough for moving bytes to dominate their
# time; shorter ones compare fixed costs and jitter (on lavapipe, 1024 elements read anywhere from 61% to 1217%).
# So the table shows it only where the operator's and the copy's medians both reach PERCENT_MIN_NS and
# PERCENT_FLOOR_FACTOR times the run's cost of a dispatch that moves nothing (a 16-byte copy): that cost is then at
# most a tenth of either time. The JSON keeps every percentage.
PERCENT_MIN_NS = 20_000
PERCENT_FLOOR_FACTOR = 10
SLOW_SECONDS = 1.0  # a step running this long gets a line on stderr saying what it is
_STDERR = threading.Lock()  # progress lines come from the main thread and from slow_step's timer


def machine_info() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine(),
            "cpu": _cpu_name(), "cpu_count": os.cpu_count(), "memory_bytes": physical_memory()}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def adapter_info(adapter) -> dict:
    info = adapter.info
    package = type(adapter).__module__.split(".")[0]
    implementation = next((name for name, module in BACKENDS.items() if module == package), package)
    return {"name": info.get("device", ""), "implementation": implementation, "vendor": info.get("vendor", ""), "backend": info.get("backend_type", ""),
            "type": info.get("adapter_type", ""), "driver": info.get("description", ""),
            "architecture": info.get("architecture", ""), "vendor_id": int(info.get("vendor_id", 0)),
            "device_id": int(info.get("device_id", 0)),
            "limits": {name: int(adapter.limits[name]) for name in USED_LIMITS if name in adapter.limits},
            "features": sorted(str(f) for f in adapter.features)}


def versions() -> dict:
    try:
        import wgpu.backends.wgpu_native as native

        native_version = native.__version__
    except (ImportError, AttributeError):
        native_version = None
    from .. import __version__ as gpuops_version

    return {"gpuops": gpuops_version, "wgpu": wgpu.__version__, "wgpu_native": native_version,
            "wgpudawn": _installed("wgpudawn"), "numpy": np.__version__, "python": platform.python_version(),
            "torch": _installed("torch"), "cupy": _installed_module("cupy")}


def _installed(package: str) -> str | None:
    """A package's version without importing it (importing torch takes seconds)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _installed_module(module: str) -> str | None:
    """The version of the distribution providing an importable module, without importing it: CuPy is installed
    under names such as cupy-cuda12x."""
    for distribution in importlib.metadata.packages_distributions().get(module, []):
        version = _installed(distribution)
        if version is not None:
            return version
    return None


def envelope(command: str, device, conversion, settings: dict) -> dict:
    """What every run's JSON object starts with: the command, the machine, the adapter, the versions, the settings
    and the timestamp conversion."""
    return {"schema": SCHEMA, "command": command,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(), "adapter": adapter_info(device.adapter), "versions": versions(),
            "feature_level": device.feature_level.label, "runtime_checks": device.runtime_checks,
            "settings": settings, "timestamp_conversion": conversion.to_json()}


def document(command: str, device, conversion, settings: dict, results: list[dict], copy_roof: list[dict]) -> dict:
    """The top-level JSON object of a run of cases (default, op, sweep)."""
    return {**envelope(command, device, conversion, settings), "copy_roof": copy_roof, "results": results}


def write_json(path: str | Path, doc: dict) -> Path:
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc, indent=1, default=_plain) + "\n", encoding="utf-8")
    return path


def _plain(value):
    """NumPy scalars into plain JSON numbers."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# ---------------------------------------------------------------------------------------------- terminal output

def format_ns(ns: float | None) -> str:
    """A duration with a readable unit: 850 ns, 12.3 us, 4.56 ms, 1.23 s."""
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}" if ns / scale < 100 else f"{ns / scale:.0f} {unit}"
    return f"{ns:.0f} ns"


def format_bytes(count: int) -> str:
    """A byte count with a binary unit: 256 MiB, 1.5 GiB, 4096 B."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} B"


def format_gbps(gbps: float | None) -> str:
    if gbps is None:
        return "-"
    return f"{gbps:.3g}" if gbps < 100 else f"{gbps:.0f}"


def _compare_cell(row: dict, what: str) -> str:
    entry = row.get("compare", {}).get(what)
    if entry is None:
        return "-"
    if "error" in entry:
        return "n/a"
    return format_gbps(entry["gbps"])


def _compare_layout(results: list[dict], what: str) -> str:
    """' (row-major out)': the layout a comparison ran in where every row's is the same and not plain contiguous
    (a transposed case is compared with the library writing a row-major output, not the input's order)."""
    layouts = {entry.get("layout") for row in results if (entry := row.get("compare", {}).get(what))
               and "error" not in entry}
    return f" ({layouts.pop()})" if len(layouts) == 1 and None not in layouts and "contiguous" not in layouts else ""


def percent_min_ns(floor_ns: float | None) -> float:
    """The median both kernels need for "% copy" to be shown (see PERCENT_MIN_NS)."""
    return max(PERCENT_MIN_NS, PERCENT_FLOOR_FACTOR * floor_ns) if floor_ns else PERCENT_MIN_NS


def percent_meaningful(row: dict, minimum_ns: float) -> bool:
    """Whether the row's operator and its copy both ran at least `minimum_ns`, in the time its GB/s come from."""
    if row.get("percent_of_copy") is None or not row.get("copy_gbps"):
        return False
    own = row["gpu_median_ns"] if row["gbps_basis"] == "gpu" else row["host_median_ns"]
    copy = 2 * copy_size(row["bytes_moved"]) / row["copy_gbps"]  # the copy moved as many bytes, rounded to 32
    return own is not None and own >= minimum_ns and copy >= minimum_ns


def format_noise(noise: float | None) -> str:
    """A noise figure (a fraction) as a percentage: 0.42%, 3.1%, 12%."""
    if noise is None:
        return "-"
    percent = 100 * noise
    return f"{percent:.2f}%" if percent < 1 else f"{percent:.1f}%" if percent < 10 else f"{percent:.0f}%"


def row_name(row: dict) -> str:
    """'is_infinity (positive)': the operator's NumPy-level name and, where it has one, its mode."""
    name = spec_by_name(row["operator"]).numpy_name
    return name + (f" ({row['mode'].lower()})" if row.get("mode") else "")


def row_types(row: dict) -> str:
    return row["dtype"].lower() if row["dtype"] == row["output_dtype"] else \
        f"{row['dtype'].lower()}->{row['output_dtype'].lower()}"


def aligned(headers: list[str], lines: list[list[str]], numeric_from: int) -> str:
    """Rows and aligned columns, those from `numeric_from` on right-aligned."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *lines)]

    def fmt(cells):
        return "  ".join(str(c).rjust(w) if i >= numeric_from else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(cells) for cells in lines])


def shows_cache(results: list[dict]) -> bool:
    """Whether the table needs a cache column: some row was timed cold."""
    return any(row.get("cache") == "cold" for row in results)


def results_table(results: list[dict], compare: tuple[str, ...] = (), floor_ns: float | None = None) -> str:
    """Rows and aligned columns; GB/s are bytes of elements read and written per GPU second. `floor_ns`: the run's
    cost of an empty dispatch, which sets where "% copy" is shown. A noise figure marked "!" is above the run's
    target: its row ran out of time or samples first."""
    minimum = percent_min_ns(floor_ns)
    cache = shows_cache(results)
    headers = ["operator", "types", "sizes", "layout"] + (["cache"] if cache else [])
    first_number = len(headers)
    headers += ["GPU median", "noise", "min", "max", "samples", "GB/s", "% copy", "host/dispatch", "host noise"]
    headers += [f"{what} GB/s{_compare_layout(results, what)}" for what in compare]
    lines = []
    for row in results:
        cells = [row_name(row), row_types(row), "x".join(map(str, row["sizes"])), row["layout"]]
        cells += [row.get("cache") or "warm"] if cache else []
        if not row["exact"]:
            cells += ["WRONG RESULT (not timed)"] + [""] * (len(headers) - len(cells) - 1)
        else:
            gbps = format_gbps(row["gbps"]) + ("*" if row["gbps_basis"] == "host" else "")
            percent = f"{row['percent_of_copy']:.0f}%" if percent_meaningful(row, minimum) else "-"
            flag = "!" if row.get("stopped_on") in ABOVE_TARGET else ""
            gpu_flag, host_flag = (flag, "") if row["gpu_median_ns"] is not None else ("", flag)
            cells += [format_ns(row["gpu_median_ns"]), format_noise(row.get("gpu_noise")) + gpu_flag,
                      format_ns(row["gpu_min_ns"]), format_ns(row["gpu_max_ns"]), str(row["iterations"]), gbps,
                      percent, format_ns(row["host_median_ns"]), format_noise(row.get("host_noise")) + host_flag]
            cells += [_compare_cell(row, what) for what in compare]
        lines.append(cells)
    return aligned(headers, lines, first_number)


def table_notes(results: list[dict], compare: tuple[str, ...], floor_ns: float | None = None,
                settings: dict | None = None) -> list[str]:
    """Footnotes: what the columns mean and anything a reader must know to trust them. `settings`: the run's
    (Session.settings), for the noise target and the cache flush."""
    settings = settings or {}
    notes = ["GB/s: bytes of tensor elements read (distinct addresses) + written, per second of GPU time; "
             "% copy: against a plain WGSL copy moving as many bytes, measured in this run; noise: relative "
             "interquartile range of the row's samples, (Q3 - Q1) / median (each sample one dispatch" +
             (f", or one span of {settings['repeats']} passes over {settings['repeats']}"
              if settings.get("repeats", 1) > 1 else "") + ")."]
    minimum = percent_min_ns(floor_ns)
    if any(r["exact"] and r.get("percent_of_copy") is not None and not percent_meaningful(r, minimum)
           for r in results):
        floor = f"{PERCENT_FLOOR_FACTOR}x the {format_ns(floor_ns)} of a dispatch that moves nothing in this run; " \
            if floor_ns else ""
        notes.append(f"% copy '-': the operator's or the copy's median time is under {format_ns(minimum)} ({floor}at "
                     f"least {format_ns(PERCENT_MIN_NS)}): at such times fixed costs, not bandwidth, set the ratio "
                     "(the JSON keeps it).")
    above = [r for r in results if r.get("stopped_on") in ABOVE_TARGET]
    if above:
        target = settings.get("max_noise")
        notes.append(f"!: {len(above)} row(s) ended above the noise target"
                     + (f" {format_noise(target)}" if target is not None else "")
                     + f" on their budget ({settings.get('max_time_s', '?')} s of sampling, or "
                       f"{settings.get('max_samples', '?')} samples): read them with care, or give more --max-time.")
    if shows_cache(results) and settings.get("flush_bytes"):
        notes.append(f"cache cold: {format_bytes(settings['flush_bytes'])} written on the GPU before each sample, "
                     "outside its times, so that no byte of its tensors is cached; warm: as the previous sample "
                     "left the caches.")
    if any(r.get("gbps_basis") == "host" for r in results):
        notes.append("*: no GPU timestamps on this adapter, rated with host time (submit to completion).")
    for what in compare:
        errors = {r["compare"][what]["error"] for r in results
                  if r.get("compare", {}).get(what) and "error" in r["compare"][what]}
        for error in sorted(errors):
            notes.append(f"{what}: {error}")
    return notes


def progress(message: str, done: int, total: int) -> None:
    """One line of progress on stderr, rewritten in place on a terminal."""
    line = f"[{done}/{total}] {message}"
    with _STDERR:
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K" + line + ("\n" if done == total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


@contextlib.contextmanager
def slow_step(message: str, enabled: bool = True) -> Iterator[None]:
    """Say "running: <message>" on stderr once the enclosed step has run for SLOW_SECONDS: a quick step stays
    quiet, a long one (calibration, a large case, a model's dispatch) does not look hung."""
    if not enabled:
        yield
        return
    stream = sys.stderr  # the caller's stderr, also when the timer thread writes

    def say() -> None:
        with _STDERR:
            stream.write(("\r\033[K" if stream.isatty() else "") + f"running: {message}\n")
            stream.flush()

    timer = threading.Timer(SLOW_SECONDS, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
