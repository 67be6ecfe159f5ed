"""The NumPy-level functions end to end against the bus, on the default adapter (GPUOPS_ADAPTER picks another).

    python bench/numpy_level.py [--sizes 1024 2^22 2^24 2^26] [--all-types] [--json PATH]

Per size, float32 (sign and modulus_floor), each time the median of several calls:
  floor    a bare wgpu round trip with everything made once: queue.write_buffer of the inputs' bytes, a trivial
           copy kernel, a copy into a MAP_READ staging buffer, map, one CPU copy into a preallocated array, unmap.
           The read-back roof: no NumPy-level call can move the same bytes faster through wgpu.
  gpuops   gpuops.sign(x) / gpuops.modulus_floor(a, b): host arrays in, a new host array out.
  out=     the same into a preallocated out= array (the floor's own terms).
           The floors, gpuops and out= take their samples in turn, one call of each per round.
  numpy    the same function in NumPy on the CPU.
  torch    PyTorch on CUDA end to end (host -> device, op, device -> host), and CuPy likewise: only where they
           import and find a GPU (neither is a dependency of gpuops).
  chain    modulus_floor then sign on device arrays (gpuops.asarray), waited for each time, against the two
           kernels' GPU time (timestamp queries, where the adapter has them) recorded through the DirectML-level API
           on the same buffers, each chain waited for by Device.synchronize(); 'chain/k' is the same with 16 chains
           submitted before one wait (the host cost per chain when the GPU is kept busy); 'idle wait' is
           Device.synchronize() on an idle queue, the round trip no chain can avoid ('GPU + wait': the kernels' time
           plus that round trip, as a ratio to the kernels' time, the best a chain with a wait can do).
With --cuda-context (implied where PyTorch is timed) a CUDA context is held for the whole run, so that every figure
comes from the GPU in the same state: NVIDIA's driver runs Vulkan work in a lower performance state while no CUDA
context exists.
--repeats N times the kernels' GPU time over N chains back to back per timed span (Dawn quantizes its timestamps).
--all-types adds modulus_floor and modulus_truncate on every type at --types-size elements (2^24): gpuops, floor
and NumPy. Every gpuops result is compared with NumPy bit for bit once ('exact' in the JSON). Ratios are against the
floor (1.0 = as fast as the bare round trip); 'chain' is against the kernels' GPU time.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

import gpuops
from gpuops.bench.cli import parse_size
from gpuops.bench.reference import compare
from gpuops.bench.ticks import calibrate, split_writes
from gpuops.bench.cuda_context import hold_cuda_contexts
from gpuops.bench.timing import CopyKernel, GpuTimer
from gpuops.operators import spec_by_name

SCHEMA = "gpuops-numpy-level/1"
DEFAULT_SIZES = (1 << 10, 1 << 22, 1 << 24, 1 << 26)
ALL_TYPES = ("float16", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
CHAIN_DEPTH = 16  # chains submitted before one wait in 'chain/k'


def iterations_for(nbytes: int, requested: int | None) -> int:
    """Many calls for small arrays (their times are short and noisy), few for large ones."""
    if requested is not None:
        return requested
    return int(min(200, max(5, (1 << 28) // max(nbytes, 1))))


def interleaved_ns(runs: dict[str, Callable[[], object]], iterations: int, warmup: int) -> dict[str, dict]:
    """median_ns of each run, their samples taken in turn (one call of each per round), so that a drift of the
    host's speed during the measurement reaches every run alike."""
    for _ in range(warmup):
        for run in runs.values():
            run()
    times: dict[str, list[int]] = {name: [] for name in runs}
    for _ in range(iterations):
        for name, run in runs.items():
            start = time.perf_counter_ns()
            run()
            times[name].append(time.perf_counter_ns() - start)
    return {name: {"median_ns": statistics.median(samples), "min_ns": min(samples), "iterations": iterations}
            for name, samples in times.items()}


def median_ns(run: Callable[[], object], iterations: int, warmup: int) -> dict:
    return interleaved_ns({"run": run}, iterations, warmup)["run"]


