"""How long a timestamp tick is on this adapter: measured, not assumed.

wgpu-native returns timestamp queries as raw ticks. On NVIDIA and lavapipe one tick has been one nanosecond, but
nothing guarantees that elsewhere, so every benchmark run checks it: a compute pass of many copy dispatches is timed
both with timestamps and with the host clock (submit to completion), twice, with as many dispatches each time and
copies four times larger the second time. The slope of host time over ticks is the tick length with the host's
fixed costs cancelled out: the submit's, and each dispatch's (Dawn translates the pass inside submit, about a
microsecond of host time per dispatch, which a slope over dispatch counts would take for GPU time). Within 5% of 1
we keep exactly 1 ns per tick (the difference is host noise); otherwise the measured length is used and the JSON
says so.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from ..device import Device
from .timing import CopyKernel, GpuTimer, timestamps_quantized

TOLERANCE = 0.05  # a measured ns-per-tick within 5% of 1 is taken as exactly 1
TARGET_PASS_NS = 32_000_000  # the long pass lasts about this long; the short one's copies are four times smaller
MAX_DISPATCHES = 16384
SAMPLES = 5


@dataclass(frozen=True)
class TickConversion:
    """The conversion applied to every GPU time of a run, and the evidence for it (written to JSON as is)."""

    method: str  # "nanoseconds" (1 tick = 1 ns, confirmed), "calibrated" (measured ratio used) or "unavailable"
    tick_ns: float | None  # nanoseconds per tick; None when GPU times cannot be reported
    measured_ns_per_tick: float | None
    short_pass: dict | None  # {"dispatches", "ticks", "host_ns"}
    long_pass: dict | None
    note: str
    rounded: bool = False  # the implementation rounds timestamps down (Dawn's timestamp_quantization)

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def summary(self) -> str:
        return self.note


def calibrate(device: Device, timer: GpuTimer) -> TickConversion:
    """Measure the tick length and set `timer.tick_ns` to it (None-safe: without timestamps nothing changes).

    One estimate usually settles it; when it falls outside the tolerance, or its ticks did not advance with the
    work, two more are taken and the median of those whose ticks advanced is used (GPU times are given up only when
    most did not), so one estimate disturbed by a busy machine cannot mis-scale or untime a whole run."""
    if not timer.supported:
        return TickConversion("unavailable", None, None, None, None,
                              "the adapter has no timestamp-query feature: only host times are reported")
    # Copies that take a while per dispatch, so that few dispatches fill the pass: small on a CPU adapter.
    software = device.adapter.info.get("adapter_type") == "CPU"
    size = (1 << 20) if software else (32 << 20)
    copies = (CopyKernel(device, size // 4), CopyKernel(device, size))
    try:
        for copy in copies:
            _one_pass(device, timer, copy, 1)  # first use compiles and warms up
        # Ticks are taken as nanoseconds only to choose the dispatch count; the slope is what counts.
        single = statistics.median(_one_pass(device, timer, copies[1], 1)[0] for _ in range(3))
        dispatches = int(min(MAX_DISPATCHES, max(1, TARGET_PASS_NS // max(single, 1.0))))
        estimates = [_estimate(device, timer, copies, dispatches)]
        if estimates[0][0] is None or abs(estimates[0][0] - 1.0) > TOLERANCE:
            estimates += [_estimate(device, timer, copies, dispatches) for _ in range(2)]
    finally:
        for copy in copies:
            copy.release()
    conversion = settle(timer, estimates)
    if timestamps_quantized(device):
        conversion = replace(conversion, rounded=True, note=conversion.note + (
            "; Dawn rounds these timestamps down to coarse steps (its instance was made before gpuops-bench could "
            "turn that off): time spans of many passes (--repeats 40)"))
    return conversion


def settle(timer: GpuTimer, estimates: list[tuple[float | None, dict, dict]]) -> TickConversion:
    """The conversion the estimates (ns per tick or None, short pass, long pass) settle on; sets `timer.tick_ns`
    to it."""
    advanced = sorted((e for e in estimates if e[0] is not None), key=lambda e: e[0])
    if 2 * len(advanced) <= len(estimates):
        _, short, long = next(e for e in estimates if e[0] is None)
        return TickConversion("unavailable", None, None, short, long,
                              "timestamps did not advance with the work (ticks "
                              f"{short['ticks']:.0f} then {long['ticks']:.0f}): only host times are reported")
    ratio, short, long = advanced[len(advanced) // 2]
    if abs(ratio - 1.0) <= TOLERANCE:
        timer.tick_ns = 1.0
        return TickConversion("nanoseconds", 1.0, ratio, short, long,
                              f"timestamp ticks are nanoseconds (wall clock agrees within {abs(ratio - 1):.1%})")
    timer.tick_ns = ratio
    return TickConversion("calibrated", ratio, ratio, short, long,
                          f"timestamp ticks converted at {ratio:.4g} ns per tick (measured against wall clock)")


def _estimate(device: Device, timer: GpuTimer, copies: tuple[CopyKernel, CopyKernel],
              dispatches: int) -> tuple[float | None, dict, dict]:
    """ns per tick from two passes of `dispatches` copies each, the second's four times larger (None when the
    ticks did not advance)."""
    short, long = (_fastest_pass(device, timer, copy, dispatches) for copy in copies)
    tick_delta = long["ticks"] - short["ticks"]
    host_delta = long["host_ns"] - short["host_ns"]
    if tick_delta <= 0 or host_delta <= 0:
        return None, short, long
    return float(host_delta / tick_delta), short, long


def _fastest_pass(device: Device, timer: GpuTimer, copy: CopyKernel, dispatches: int) -> dict:
    """The fastest of a few runs: noise (other threads, a busy CPU adapter) only ever adds time."""
    samples = [_one_pass(device, timer, copy, dispatches) for _ in range(SAMPLES)]
    return {"dispatches": dispatches, "bytes": copy.bytes_moved // 2, "ticks": float(min(s[0] for s in samples)),
            "host_ns": float(min(s[1] for s in samples))}


def _one_pass(device: Device, timer: GpuTimer, copy: CopyKernel, dispatches: int) -> tuple[float, float]:
    """(ticks, host ns) of one compute pass holding `dispatches` copies; the host clock covers submit to done."""
    wgpu_device = device.wgpu_device
    encoder = wgpu_device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass(timestamp_writes=timer.writes(0))
    # 32 MiB at most: one dispatch under every adapter's binding limit (WebGPU guarantees 128 MiB)
    (bind_group, grid), = copy.dispatches
    compute_pass.set_pipeline(copy.pipeline)
    compute_pass.set_bind_group(0, bind_group)
    for _ in range(dispatches):
        compute_pass.dispatch_workgroups(*grid)
    compute_pass.end()
    encoder.resolve_query_set(timer.query_set, 0, 2, timer.resolve, 0)
    commands = encoder.finish()
    start = time.perf_counter_ns()
    wgpu_device.queue.submit([commands])
    raw = wgpu_device.queue.read_buffer(timer.resolve, 0, 16)  # waits for the pass
    host = time.perf_counter_ns() - start
    begin, end = np.frombuffer(raw, np.uint64).astype(np.float64)
    return float(end - begin), float(host)


def split_writes(writes: dict | None, index: int, count: int) -> dict | None:
    """Timestamp writes for pass `index` of `count` passes timed as one span: begin on the first, end on the last
    (WebGPU refuses a timestamp_writes entry with neither). `writes` may itself hold only one of the two (a span
    of repeated work, GpuTimer.run)."""
    if writes is None or count == 1:
        return writes
    part = {"query_set": writes["query_set"]}
    if index == 0 and "beginning_of_pass_write_index" in writes:
        part["beginning_of_pass_write_index"] = writes["beginning_of_pass_write_index"]
    if index == count - 1 and "end_of_pass_write_index" in writes:
        part["end_of_pass_write_index"] = writes["end_of_pass_write_index"]
    return part if len(part) > 1 else None


__all__ = ["TickConversion", "calibrate", "settle", "split_writes"]
