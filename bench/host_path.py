"""The host path against wgpu's own floors, and every GPU of a host at once, on the default adapter.

    python bench/host_path.py [--json PATH] [--quick] [--compare] [--split-size 2^27] [--devices N]

Floors (raw wgpu-py with every resource made once; on wgpu-native through wgpu-py's internals, as gpuops does, and
on Dawn through the public calls), interleaved with gpuops' rows, one call of each per round:
  submit+block  copy 4 bytes, submit, wgpuDevicePoll(wait=true) on this thread           (wgpu-native)
  submit+spin   the same, then non-blocking polls on this thread until the queue is empty (wgpu-native)
  submit+done   the same, then the public queue.on_submitted_work_done_sync()              (Dawn)
  map+block     write 4 KiB, a copy kernel, a copy into a MAP_READ buffer, its map with a callback of this script's
                own run inside this thread's blocking poll, the read (wgpu-py's poll thread is never woken)
  map+spin      the same, waited for by non-blocking polls on this thread                 (wgpu-native)
  map+thread    the same through wgpu-py's map_async + sync_wait (wgpu-native: its poll thread runs the callback),
                measured apart, beside map+block again (its poll thread slows the row after it)
  synchronize   gpuops Device.synchronize() on an idle queue       (goal: <= 1.2 x submit+block)
  sign 1024     gpuops.sign of 1024 float32, host arrays both ways  (goal: <= 1.3 x map+block and <= 150 us)
chain        modulus_floor then sign on --chain-size float32 device arrays with one synchronize, against the two
             kernels' GPU time (timestamp queries) plus one idle wait (goal: <= 1.2 x)
small/large  sign 1024 before and after a series of large calls (modulus_floor and sign of 2^E float32, 2^(E-1)
             int64, 2^E float16 and 2^E int8, 5 timed calls each; E = --series-exponent), and after the pool is
             emptied (goal: after within 10% of before); the series' medians are large-call rows too
split        one modulus_floor of --split-size float32 on one device against the same split in N equal parts over
             N devices (one per adapter of the default device's kind, or --devices N on the one adapter), one thread
             each, out= preallocated, interleaved (goal on 2 GPUs: >= 1.8 x one device's throughput; 4: >= 3.4 x)
links        the host's path to its GPUs without gpuops: CUDA's own copies (PyTorch) of --links-size float32 up
             and down, pageable and pinned, on one GPU and on every GPU at once (a part each, one thread each): the
             platform's floor for the split and for large calls (only where PyTorch finds CUDA)
large        host calls of --large sizes (sign and modulus_floor of float32): median time and GB/s of host data;
             --compare adds NumPy on the CPU (timed once: the call whose result is the reference) and PyTorch /
             CuPy end to end where they import and find a GPU
submit/wait  while one thread waits for a long GPU job (~--long-job-ms), another thread's 4-byte copy: how long its
             submit takes, with the wait a blocking poll, non-blocking polls, or gpuops' synchronize (wgpu-native)
Every gpuops result is checked against NumPy once. --quick runs small sizes (the software adapter); a gpuops without
gpuops.adapters() (an older checkout, for the figures before) runs everything but the split over several adapters.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import wgpu

import gpuops
from gpuops.bench.cli import parse_size
from gpuops.bench.cuda_context import hold_cuda_contexts
from gpuops.bench.ticks import calibrate, split_writes
from gpuops.bench.timing import CopyKernel, GpuTimer
from gpuops.bench.torch_compare import torch_cuda
from gpuops.operators import spec_by_name

SCHEMA = "gpuops-host-path/1"


def interleaved(runs: dict[str, Callable[[], object]], rounds: int, warmup: int) -> dict[str, dict]:
    """Each run's median and 10th percentile in ns, its samples taken in turn (one call of each per round), so that
    a drift of the host's speed reaches every run alike."""
    for _ in range(warmup):
        for run in runs.values():
            run()
    samples: dict[str, list[int]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter_ns()
            run()
            samples[name].append(time.perf_counter_ns() - start)
    return {name: summary(values) for name, values in samples.items()}


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median_ns": statistics.median(ordered), "p10_ns": ordered[len(ordered) // 10], "min_ns": ordered[0],
            "samples": len(ordered)}


def as_gpuops_sign(result: np.ndarray) -> np.ndarray:
    """np.sign's result with gpuops' documented difference: NaN and -0 give +0 (in place)."""
    if result.dtype.kind == "f":
        result[np.isnan(result) | (result == 0)] = 0
    return result