def inputs(function: str, dtype: str, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Finite operands; divisors never zero (their remainder is NumPy's warning case, not what is measured)."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        a = (rng.standard_normal(n) * 100).astype(dtype)
        b = (rng.standard_normal(n) * 10).astype(dtype)
        b[b == 0] = 1
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b[b == 0] = 1
    return [a] if function == "sign" else [a, b]


NUMPY = {"sign": np.sign, "modulus_floor": np.remainder, "modulus_truncate": np.fmod}
TORCH = {"sign": "sign", "modulus_floor": "remainder", "modulus_truncate": "fmod"}


class BareFloor:
    """A bare wgpu round trip with every resource made once (see the module docstring). `mapped`: the inputs go
    through MAP_WRITE buffers and a copy recorded before the kernel, instead of queue.write_buffer."""

    def __init__(self, device: gpuops.Device, in_bytes: list[int], out_bytes: int, mapped: bool):
        self.device = device
        wgpu_device = device.wgpu_device
        usage = device.wgpu.BufferUsage
        self.copy = CopyKernel(device, out_bytes)
        self.inputs = [self.copy.src] + [wgpu_device.create_buffer(size=-(-b // 16) * 16,
                                                                   usage=usage.STORAGE | usage.COPY_DST)
                                         for b in in_bytes[1:]]
        self.uploads = [wgpu_device.create_buffer(size=-(-b // 16) * 16, usage=usage.MAP_WRITE | usage.COPY_SRC)
                        for b in in_bytes] if mapped else []
        self.size = -(-out_bytes // 4) * 4
        self.staging = wgpu_device.create_buffer(size=self.size, usage=usage.MAP_READ | usage.COPY_DST)

    def run(self, host_inputs: list[np.ndarray], result: np.ndarray) -> None:
        device = self.device
        wgpu_device = device.wgpu_device
        access = device.host_access  # mapped and waited for as gpuops maps and waits
        queue = wgpu_device.queue
        encoder = wgpu_device.create_command_encoder()
        if self.uploads:
            for upload, buffer, x in zip(self.uploads, self.inputs, host_inputs):
                words = -(-x.nbytes // 4) * 4
                pending = access.begin_map(upload, True, words)
                device.wait(pending, "floor", "mapping an upload buffer")
                view = access.mapped_view(upload, pending, words, write=True)
                if view is None:
                    upload.write_mapped(x.view(np.uint8), 0)
                else:
                    np.copyto(np.frombuffer(view, np.uint8, x.nbytes), x.reshape(-1).view(np.uint8))
                access.unmap(upload, pending, view)
                encoder.copy_buffer_to_buffer(upload, 0, buffer, 0, words)
        else:
            for buffer, x in zip(self.inputs, host_inputs):
                queue.write_buffer(buffer, 0, x)
        self.copy.record(encoder, None)
        encoder.copy_buffer_to_buffer(self.copy.dst, 0, self.staging, 0, self.size)
        queue.submit([encoder.finish()])
        pending = access.begin_map(self.staging, False, self.size)
        device.wait(pending, "floor", "reading back")
        mapped = access.mapped_view(self.staging, pending, self.size, write=False)
        np.copyto(result.reshape(-1).view(np.uint8), np.frombuffer(mapped, np.uint8, result.nbytes))
        access.unmap(self.staging, pending, mapped)

    def release(self) -> None:
        self.copy.release()
        for buffer in self.inputs[1:] + self.uploads + [self.staging]:
            buffer.destroy()


def torch_end_to_end(function: str, host: list[np.ndarray], iterations: int, warmup: int) -> dict:
    try:
        import torch
    except ImportError:
        return {"error": "PyTorch is not importable"}
    if not torch.cuda.is_available():
        return {"error": "PyTorch finds no CUDA device"}
    op = getattr(torch, TORCH[function])

    def run():
        return op(*(torch.from_numpy(x).cuda() for x in host)).cpu().numpy()

    try:
        return median_ns(run, iterations, warmup)
    except (RuntimeError, TypeError) as exc:
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}


def cupy_end_to_end(function: str, host: list[np.ndarray], iterations: int, warmup: int) -> dict:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # not installed, or no CUDA device: CuPy raises its own types
        return {"error": f"CuPy is not usable: {type(exc).__name__}"}
    op = getattr(cupy, NUMPY[function].__name__)

    def run():
        return cupy.asnumpy(op(*(cupy.asarray(x) for x in host)))

    try:
        return median_ns(run, iterations, warmup)
    except Exception as exc:  # CuPy's CUDA errors
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}


def exact(got, want) -> bool:
    return compare(np.asarray(got), np.asarray(want)) is None


def kernel_time(device: gpuops.Device, timer: GpuTimer, function: str, host: list[np.ndarray], want: np.ndarray,
                iterations: int, warmup: int) -> dict:
    """The operator's own GPU time on device arrays of the same data (through the DirectML-level API)."""
    operands = [gpuops.asarray(x, device) for x in host] + [gpuops.asarray(np.empty_like(want), device)]
    spec = spec_by_name({"sign": "ELEMENT_WISE_SIGN", "modulus_floor": "ELEMENT_WISE_MODULUS_FLOOR",
                         "modulus_truncate": "ELEMENT_WISE_MODULUS_TRUNCATE"}[function])
    compiled = device.compile(spec.desc_type(**{f: x.desc for f, x in zip(spec.tensor_fields, operands)}))
    table = compiled.bind({f: x.binding for f, x in zip(spec.tensor_fields, operands)})
    return timer.run(lambda encoder, writes: compiled.record(encoder, table, timestamp_writes=writes),
                     iterations, warmup).summary()


def measure_call(device: gpuops.Device, timer: GpuTimer, function: str, dtype: str, n: int,
                 args: argparse.Namespace, rng: np.random.Generator, frameworks: tuple[str, ...]) -> dict:
    """One function on one type and size; `frameworks`: which of numpy, torch and cupy to time beside it."""
    host = inputs(function, dtype, n, rng)
    run = getattr(gpuops, function)
    with np.errstate(all="ignore"):
        want = NUMPY[function](*host)
    nbytes = sum(x.nbytes for x in host) + want.nbytes
    iterations = iterations_for(nbytes, args.iterations)
    case = {"function": function, "dtype": dtype, "elements": n, "host_bytes": nbytes, "iterations": iterations}
    try:
        case["exact"] = exact(run(*host, device=device), want)
    except gpuops.GpuOpsError as exc:
        case["error"] = f"{type(exc).__name__}: {exc}"
        return case
    result, out = np.empty_like(want), np.empty_like(want)
    write_floor = BareFloor(device, [x.nbytes for x in host], want.nbytes, mapped=False)
    mapped_floor = BareFloor(device, [x.nbytes for x in host], want.nbytes, mapped=True)
    try:
        case.update(interleaved_ns({"floor_write": lambda: write_floor.run(host, result),
                                    "floor_mapped": lambda: mapped_floor.run(host, result),
                                    "gpuops": lambda: run(*host, device=device),
                                    "gpuops_out": lambda: run(*host, out=out, device=device)},
                                   iterations, args.warmup))
        case["copy_kernel"] = timer.run(write_floor.copy.record, iterations, args.warmup).summary()
    finally:
        write_floor.release()
        mapped_floor.release()
    case["floor"] = min((case["floor_write"], case["floor_mapped"]), key=lambda m: m["median_ns"])
    case["kernel"] = kernel_time(device, timer, function, host, want, iterations, args.warmup)
    if "numpy" in frameworks:
        with np.errstate(all="ignore"):
            case["numpy"] = median_ns(lambda: NUMPY[function](*host), iterations, args.warmup)
    if "torch" in frameworks:
        case["torch"] = torch_end_to_end(function, host, iterations, args.warmup)
    if "cupy" in frameworks:
        case["cupy"] = cupy_end_to_end(function, host, iterations, args.warmup)
    floor_ns = case["floor"]["median_ns"]
    case["ratios"] = {name: case[name]["median_ns"] / floor_ns for name in
                      ("gpuops", "gpuops_out", "numpy", "torch", "cupy") if "median_ns" in case.get(name, {})}
    copy_ns, kernel_ns = case["copy_kernel"]["gpu_median_ns"], case["kernel"]["gpu_median_ns"]
    if copy_ns is not None and kernel_ns is not None:
        # the floor with the operator's kernel in place of the copy: what the transfers alone leave to gpuops
        case["floor_with_kernel_ns"] = floor_ns - copy_ns + kernel_ns
        case["ratios"]["gpuops_vs_floor_with_kernel"] = case["gpuops"]["median_ns"] / case["floor_with_kernel_ns"]
    case["gbps"] = {name: nbytes / case[name]["median_ns"] for name in ("floor", "gpuops", "gpuops_out")}
    return case


def measure_chain(device: gpuops.Device, timer: GpuTimer, n: int, args: argparse.Namespace,
                  rng: np.random.Generator) -> dict:
    """modulus_floor then sign on device arrays, against the two kernels' GPU time."""
    a_host, b_host = inputs("modulus_floor", "float32", n, rng)
    a, b = gpuops.asarray(a_host, device), gpuops.asarray(b_host, device)
    iterations = iterations_for(3 * a_host.nbytes, args.iterations)
    case = {"function": "modulus_floor+sign (device arrays)", "dtype": "float32", "elements": n,
            "iterations": iterations}
    with np.errstate(all="ignore"):
        case["exact"] = exact(gpuops.sign(gpuops.modulus_floor(a, b)).numpy(), np.sign(np.remainder(a_host, b_host)))

    def chain():
        gpuops.sign(gpuops.modulus_floor(a, b))
        device.synchronize()

    def chains():
        for _ in range(CHAIN_DEPTH):
            gpuops.sign(gpuops.modulus_floor(a, b))
        device.synchronize()

    case["chain"] = median_ns(chain, iterations, args.warmup)
    # The wait's own round trip on an idle queue: what a chain costs beyond its kernels even with no host work.
    case["synchronize_idle"] = median_ns(device.synchronize, max(iterations, 50), args.warmup)
    pipelined = median_ns(chains, max(3, iterations // CHAIN_DEPTH), 1)
    case["chain_pipelined"] = {key: value / CHAIN_DEPTH if key.endswith("_ns") else value
                               for key, value in pipelined.items()}
    # The same two kernels through the DirectML-level API on the same device buffers, timed on the GPU.
    middle = gpuops.asarray(np.empty(n, np.float32), device)
    last = gpuops.asarray(np.empty(n, np.float32), device)
    steps = []
    for name, operands in (("ELEMENT_WISE_MODULUS_FLOOR", (a, b, middle)), ("ELEMENT_WISE_SIGN", (middle, last))):
        spec = spec_by_name(name)
        desc = spec.desc_type(**{field: x.desc for field, x in zip(spec.tensor_fields, operands)})
        compiled = device.compile(desc)
        steps.append((compiled, compiled.bind({field: x.binding for field, x in zip(spec.tensor_fields, operands)})))

    def record(encoder, writes):
        for index, (compiled, table) in enumerate(steps):
            compiled.record(encoder, table, timestamp_writes=split_writes(writes, index, len(steps)))

    timing = timer.run(record, iterations, args.warmup, repeats=args.repeats)
    case["kernels"] = {**timing.summary(), "repeats": args.repeats}
    gpu = timing.gpu_median_ns
    if gpu:
        case["ratios"] = {"chain": case["chain"]["median_ns"] / gpu,
                          "chain_pipelined": case["chain_pipelined"]["median_ns"] / gpu,
                          "chain_roof": (gpu + case["synchronize_idle"]["median_ns"]) / gpu}
    return case


def _us(ns: float | None) -> str:
    return "         -" if ns is None else f"{ns / 1e3:10.1f}"


def _ratio(value: float | None) -> str:
    return "      -" if value is None else f"{value:7.2f}"


def print_table(cases: list[dict]) -> None:
    print(f"{'case':38} {'elements':>10} {'floor us':>10} {'gpuops us':>10} {'x floor':>7} {'x fl+k':>7} "
          f"{'out= x':>7} {'numpy x':>7} {'torch x':>7} {'cupy x':>7} {'GB/s':>7}")
    for case in cases:
        if "error" in case:
            print(f"{case['function'] + ' ' + case['dtype']:38} {case['elements']:>10} {case['error']}")
            continue
        ratios = case.get("ratios", {})
        if "floor" in case:
            print(f"{case['function'] + ' ' + case['dtype']:38} {case['elements']:>10} "
                  f"{_us(case['floor']['median_ns'])} {_us(case['gpuops']['median_ns'])} "
                  f"{_ratio(ratios.get('gpuops'))} {_ratio(ratios.get('gpuops_vs_floor_with_kernel'))} "
                  f"{_ratio(ratios.get('gpuops_out'))} {_ratio(ratios.get('numpy'))} "
                  f"{_ratio(ratios.get('torch'))} {_ratio(ratios.get('cupy'))} {case['gbps']['gpuops']:7.2f}"
                  f"{'' if case['exact'] else '  NOT EXACT'}")
        else:
            print(f"{case['function'] + ' ' + case['dtype']:38} {case['elements']:>10} "
                  f"kernels GPU {_us(case['kernels']['gpu_median_ns'])} us, chain {_us(case['chain']['median_ns'])} "
                  f"us ({_ratio(ratios.get('chain'))} x GPU), chain/k {_us(case['chain_pipelined']['median_ns'])} us "
                  f"({_ratio(ratios.get('chain_pipelined'))} x GPU), idle wait "
                  f"{_us(case['synchronize_idle']['median_ns'])} us (GPU + wait {_ratio(ratios.get('chain_roof'))} "
                  f"x GPU){'' if case['exact'] else '  NOT EXACT'}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=parse_size, default=list(DEFAULT_SIZES),
                        help="element counts (1024, 2^22, 2**22)")
    parser.add_argument("--all-types", action="store_true",
                        help="also modulus_floor and modulus_truncate on every type at --types-size")
    parser.add_argument("--types-size", type=parse_size, default=1 << 24)
    parser.add_argument("--iterations", type=int, help="calls per measurement (default: by size)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--skip-calibration", action="store_true",
                        help="take timestamp ticks as nanoseconds instead of measuring them (quick runs)")
    parser.add_argument("--no-frameworks", action="store_true", help="skip NumPy, PyTorch and CuPy")
    parser.add_argument("--repeats", type=int, default=1,
                        help="chains per timed span of the kernels' GPU time (Dawn's timestamps are coarse: 10)")
    parser.add_argument("--cuda-context", action="store_true",
                        help="hold a CUDA context for the run (PyTorch's; implied unless --no-frameworks)")
    parser.add_argument("--json", metavar="PATH", help="write the results there")
    args = parser.parse_args(argv)

    cuda_contexts = hold_cuda_contexts() if args.cuda_context or not args.no_frameworks else []  # held to the end
    device = gpuops.default_device()
    timer = GpuTimer(device)
    if args.skip_calibration or not timer.supported:
        ticks = {"method": "assumed nanoseconds" if timer.supported else "unavailable"}
    else:
        ticks = calibrate(device, timer).to_json()
    rng = np.random.default_rng(0)
    frameworks = () if args.no_frameworks else ("numpy", "torch", "cupy")
    cases = []
    for n in args.sizes:
        for function in ("sign", "modulus_floor"):
            cases.append(measure_call(device, timer, function, "float32", n, args, rng, frameworks))
        cases.append(measure_chain(device, timer, n, args, rng))
    if args.all_types:
        for dtype in ALL_TYPES:
            for function in ("modulus_floor", "modulus_truncate"):
                cases.append(measure_call(device, timer, function, dtype, args.types_size, args, rng,
                                          frameworks[:1]))
    print(f"{device.adapter_name} ({device.backend}){', a CUDA context held' if cuda_contexts else ''}; "
          "ratios against the bare floor (chain: against the kernels' GPU time)")
    print_table(cases)
    document = {"schema": SCHEMA, "adapter": device.adapter_name, "backend": device.backend,
                "adapter_info": {k: str(v) for k, v in device.adapter.info.items()}, "host": platform.platform(),
                "python": platform.python_version(), "numpy": np.__version__, "ticks": ticks,
                "cuda_context": bool(cuda_contexts), "cases": cases}
    if args.json:
        with open(args.json, "w") as file:
            json.dump(document, file, indent=1)
    return document


if __name__ == "__main__":
    main()
