"""The performance goals (docs/performance.md), measured in one run beside PyTorch (CUDA) on the same GPU.

    python bench/targets.py --json bench/results/<gpu>-<backend>-targets.json [--elements 67108864]

Every kernel's output is compared with NumPy bit for bit before it is timed. GPU times come from timestamp
queries; bandwidth counts the bytes of tensor elements actually read (distinct elements) and written.
Contiguous rows run at least --elements elements, and more where their types are narrower than the copy's float32:
as many as make the row's largest tensor as large as the copy's (2^27 float16, 2^28 8-bit elements at the
default), since a dispatch's start and drain are a fixed cost that weighs more on fewer bytes (--same-elements
runs every row at --elements).
`python bench/targets.py --render RESULTS.json [...]` prints the markdown table of docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import gpuops
from gpuops import Binding, DataType, TensorDesc
from gpuops.bench.reference import compare
from gpuops.bench.reference import expected as numpy_reference
from gpuops.bench.timing import CopyKernel, GpuTimer
from gpuops.bench.torch_compare import time_torch, torch_cuda
from gpuops.operators import OPERATORS, spec_by_name

# (operator, mode) for every operator and every value of its attribute; mode is the value as a number (the
# results' "mode"), None for an operator without an attribute.
OPS = [(spec.name, None if spec.mode_attribute is None else int(mode[spec.mode_attribute.name]))
       for spec in OPERATORS for mode in spec.modes()]
LAYOUT_TYPES = [DataType.FLOAT32, DataType.FLOAT16, DataType.INT8, DataType.INT64]
LAYOUT_SECTIONS = ("packed-2d", "broadcast", "transposed", "transposed-k", "strided-out")


def type_pairs(operator: str) -> list[tuple[DataType, DataType]]:
    from gpuops.support import SUPPORT
    row = SUPPORT[operator][-1]
    spec = spec_by_name(operator)
    outs = row.types[spec.output]
    pairs = []
    for t in sorted(row.types[spec.inputs[0]]):
        pairs += [(t, t)] if t in outs else [(t, o) for o in sorted(outs)]
    return pairs


def values(data_type: DataType, count: int, rng, divisor: bool = False) -> np.ndarray:
    """Realistic data: normal floats (with some inf/NaN), uniform integers over the full range (no 0 divisors)."""
    dtype = data_type.numpy_dtype
    if dtype.kind == "f":
        x = (rng.standard_normal(count) * 10).astype(dtype)
        x[rng.integers(0, count, count // 1000)] = np.inf
        x[rng.integers(0, count, count // 1000)] = np.nan
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, count, endpoint=True, dtype=dtype)
    if divisor:
        x[x == 0] = 3
    return x


class Runner:
    def __init__(self, device: gpuops.Device, iterations: int, repeats: int):
        self.device, self.iterations, self.repeats = device, iterations, repeats
        self.timer = GpuTimer(device)
        self.usage = device.wgpu.BufferUsage

    def buffer(self, array: np.ndarray | None = None, size: int = 0):
        usage = self.usage.STORAGE | self.usage.COPY_SRC | self.usage.COPY_DST
        if array is None:
            return self.device.wgpu_device.create_buffer(size=-(-size // 16) * 16, usage=usage)
        data = np.zeros(-(-array.nbytes // 16) * 16, np.uint8)
        data[: array.nbytes] = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        return self.device.wgpu_device.create_buffer_with_data(data=data, usage=usage)

    def run(self, operator: str, mode, in_type: DataType, out_type: DataType, sizes: tuple[int, ...],
            strides: dict[str, tuple[int, ...]] | None = None, seed: int = 0) -> dict:
        """Check against NumPy, then time. `strides` per field (elements); memory holds what they reach."""
        spec = spec_by_name(operator)
        strides = strides or {}
        rng = np.random.default_rng(seed)
        tensors, hosts, buffers = {}, {}, {}
        moved = 0
        for name in spec.tensor_fields:
            data_type = out_type if name == spec.output else in_type
            tensor = TensorDesc(data_type, sizes, strides.get(name))
            tensors[name] = tensor
            span = tensor.implied_size_in_bytes // data_type.size
            if name != spec.output:
                hosts[name] = values(data_type, span, rng, divisor=(name == "b_tensor"))
                buffers[name] = self.buffer(hosts[name])
                moved += _distinct(tensor) * data_type.size
            else:
                buffers[name] = self.buffer(size=tensor.total_tensor_size_in_bytes)
                moved += tensor.element_count * data_type.size
        desc = spec.desc_type(**tensors, **spec.mode_values(mode))
        compiled = self.device.compile(desc)
        bindings = {name: Binding(buffer) for name, buffer in buffers.items()}
        compiled.execute(bindings)
        out = tensors[spec.output]
        raw = np.frombuffer(self.device.wgpu_device.queue.read_buffer(buffers[spec.output]), np.uint8)
        got = _view(raw, out)
        logical = [_view(hosts[name].view(np.uint8), tensors[name]) for name in spec.inputs]
        expected = numpy_reference(operator, mode, out_type, *logical)
        exact = compare(got, expected) is None
        row = {"operator": operator, "mode": mode, "dtype": in_type.name, "out_dtype": out_type.name,
               "sizes": list(sizes), "strides": {k: list(v) for k, v in strides.items()}, "bytes": moved,
               "exact": exact}
        if not exact:
            row["error"] = "result differs from NumPy: not timed"
        else:
            timing = self.timer.run(lambda enc, w: compiled.record(enc, bindings, w), self.iterations, 2,
                                    repeats=self.repeats)
            row.update(timing.summary())
            row["gbps"] = moved / timing.gpu_median_ns if timing.gpu_ns else None
            row["logical_inputs"] = None
        for buffer in buffers.values():
            buffer.destroy()
        row["_inputs"] = logical  # for the torch comparison on the same data (dropped before saving)
        return row

    def torch(self, operator: str, mode, inputs: list[np.ndarray], out_type: DataType, **layout: bool) -> dict:
        return time_torch(operator, mode, inputs, out_type.numpy_dtype, self.iterations, 2, **layout)


def _distinct(tensor: TensorDesc) -> int:
    return int(np.prod([n for n, s in zip(tensor.sizes, tensor.element_strides) if s != 0]))


def _view(raw: np.ndarray, tensor: TensorDesc) -> np.ndarray:
    size = tensor.data_type.size
    flat = np.frombuffer(raw.tobytes()[: tensor.implied_size_in_bytes], tensor.data_type.numpy_dtype,
                         tensor.implied_size_in_bytes // size)
    return np.lib.stride_tricks.as_strided(flat, tensor.sizes, tuple(s * size for s in tensor.element_strides))


def contiguous_elements(n: int, in_type: DataType, out_type: DataType, same_elements: bool = False) -> int:
    """A contiguous row's element count: n, or more where the row's types are narrower than the copy's float32, as
    many as make its largest tensor as large as the copy's (n float32 elements)."""
    return n if same_elements else max(n, n * 4 // max(in_type.size, out_type.size))


def label(row: dict) -> str:
    spec = spec_by_name(row["operator"])
    op = spec.numpy_name
    if row.get("mode") is not None:
        op += "-" + spec.mode_attribute.parse(row["mode"]).name.lower()
    return f"{op} {row['dtype'].lower()}" + (f"->{row['out_dtype'].lower()}" if row["out_dtype"] != row["dtype"] else "")


def measure(args) -> dict:
    device = gpuops.Device(policy=gpuops.DispatchPolicy(units_per_invocation=args.units_per_invocation))
    runner = Runner(device, args.iterations, args.repeats)
    n = args.elements
    side = int(n ** 0.5)
    result = {"schema": "gpuops-targets/1", "machine": {"hostname": platform.node(), "platform": platform.platform()},
              "adapter": dict(device.adapter.info), "backend": device.backend, "runtime_checks": device.runtime_checks,
              "versions": {"gpuops": gpuops.__version__, "wgpu": device.wgpu.__version__, "numpy": np.__version__},
              "elements": n, "same_elements": args.same_elements, "iterations": args.iterations,
              "repeats": args.repeats}
    torch = torch_cuda()
    if torch is not None:
        result["versions"]["torch"] = torch.__version__
        result["torch_device"] = torch.cuda.get_device_name()
    copy = CopyKernel(device, n * 4)
    t = runner.timer.run(copy.record, args.iterations, 2, repeats=args.repeats)
    copy.release()
    result["wgsl_copy_gbps"] = copy.bytes_moved / t.gpu_median_ns
    def torch_copy() -> dict:
        return runner.torch("COPY", None, [np.zeros(n, np.float32)], DataType.FLOAT32)

    copies = [torch_copy()]
    result["torch_copy"] = copies[0]
    print(f"WGSL copy {result['wgsl_copy_gbps']:.0f} GB/s, torch copy {result['torch_copy'].get('gbps', 0):.0f} GB/s",
          flush=True)

    def wanted(operator: str, mode, in_type: DataType, out_type: DataType) -> bool:
        name = label({"operator": operator, "mode": mode, "dtype": in_type.name, "out_dtype": out_type.name})
        return args.match is None or re.search(args.match, name) is not None

    def record(section: str, row: dict, compare: bool = True):
        inputs = row.pop("_inputs")
        if compare and row["exact"]:
            transposed = section.startswith("transposed")
            # torch on the same data: contiguous, or the same transposed view (x.T's memory is x.T.T)
            row["torch"] = runner.torch(row["operator"], row["mode"],
                                        [np.ascontiguousarray(x.T if transposed else x) for x in inputs],
                                        DataType[row["out_dtype"]], transpose=transposed,
                                        broadcast=section == "broadcast", strided_out=section == "strided-out")
        result.setdefault(section, []).append(row)
        torch_gbps = row.get("torch", {}).get("gbps")
        print(f"{section:12s} {label(row):40s} exact={row['exact']} {row.get('gbps') or 0:7.0f} GB/s"
              f"  torch {torch_gbps or float('nan'):7.0f}", flush=True)

    if "contiguous" in args.only:
        for operator, mode in OPS:
            for in_type, out_type in type_pairs(operator):
                if wanted(operator, mode, in_type, out_type):
                    count = contiguous_elements(n, in_type, out_type, args.same_elements)
                    record("contiguous", runner.run(operator, mode, in_type, out_type, (count,)))
        # PyTorch's copy once more after the rows: a single measurement can come out several percent below the
        # others, which would flatter every ratio; the goals take the faster.
        copies.append(torch_copy())
        result["torch_copy_samples"] = copies
        result["torch_copy"] = max(copies, key=lambda c: c.get("gbps") or 0)
        print(f"torch copy after the rows {copies[-1].get('gbps', 0):.0f} GB/s", flush=True)
    square = (side, side)
    # The layouts section runs the operators without a mode, each at its default output type.
    for operator, mode in [(o, m) for o, m in OPS if m is None] if "layouts" in args.only else []:
        spec = spec_by_name(operator)
        for in_type, out_type in type_pairs(operator):
            if in_type not in LAYOUT_TYPES or out_type != spec.output_type(in_type) \
                    or not wanted(operator, mode, in_type, out_type):
                continue
            broadcast = spec.inputs[-1]
            transposed = {name: (1, side) for name in spec.inputs}
            cases = {"packed-2d": (square, {}, False), "broadcast": (square, {broadcast: (0, 1)}, True),
                     "transposed": (square, transposed, True),
                     "transposed-k": (square, {**transposed, spec.output: (1, side)}, False),
                     "strided-out": ((n // 2,), {spec.output: (2,)}, True)}
            for section in args.layouts:
                if section == "strided-out" and out_type.size >= 4:
                    continue
                sizes, strides, compare = cases[section]
                record(section, runner.run(operator, mode, in_type, out_type, sizes, strides), compare=compare)
    if "host" in args.only:
        result["host"] = host_side(device, runner)
    return result


def host_side(device: gpuops.Device, runner: Runner) -> dict:
    """Host time per operation in a batch, one small operation with read-back, large batches' wall-clock."""
    f32 = TensorDesc(DataType.FLOAT32, (1024,))
    sign = device.compile(gpuops.SignDesc(f32, f32))
    pairs = [(runner.buffer(size=4096), runner.buffer(size=4096)) for _ in range(1000)]
    bindings = [{"input_tensor": Binding(a), "output_tensor": Binding(b)} for a, b in pairs]
    queue = device.wgpu_device.queue

    def host_us_per_op(*record_batches) -> list[float]:
        """Median host time per operation of seven batches of the 1000 for each way of recording, the ways
        interleaved (the host's speed drifts within a run; each batch is waited for before the next)."""
        per_op = [[] for _ in record_batches]
        for _ in range(7):
            for samples, record_batch in zip(per_op, record_batches):
                start = time.perf_counter_ns()
                record_batch()
                samples.append((time.perf_counter_ns() - start) / 1000 / len(pairs))
                queue.read_buffer(pairs[-1][1], 0, 4)
        return [statistics.median(samples) for samples in per_op]

    def gpuops_batch():
        with device.batch() as batch:
            for b in bindings:
                batch.record(sign, b)

    tables = [sign.bind(b) for b in bindings]  # DML's binding tables: validated and planned once

    def gpuops_table_batch():
        with device.batch() as batch:
            for table in tables:
                batch.record(sign, table)

    # One small operation with read-back, against a bare wgpu submit + read-back of the same size.
    copy = CopyKernel(device, 4096)

    def timed(*steps, count=200) -> list[float]:
        """Median time of each step in us, the steps' samples interleaved: the host's speed drifts within a run,
        so steps timed one after the other would compare different moments of the host."""
        for _ in range(20):
            for step in steps:
                step()
        samples = [[] for _ in steps]
        for _ in range(count):
            for step, step_samples in zip(steps, samples):
                start = time.perf_counter_ns()
                step()
                step_samples.append(time.perf_counter_ns() - start)
        return [statistics.median(step_samples) / 1000 for step_samples in samples]

    def bare():
        encoder = device.wgpu_device.create_command_encoder()
        copy.record(encoder, None)
        queue.submit([encoder.finish()])
        queue.read_buffer(copy.dst, 0, 4096)

    def ours():
        sign.execute(bindings[0])
        queue.read_buffer(pairs[0][1], 0, 4096)

    # The same 1000 dispatches recorded with wgpu alone (a copy kernel, bind groups made beforehand, one pipeline):
    # the floor that this host and wgpu set, so that a batch's figure can be read against the machine it ran on.
    copy_groups = [device.wgpu_device.create_bind_group(
        layout=copy.pipeline.get_bind_group_layout(0),
        entries=[{"binding": 0, "resource": {"buffer": a}}, {"binding": 1, "resource": {"buffer": b}}]) for a, b in pairs]

    def bare_batch():
        encoder = device.wgpu_device.create_command_encoder()
        compute_pass = encoder.begin_compute_pass()
        compute_pass.set_pipeline(copy.pipeline)
        for group in copy_groups:
            compute_pass.set_bind_group(0, group)
            compute_pass.dispatch_workgroups(1)
        compute_pass.end()
        queue.submit([encoder.finish()])

    batch_us, table_batch_us, bare_batch_us = host_us_per_op(gpuops_batch, gpuops_table_batch, bare_batch)
    x = np.ones(1024, np.float32)
    bare_us, ours_us = timed(bare, ours)
    [numpy_api_us] = timed(lambda: gpuops.sign(x, device=device), count=100)
    # Large operations batched: wall-clock against the sum of GPU timestamp times.
    n = runner.device.limits["max-storage-buffer-binding-size"] // 8
    big = TensorDesc(DataType.FLOAT32, (n,))
    big_sign = device.compile(gpuops.SignDesc(big, big))
    a, b = runner.buffer(size=n * 4), runner.buffer(size=n * 4)
    big_bindings = {"input_tensor": Binding(a), "output_tensor": Binding(b)}
    gpu = runner.timer.run(lambda enc, w: big_sign.record(enc, big_bindings, w), 10, 2)
    count = 50
    start = time.perf_counter_ns()
    with device.batch() as batch:
        for _ in range(count):
            batch.record(big_sign, big_bindings)
    queue.read_buffer(b, 0, 4)
    wall = (time.perf_counter_ns() - start) / count
    return {"batch_host_us_per_op": batch_us, "batch_table_host_us_per_op": table_batch_us,
            "bare_batch_host_us_per_op": bare_batch_us,
            "small_op_readback_us": ours_us,
            "bare_submit_readback_us": bare_us, "numpy_api_small_op_us": numpy_api_us,
            "large_batch_wall_ns_per_op": wall, "large_gpu_median_ns": gpu.gpu_median_ns,
            "large_elements": n, "large_wall_fraction_of_gpu": gpu.gpu_median_ns / wall if gpu.gpu_ns else None}


def _pct(value, reference) -> str:
    """A percentage rounded down, so that a figure at its goal means the goal is met (49.5% reads 49%, not 50%)."""
    return f"{math.floor(100 * value / reference + 1e-9)}%" if value and reference else "n/a"


def _copy_samples(data: dict) -> str:
    samples = [c.get("gbps") for c in data.get("torch_copy_samples", []) if c.get("gbps")]
    return f" (the faster of {', '.join(f'{g:.0f}' for g in samples)})" if len(samples) > 1 else ""


def render(paths: list[str]) -> str:
    """Markdown tables from results JSON files. Rows of later files replace the rows of the same section and label
    of earlier files of the same backend (so a run of a few rows updates a full run's table), and the host figures of
    the last file that has them win; each contiguous row is set against the PyTorch copy of its own run, and the
    header names the run of the last file with contiguous rows (else the first file's)."""
    runs: dict[str, dict] = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        merged = runs.setdefault(data["backend"], {})
        for key, value in data.items():
            if key in ("contiguous",) + LAYOUT_SECTIONS:
                rows = {label(r): r for r in merged.get(key, [])}
                for row in value:
                    rows[label(row)] = dict(row, _copy=(data.get("torch_copy") or {}).get("gbps"))
                merged[key] = list(rows.values())
            elif key == "host" or key not in merged:  # the latest host figures; else the first file's scalars
                merged[key] = value
        if data.get("contiguous"):
            merged["header"] = data
    out = []
    for backend, data in runs.items():
        run = data.get("header", data)
        tc = (run.get("torch_copy") or {}).get("gbps")
        out.append(f"### {run['adapter'].get('device')} ({run['adapter'].get('backend_type')}), {backend}, "
                   f"driver {run['adapter'].get('description')}\n")
        sizes = "narrow types at the copy's tensor bytes" if run.get("same_elements") is False else "every row"
        out.append(f"{run['elements']} elements ({sizes}); WGSL copy {run['wgsl_copy_gbps']:.0f} GB/s, PyTorch "
                   f"CUDA copy {f'{tc:.0f} GB/s' if tc else 'not measured (no CUDA)'}{_copy_samples(run)} (targets "
                   f"use PyTorch's copy); versions {run['versions']}.\n")
        if data.get("contiguous"):
            header = "| operator, types | elements | GB/s | % of torch copy (goal 95%) | PyTorch same op GB/s | vs PyTorch |"
            out += [header, "|---|---|---|---|---|---|"]
            for row in data["contiguous"]:
                torch_gbps = (row.get("torch") or {}).get("gbps")
                note = (row.get("torch") or {}).get("error", "")
                torch_cell = f"{torch_gbps:.0f}" if torch_gbps else f"n/a ({note[:40]})" if note else "n/a"
                ratio = f"{row['gbps'] / torch_gbps:.2f}x" if torch_gbps else "n/a"
                count = f"2^{int(row['sizes'][0]).bit_length() - 1}"
                out.append(f"| {label(row)} | {count} | {row['gbps']:.0f} | {_pct(row['gbps'], row['_copy'])} | {torch_cell} "
                           f"| {ratio} |")
            out.append("")
        if data.get("packed-2d"):
            packed = {label(r): r["gbps"] for r in data["packed-2d"]}
            out += ["| operator, types | packed 2-D GB/s | broadcast (goal 90%) | transposed input, output in the "
                    "input's order (PyTorch's layout) | true transpose (row-major output) | PyTorch on x.t() | "
                    "strided output, 8/16-bit (goal 50%) |", "|---|---|---|---|---|---|---|"]
            by = {sec: {label(r): r for r in data.get(sec, [])} for sec in
                  ("broadcast", "transposed", "transposed-k", "strided-out")}
            for name, base in packed.items():
                def cell(sec):
                    row = by[sec].get(name)
                    if not row:
                        return "-"
                    torch_gbps = (row.get("torch") or {}).get("gbps") if sec in ("broadcast", "strided-out") else None
                    theirs = f"; PyTorch {torch_gbps:.0f}" if torch_gbps else ""
                    return f"{row['gbps']:.0f} ({_pct(row['gbps'], base)}){theirs}"
                torch_t = (by["transposed"].get(name, {}).get("torch") or {}).get("gbps")
                out.append(f"| {name} | {base:.0f} | {cell('broadcast')} | {cell('transposed-k')} | "
                           f"{cell('transposed')} | {f'{torch_t:.0f}' if torch_t else 'n/a'} | {cell('strided-out')} |")
            out.append("")
        host = data.get("host")
        if host:
            out += ["| host-side measure | value | goal |", "|---|---|---|"]
            if "batch_table_host_us_per_op" in host:  # (older result files lack it)
                out.append(f"| batch of 1000 ops of 1024 elements recorded from binding tables (`compiled.bind`), host "
                           f"time per op | {host['batch_table_host_us_per_op']:.1f} us | <= 10 us |")
            out.append(f"| batch of 1000 ops of 1024 elements recorded from bindings (plan cache), host time per op | "
                       f"{host['batch_host_us_per_op']:.1f} us | <= 10 us |")
            if "bare_batch_host_us_per_op" in host:  # (older result files lack it)
                out.append(f"| the same 1000 dispatches with wgpu alone (a copy kernel): host time per op | "
                           f"{host['bare_batch_host_us_per_op']:.1f} us | (information: this host's floor) |")
            out += [
                    f"| one small op + read-back (DML level, cached plan) | {host['small_op_readback_us']:.0f} us = "
                    f"{host['small_op_readback_us'] / host['bare_submit_readback_us']:.2f}x a bare wgpu submit + "
                    f"read-back ({host['bare_submit_readback_us']:.0f} us) | <= 1.2x |",
                    f"| one small op through the NumPy API (upload, run, read back) | "
                    f"{host['numpy_api_small_op_us']:.0f} us | (information) |",
                    f"| 50 large ops ({host['large_elements']} float32 elements) in one batch: wall-clock vs GPU "
                    f"timestamps | {100 * host['large_wall_fraction_of_gpu']:.0f}% | >= 90% |", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--render":
        print(render(sys.argv[2:]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--elements", type=int, default=1 << 26)
    parser.add_argument("--same-elements", action="store_true",
                        help="contiguous rows at --elements each (default: narrow types at the copy's tensor bytes)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1, help="passes per timed span (Dawn: 40)")
    parser.add_argument("--match", help="measure only the rows whose label (as 'sign int8') matches this regex")
    parser.add_argument("--units-per-invocation", type=int, help="tuning experiments: override the kernels' value")
    parser.add_argument("--only", nargs="+", default=["contiguous", "layouts", "host"],
                        choices=["contiguous", "layouts", "host"], help="sections to measure")
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUT_SECTIONS), choices=LAYOUT_SECTIONS,
                        help="which cases of the layouts section to measure (packed-2d is the others' reference)")
    args = parser.parse_args(argv)
    result = measure(args)
    text = json.dumps(result, indent=1, default=lambda o: None)
    if args.json:
        Path(args.json).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