def numpy_sign(x: np.ndarray) -> np.ndarray:
    return as_gpuops_sign(np.sign(x))


NUMPY_UFUNCS = {"sign": np.sign, "modulus_floor": np.remainder}  # NumPy's own functions, as timed
NUMPY = {"sign": numpy_sign, "modulus_floor": np.remainder}  # gpuops' results, as NumPy gives them


def exact(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    flat_got, flat_want = got.reshape(-1), want.reshape(-1)
    step = 1 << 24
    for start in range(0, flat_got.size, step):  # in parts: no second temporary of a large result
        a, b = flat_got[start:start + step], flat_want[start:start + step]
        if not np.array_equal(a.view(np.uint8), b.view(np.uint8)):
            same_nans = a.dtype.kind == "f" and np.array_equal(a, b, equal_nan=True)
            if not same_nans:
                return False
    return True


# ------------------------------------------------------------------------------------------------- floors

class NativeCalls:
    """wgpu-native through wgpu-py's C bindings: polls, and maps whose callback this script owns (so that wgpu-py's
    poll thread is never woken). None where this wgpu-py lacks them."""

    def __init__(self, wgpu_device):
        from wgpu.backends.wgpu_native._api import libf
        from wgpu.backends.wgpu_native._ffi import ffi, lib

        self.ffi, self.lib, self.libf = ffi, lib, libf
        self.device = wgpu_device._internal
        self.done: set[int] = set()
        self.serial = 0

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def mapped(status, _message, key, _unused):
            self.done.add(int(ffi.cast("uintptr_t", key)))

        self.callback = mapped

    @classmethod
    def of(cls, device: gpuops.Device) -> NativeCalls | None:
        if device.backend != "wgpu-native":
            return None
        try:
            return cls(device.wgpu_device)
        except (ImportError, AttributeError):
            return None

    def poll(self, block: bool) -> bool:
        """One poll; whether the queue is empty."""
        return bool(self.lib.wgpuDevicePoll(self.device, block, self.ffi.NULL))

    def map_read(self, buffer, size: int) -> int:
        self.serial += 1
        info = self.ffi.new("WGPUBufferMapCallbackInfo *")
        info.mode = self.lib.WGPUCallbackMode_AllowProcessEvents
        info.callback = self.callback
        info.userdata1 = self.ffi.cast("void *", self.serial)
        self.libf.wgpuBufferMapAsync(buffer._internal, self.lib.WGPUMapMode_Read, 0, size, info[0])
        return self.serial

    def read_and_unmap(self, buffer, size: int, target: np.ndarray) -> None:
        pointer = self.lib.wgpuBufferGetConstMappedRange(buffer._internal, 0, size)
        np.copyto(target, np.frombuffer(self.ffi.buffer(self.ffi.cast("char *", pointer), size), target.dtype))
        self.libf.wgpuBufferUnmap(buffer._internal)


class Floors:
    """The raw round trips (see the module docstring), each with its own buffers made once."""

    def __init__(self, device: gpuops.Device):
        self.device = device
        self.native = NativeCalls.of(device)
        wgpu_device = device.wgpu_device
        usage = device.wgpu.BufferUsage
        self.copy = CopyKernel(device, 4096)
        self.staging = wgpu_device.create_buffer(size=4096, usage=usage.MAP_READ | usage.COPY_DST)
        self.source4 = wgpu_device.create_buffer(size=4, usage=usage.COPY_SRC)
        self.target4 = wgpu_device.create_buffer(size=4, usage=usage.COPY_DST)
        self.host = np.linspace(-3, 3, 1024, dtype=np.float32)
        self.result = np.empty(1024, np.float32)

    def runs(self) -> dict[str, Callable[[], None]]:
        if self.native is not None:
            return {"submit+block": lambda: self._submit_then(lambda: self.native.poll(True)),
                    "submit+spin": lambda: self._submit_then(self._spin_until_empty),
                    "map+block": lambda: self._map(self._wait_blocking),
                    "map+spin": lambda: self._map(self._wait_spinning),
                    "map+thread": self._map_public}
        queue = self.device.wgpu_device.queue
        return {"submit+done": lambda: self._submit_then(queue.on_submitted_work_done_sync),
                "map+thread": self._map_public}

    def _submit_then(self, wait: Callable[[], object]) -> None:
        wgpu_device = self.device.wgpu_device
        encoder = wgpu_device.create_command_encoder()
        encoder.copy_buffer_to_buffer(self.source4, 0, self.target4, 0, 4)
        wgpu_device.queue.submit([encoder.finish()])
        wait()

    def _spin_until_empty(self) -> None:
        while not self.native.poll(False):
            pass

    def _record(self):
        wgpu_device = self.device.wgpu_device
        wgpu_device.queue.write_buffer(self.copy.src, 0, self.host)
        encoder = wgpu_device.create_command_encoder()
        self.copy.record(encoder, None)
        encoder.copy_buffer_to_buffer(self.copy.dst, 0, self.staging, 0, 4096)
        wgpu_device.queue.submit([encoder.finish()])

    def _map(self, wait: Callable[[int], None]) -> None:
        self._record()
        key = self.native.map_read(self.staging, 4096)
        wait(key)
        self.native.done.discard(key)
        self.native.read_and_unmap(self.staging, 4096, self.result)

    def _wait_blocking(self, key: int) -> None:
        while key not in self.native.done:
            self.native.poll(True)

    def _wait_spinning(self, key: int) -> None:
        while key not in self.native.done:
            self.native.poll(False)

    def _map_public(self) -> None:
        self._record()
        # wgpu-native: without wgpu-py's flush (an empty submit before a READ mapping), as its queue.read_buffer maps
        mode = "READ_NOSYNC" if self.native is not None else self.device.wgpu.MapMode.READ
        self.staging.map_async(mode).sync_wait()
        np.copyto(self.result, np.frombuffer(self.staging.read_mapped(copy=False), np.float32))
        self.staging.unmap()


def measure_floors(device: gpuops.Device, rounds: int, warmup: int) -> dict:
    """The floors and gpuops' rows in turn; wgpu-py's poll-thread map apart, beside the map floor again: its poll
    thread, still finishing its loop when the next row starts, competes with that row for the GIL."""
    floors = Floors(device)
    x = np.linspace(-3, 3, 1024, dtype=np.float32)
    case = {"exact": exact(gpuops.sign(x, device=device), np.sign(x))}
    runs = floors.runs()
    thread = {"map+thread": runs.pop("map+thread")}
    runs.update({"synchronize": device.synchronize, "sign 1024": lambda: gpuops.sign(x, device=device)})
    case.update(interleaved(runs, rounds, warmup))
    beside = "map+block" if "map+block" in runs else "sign 1024"
    apart = interleaved({f"{beside} (beside map+thread)": runs[beside], **thread}, rounds, warmup)
    case.update(apart)
    idle = case.get("submit+block", case.get("submit+done"))["median_ns"]
    if "map+block" in case:
        sign, mapped = case["sign 1024"]["median_ns"], case["map+block"]["median_ns"]
    else:  # Dawn: against the public map, taken in the same rounds
        sign, mapped = case["sign 1024 (beside map+thread)"]["median_ns"], case["map+thread"]["median_ns"]
    case["ratios"] = {"synchronize / idle floor": case["synchronize"]["median_ns"] / idle,
                      "sign 1024 / map floor": sign / mapped}
    return case


# -------------------------------------------------------------------------------------------------- chain

def measure_chain(device: gpuops.Device, timer: GpuTimer, n: int, rounds: int, warmup: int, repeats: int,
                  idle_floor_ns: float | None) -> dict:
    """modulus_floor then sign on device arrays with one synchronize, against the kernels' GPU time."""
    rng = np.random.default_rng(1)
    a_host = (rng.standard_normal(n) * 100).astype(np.float32)
    b_host = (rng.standard_normal(n) * 10).astype(np.float32)
    b_host[b_host == 0] = 1
    a, b = gpuops.asarray(a_host, device), gpuops.asarray(b_host, device)
    case = {"elements": n}
    with np.errstate(all="ignore"):
        case["exact"] = exact(gpuops.sign(gpuops.modulus_floor(a, b)).numpy(), np.sign(np.remainder(a_host, b_host)))

    def chain():
        gpuops.sign(gpuops.modulus_floor(a, b))
        device.synchronize()

    case.update(interleaved({"chain": chain, "synchronize idle": device.synchronize}, rounds, warmup))
    middle, last = gpuops.asarray(np.empty(n, np.float32), device), gpuops.asarray(np.empty(n, np.float32), device)
    steps = []
    for name, operands in (("ELEMENT_WISE_MODULUS_FLOOR", (a, b, middle)), ("ELEMENT_WISE_SIGN", (middle, last))):
        spec = spec_by_name(name)
        compiled = device.compile(spec.desc_type(**{f: x.desc for f, x in zip(spec.tensor_fields, operands)}))
        steps.append((compiled, compiled.bind({f: x.binding for f, x in zip(spec.tensor_fields, operands)})))

    def record(encoder, writes):
        for index, (compiled, table) in enumerate(steps):
            compiled.record(encoder, table, timestamp_writes=split_writes(writes, index, len(steps)))

    timing = timer.run(record, rounds, warmup, repeats=repeats)
    case["kernels"] = {**timing.summary(), "repeats": repeats}
    gpu = timing.gpu_median_ns
    if gpu:
        idle = idle_floor_ns if idle_floor_ns is not None else case["synchronize idle"]["median_ns"]
        case["roof_ns"] = gpu + idle
        case["ratios"] = {"chain / (kernels + idle wait)": case["chain"]["median_ns"] / case["roof_ns"]}
    return case


# ------------------------------------------------------------------------------------- small after large

def measure_small_after_large(device: gpuops.Device, exponent: int, rounds: int) -> dict:
    x = np.linspace(-3, 3, 1024, dtype=np.float32)

    def small() -> dict:
        return interleaved({"sign 1024": lambda: gpuops.sign(x, device=device)}, rounds, 20)["sign 1024"]

    case = {"before": small(), "pool_before": pool_stats(device)}
    rng = np.random.default_rng(2)
    series = []
    for dtype, n in (("float32", 1 << exponent), ("int64", 1 << (exponent - 1)), ("float16", 1 << exponent),
                     ("int8", 1 << exponent)):
        a, b = operands(dtype, n, rng)
        for function in ("modulus_floor", "sign"):
            args = (a, b) if function == "modulus_floor" else (a,)
            run = getattr(gpuops, function)
            got = run(*args, device=device)
            with np.errstate(all="ignore"):
                ok = exact(got, NUMPY[function](*args))
            del got
            timed = interleaved({"call": lambda: run(*args, device=device)}, 5, 0)["call"]
            bytes_moved = sum(v.nbytes for v in args) + a.nbytes
            series.append({"function": function, "dtype": dtype, "elements": n, "exact": ok, **timed,
                           "gbps": bytes_moved / timed["median_ns"]})
        del a, b
    case["series"] = series
    case["after"] = small()
    case["pool_after"] = pool_stats(device)
    case["threads_after"] = sorted(thread.name for thread in threading.enumerate())
    # Diagnostics of a slowdown: a thread that competes for the GIL makes a waiting call wait up to the switch
    # interval (5 ms) for it; a pool of large idle buffers would slow it until emptied.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        case["after_switch_interval_0.1ms"] = small()
    finally:
        sys.setswitchinterval(interval)
    pool = getattr(device, "pool", None)
    if pool is not None:
        pool.clear()
        case["after_pool_cleared"] = small()
    case["ratios"] = {"after / before": case["after"]["median_ns"] / case["before"]["median_ns"]}
    return case


def pool_stats(device: gpuops.Device) -> dict | None:
    pool = getattr(device, "pool", None)
    return None if pool is None else dict(vars(pool.stats()))


def operands(dtype: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if np.dtype(dtype) == np.float32:  # made as float32 at once: 2^30 elements in seconds, not a minute
        a = rng.standard_normal(n, dtype=np.float32)
        a *= 100
        b = rng.standard_normal(n, dtype=np.float32)
        b *= 10
    elif np.dtype(dtype).kind == "f":
        a = (rng.standard_normal(n) * 100).astype(dtype)
        b = (rng.standard_normal(n) * 10).astype(dtype)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b[b == 0] = 1
    return a, b


# ---------------------------------------------------------------------------------------------------- split

def split_devices(device: gpuops.Device, wanted: int | None) -> tuple[list[gpuops.Device], str]:
    """One Device per adapter of the default device's name and backend (identical GPUs), or `wanted` Devices on the
    default adapter where there is one such adapter or gpuops cannot pick adapters by index."""
    listing = getattr(gpuops, "adapters", None)
    if callable(listing):  # (in an older gpuops, gpuops.adapters is a module)
        info = device.adapter.info
        twins = [a for a in listing(device.backend) if a.name == info["device"] and a.backend == info["backend_type"]]
        if len(twins) > 1 and (wanted is None or wanted <= len(twins)):
            chosen = twins[:wanted] if wanted else twins
            return [gpuops.Device(adapter=a.index, backend=device.backend) for a in chosen], "one per adapter"
    count = wanted or 2
    return [gpuops.Device(wgpu_device=None, adapter=device.adapter.info["device"], backend=device.backend)
            for _ in range(count)], "all on one adapter"


class InStep:
    """Threads that each run their own call once a step, all released together: step() returns when every call of
    the step has ended, so a step takes as long as its slowest call. A call's exception is kept in `failures`.
    Use as a context manager (its threads end on exit)."""

    def __init__(self, calls: list[Callable[[], object]]):
        self._start, self._end = threading.Barrier(len(calls) + 1), threading.Barrier(len(calls) + 1)
        self._stop = threading.Event()
        self.failures: list[BaseException] = []
        self._threads = [threading.Thread(target=self._work, args=(call,), daemon=True) for call in calls]
        for thread in self._threads:
            thread.start()

    def _work(self, call: Callable[[], object]) -> None:
        while True:
            self._start.wait()
            if self._stop.is_set():
                return
            try:
                call()
            except BaseException as exc:  # reported after the run
                self.failures.append(exc)
            self._end.wait()

    def step(self) -> None:
        self._start.wait()
        self._end.wait()

    def __enter__(self) -> InStep:
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._start.wait()
        for thread in self._threads:
            thread.join()


def parts_of(n: int, count: int) -> list[tuple[int, int]]:
    """`count` nearly equal consecutive parts of range(n), as (start, end)."""
    bounds = [n * k // count for k in range(count + 1)]
    return list(zip(bounds, bounds[1:]))


def measure_split(device: gpuops.Device, n: int, wanted: int | None, rounds: int) -> dict:
    devices, placement = split_devices(device, wanted)
    count = len(devices)
    rng = np.random.default_rng(3)
    a, b = operands("float32", n, rng)
    whole, parts = np.empty_like(a), np.empty_like(a)
    with np.errstate(all="ignore"):
        want = np.remainder(a, b)
    gpuops.modulus_floor(a, b, out=whole, device=devices[0])
    calls = [functools.partial(gpuops.modulus_floor, a[lo:hi], b[lo:hi], out=parts[lo:hi], device=part_device)
             for (lo, hi), part_device in zip(parts_of(n, count), devices)]
    with InStep(calls) as split:
        split.step()  # each device's pieces compiled and pooled
        case = {"elements": n, "devices": count, "placement": placement,
                "adapters": [d.adapter_name for d in devices]}
        case.update(interleaved({"one device": lambda: gpuops.modulus_floor(a, b, out=whole, device=devices[0]),
                                 f"{count} devices": split.step}, rounds, 1))
    case["exact"] = not split.failures and exact(whole, want) and exact(parts, want)
    if split.failures:
        case["error"] = repr(split.failures[0])
    case["ratios"] = {"speedup": case["one device"]["median_ns"] / case[f"{count} devices"]["median_ns"]}
    case["gbps"] = {name: 3 * a.nbytes / case[name]["median_ns"] for name in ("one device", f"{count} devices")}
    return case


# ---------------------------------------------------------------------------------------------------- links

def measure_links(n: int, rounds: int) -> dict | None:
    """The host's path to its GPUs the fastest way the platform allows, without gpuops or WebGPU: CUDA's own copies
    (PyTorch) of n float32 between host memory and the GPUs, on one GPU and on every GPU at once (a part each, one
    thread each), from and into pageable memory (as NumPy arrays lie; the destination written before, and a new one
    as a new result array is) and pinned memory. None without PyTorch on CUDA."""
    torch = torch_cuda()
    if torch is None:
        return None
    gpus = torch.cuda.device_count()
    rows = []
    for memory in ("pageable", "pinned"):
        for count in sorted({1, gpus}):
            rows.append(link_row(torch, n, count, memory, rounds))
    one = {row["memory"]: row for row in rows if row["gpus"] == 1}
    for row in rows:  # every GPU at once against one GPU alone moving all n
        row["speedup"] = {name: row["gbps"][name] / one[row["memory"]]["gbps"][name] for name in row["gbps"]}
    return {"elements": n, "gpus": gpus, "rows": rows}


def link_row(torch, n: int, count: int, memory: str, rounds: int) -> dict:
    pinned = memory == "pinned"
    sizes = [hi - lo for lo, hi in parts_of(n, count)]
    host_in = [torch.ones(size, dtype=torch.float32, pin_memory=pinned) for size in sizes]
    host_out = [torch.zeros(size, dtype=torch.float32, pin_memory=pinned) for size in sizes]  # written before
    on_gpu = [torch.empty(size, dtype=torch.float32, device=f"cuda:{index}") for index, size in enumerate(sizes)]

    def upload(index: int) -> None:
        on_gpu[index].copy_(host_in[index])
        torch.cuda.synchronize(index)

    def download(index: int) -> None:
        host_out[index].copy_(on_gpu[index])
        torch.cuda.synchronize(index)

    def download_new(index: int) -> None:
        torch.empty(sizes[index], dtype=torch.float32).copy_(on_gpu[index])
        torch.cuda.synchronize(index)

    kinds = {"upload": upload, "download": download}
    if not pinned:
        kinds["download into new memory"] = download_new
    with contextlib.ExitStack() as threads:
        steppers = {name: threads.enter_context(InStep([functools.partial(call, index) for index in range(count)]))
                    for name, call in kinds.items()}
        for stepper in steppers.values():
            stepper.step()  # untimed: the copies' first use
        timed = interleaved({name: stepper.step for name, stepper in steppers.items()}, rounds, 1)
    failures = [exc for stepper in steppers.values() for exc in stepper.failures]
    for tensors in (host_in, host_out, on_gpu):
        tensors.clear()
    torch.cuda.empty_cache()
    row = {"memory": memory, "gpus": count, "elements": n, **timed,
           "gbps": {name: 4 * n / timed[name]["median_ns"] for name in kinds}}
    if failures:
        row["error"] = repr(failures[0])
    return row


# ---------------------------------------------------------------------------------------------------- large

def measure_large(device: gpuops.Device, n: int, iterations: int, compare: bool) -> list[dict]:
    """sign and modulus_floor of n float32 host elements (and the comparisons): a case each."""
    cases = []
    torch = torch_cuda() if compare else None
    a, b = operands("float32", n, np.random.default_rng(4))
    for function in ("sign", "modulus_floor"):
        args = (a, b) if function == "modulus_floor" else (a,)
        run = getattr(gpuops, function)
        case = {"function": function, "dtype": "float32", "elements": n}
        try:
            got = run(*args, device=device)
        except gpuops.GpuOpsError as exc:
            case["error"] = f"{type(exc).__name__}: {exc}"
            cases.append(case)
            continue
        with np.errstate(all="ignore"):
            start = time.perf_counter_ns()
            want = NUMPY_UFUNCS[function](*args)
            numpy_ns = time.perf_counter_ns() - start  # NumPy's own function alone
            if function == "sign":
                as_gpuops_sign(want)
        case["exact"] = exact(got, want)
        del got, want
        bytes_moved = sum(v.nbytes for v in args) + a.nbytes
        rows = {"gpuops": lambda: run(*args, device=device)}
        if compare:
            if torch is not None:
                op = getattr(torch, {"sign": "sign", "modulus_floor": "remainder"}[function])
                rows["torch"] = lambda: op(*(torch.from_numpy(v).cuda() for v in args)).cpu().numpy()
            rows.update(cupy_row(function, args))
        with np.errstate(all="ignore"):
            case.update(interleaved(rows, iterations, 1))
        if compare:  # NumPy on the CPU, timed once: the reference call above (2^30 float32 remainders take 30 s)
            case["numpy"] = summary([numpy_ns])
        case["gbps"] = {name: bytes_moved / case[name]["median_ns"] for name in (*rows, "numpy") if name in case}
        cases.append(case)
    return cases


def cupy_row(function: str, args: tuple) -> dict:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # not installed, or no CUDA device: CuPy raises its own types
        return {}
    op = getattr(cupy, {"sign": "sign", "modulus_floor": "remainder"}[function])
    return {"cupy": lambda: cupy.asnumpy(op(*(cupy.asarray(v) for v in args)))}


# ----------------------------------------------------------------------------------------- submit during wait

def measure_submit_during_wait(device: gpuops.Device, long_job_ms: float) -> dict:
    """Thread B's 4-byte copy submitted while thread A waits for a long GPU job: how long B's submit takes."""
    wgpu_device = device.wgpu_device
    usage = device.wgpu.BufferUsage
    size = 64 << 20
    big_a = wgpu_device.create_buffer(size=size, usage=usage.COPY_SRC | usage.COPY_DST)
    big_b = wgpu_device.create_buffer(size=size, usage=usage.COPY_SRC | usage.COPY_DST)
    small_a = wgpu_device.create_buffer(size=4, usage=usage.COPY_SRC)
    small_b = wgpu_device.create_buffer(size=4, usage=usage.COPY_DST)
    native = NativeCalls.of(device)

    def job(copies: int) -> None:
        encoder = wgpu_device.create_command_encoder()
        for _ in range(copies):
            encoder.copy_buffer_to_buffer(big_a, 0, big_b, 0, size)
        wgpu_device.queue.submit([encoder.finish()])

    def job_ms(copies: int) -> float:
        device.synchronize()
        start = time.perf_counter()
        job(copies)
        device.synchronize()
        return (time.perf_counter() - start) * 1e3

    job_ms(1)
    copies = max(1, int(long_job_ms / max(job_ms(4) / 4, 1e-3)))
    case = {"long_job_ms": job_ms(copies), "copies": copies}
    waits = {"gpuops synchronize": device.synchronize}
    if native is not None:
        waits["blocking poll"] = lambda: native.poll(True)
        waits["non-blocking polls"] = lambda: [None for _ in iter(lambda: native.poll(False), True)]
    for name, wait in waits.items():
        job(copies)
        waiting = threading.Thread(target=wait)
        waiting.start()
        time.sleep(min(0.25, long_job_ms / 4e3))  # well inside the job
        start = time.perf_counter_ns()
        encoder = wgpu_device.create_command_encoder()
        encoder.copy_buffer_to_buffer(small_a, 0, small_b, 0, 4)
        wgpu_device.queue.submit([encoder.finish()])
        case[name] = {"submit_ns": time.perf_counter_ns() - start}
        waiting.join()
        device.synchronize()
    for buffer in (big_a, big_b, small_a, small_b):
        buffer.destroy()
    return case


# ----------------------------------------------------------------------------------------------------- main

def us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f}"


def report(document: dict) -> None:
    print(f"{document['adapter']} ({document['backend']}), gpuops {document['gpuops']}, wgpu {document['wgpu']}")
    floors = document.get("floors")
    if floors:
        print("floors and gpuops, medians (p10) in us:")
        for name, row in floors.items():
            if isinstance(row, dict) and "median_ns" in row:
                print(f"  {name:14} {us(row['median_ns']):>9} ({us(row['p10_ns'])})")
        for name, value in floors["ratios"].items():
            print(f"  {name}: {value:.2f}")
    chain = document.get("chain")
    if chain:
        ratio = chain.get("ratios", {}).get("chain / (kernels + idle wait)")
        print(f"chain of {chain['elements']}: {us(chain['chain']['median_ns'])} us, kernels GPU "
              f"{us(chain['kernels'].get('gpu_median_ns'))} us, idle wait {us(chain['synchronize idle']['median_ns'])}"
              f" us; chain / (kernels + idle wait) {'-' if ratio is None else f'{ratio:.2f}'}"
              f"{'' if chain['exact'] else '  NOT EXACT'}")
    small = document.get("small_after_large")
    if small:
        cleared = small.get("after_pool_cleared", {}).get("median_ns")
        print(f"sign 1024 before large calls {us(small['before']['median_ns'])} us, after "
              f"{us(small['after']['median_ns'])} us ({small['ratios']['after / before']:.2f} x), with a 0.1 ms GIL "
              f"switch interval {us(small['after_switch_interval_0.1ms']['median_ns'])} us, after emptying the pool "
              f"{us(cleared)} us; threads: {', '.join(small['threads_after'])}")
        for row in small["series"]:
            print(f"  {row['function']:14} {row['dtype']:8} {row['elements']:>11} {us(row['median_ns']):>10} us "
                  f"{row['gbps']:6.2f} GB/s{'' if row['exact'] else '  NOT EXACT'}")
    split = document.get("split")
    if split:
        names = [k for k in split["gbps"]]
        print(f"split of {split['elements']} over {split['devices']} devices ({split['placement']}): "
              + ", ".join(f"{k} {us(split[k]['median_ns'])} us ({split['gbps'][k]:.2f} GB/s)" for k in names)
              + f"; speedup {split['ratios']['speedup']:.2f} x{'' if split['exact'] else '  NOT EXACT'}")
    links = document.get("links")
    if links:
        for row in links["rows"]:
            print(f"links {row['memory']:8} {row['gpus']} GPU(s), {row['elements']} float32: "
                  + ", ".join(f"{k} {row['gbps'][k]:.2f} GB/s ({row['speedup'][k]:.2f} x)" for k in row["gbps"])
                  + (f"  {row['error']}" if "error" in row else ""))
    for row in document.get("large", []):
        if "error" in row:
            print(f"large {row['function']} {row['elements']}: {row['error']}")
            continue
        print(f"large {row['function']:14} {row['elements']:>11}: "
              + ", ".join(f"{k} {us(row[k]['median_ns'])} us ({row['gbps'][k]:.2f} GB/s)" for k in row["gbps"])
              + ("" if row["exact"] else "  NOT EXACT"))
    waits = document.get("submit_during_wait")
    if waits:
        print(f"a submit while another thread waits for a {waits['long_job_ms']:.0f} ms job: "
              + ", ".join(f"{k} {us(v['submit_ns'])} us" for k, v in waits.items() if isinstance(v, dict)))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="sizes for the software adapter: chain 2^20, series 2^20, split 2^22, large 2^24")
    parser.add_argument("--rounds", type=int, default=300, help="rounds of the floors (default 300)")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--chain-size", type=parse_size, default=None, help="default 2^26 (--quick: 2^20)")
    parser.add_argument("--series-exponent", type=int, default=None, help="default 26 (--quick: 20)")
    parser.add_argument("--split-size", type=parse_size, default=None, help="default 2^27 (--quick: 2^22)")
    parser.add_argument("--devices", type=int, default=None,
                        help="devices of the split (default: every adapter like the default one, else 2 on it)")
    parser.add_argument("--links-size", type=parse_size, default=None, help="default 2^28 (--quick: 2^22)")
    parser.add_argument("--large", nargs="*", type=parse_size, default=None,
                        help="large call sizes (default 2^28 2^30; --quick: 2^24)")
    parser.add_argument("--large-iterations", type=int, default=3)
    parser.add_argument("--compare", action="store_true", help="NumPy, PyTorch and CuPy beside the large calls")
    parser.add_argument("--long-job-ms", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=1, help="chains per GPU-timed span (Dawn: 10)")
    parser.add_argument("--skip-calibration", action="store_true",
                        help="take timestamp ticks as nanoseconds instead of measuring them (quick runs)")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=("floors", "chain", "small", "split", "links", "large", "wait"),
                        help="parts to leave out")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    quick = args.quick
    chain_size = args.chain_size or (1 << (20 if quick else 26))
    series = args.series_exponent or (20 if quick else 26)
    split_size = args.split_size or (1 << (22 if quick else 27))
    large = args.large if args.large is not None else ([1 << 24] if quick else [1 << 28, 1 << 30])

    cuda_contexts = hold_cuda_contexts()  # (see gpuops.bench.cuda_context)
    device = gpuops.default_device()
    document = {"schema": SCHEMA, "adapter": device.adapter_name, "backend": device.backend,
                "gpuops": getattr(gpuops, "__version__", "?"), "gpuops_path": gpuops.__file__, "wgpu": wgpu.__version__,
                "host": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
                "cuda_contexts": len(cuda_contexts), "quick": quick}
    def save(part: str) -> None:
        """Each part's figures are kept as soon as it ends: a run cut short keeps the parts it finished."""
        print(f"{part}: done after {time.perf_counter() - started:.0f} s", flush=True)
        if args.json:
            with open(args.json, "w") as file:
                json.dump(document, file, indent=1, default=str)

    started = time.perf_counter()
    floors = measure_floors(device, args.rounds, args.warmup) if "floors" not in args.skip else None
    if floors is not None:
        document["floors"] = floors
        save("floors")
    if "chain" not in args.skip:
        timer = GpuTimer(device)
        if args.skip_calibration or not timer.supported:
            document["ticks"] = {"method": "assumed nanoseconds" if timer.supported else "unavailable"}
        else:
            document["ticks"] = calibrate(device, timer).to_json()
        idle = floors.get("submit+block", {}).get("median_ns") if floors else None
        document["chain"] = measure_chain(device, timer, chain_size, max(20, args.rounds // 10), 3, args.repeats,
                                          idle)
        save("chain")
    if "small" not in args.skip:
        document["small_after_large"] = measure_small_after_large(device, series, max(50, args.rounds // 2))
        save("small")
    if "split" not in args.skip:
        document["split"] = measure_split(device, split_size, args.devices, 7 if quick else 9)
        save("split")
    if "links" not in args.skip:
        links = measure_links(args.links_size or (1 << (22 if quick else 28)), 5 if quick else 9)
        if links is not None:
            document["links"] = links
            save("links")
    if "large" not in args.skip:
        document["large"] = []
        for size in large:
            document["large"] += measure_large(device, size, args.large_iterations, args.compare)
            save(f"large {size}")
    if "wait" not in args.skip and device.backend == "wgpu-native":  # (Dawn's objects are for one thread at a time)
        document["submit_during_wait"] = measure_submit_during_wait(device, args.long_job_ms)
        save("wait")
    report(document)
    if args.json:
        print(f"wrote {args.json}")
    return document


if __name__ == "__main__":
    main()
