"""`gpuops-bench targets`: the performance goals (docs/performance.md) measured in one run beside PyTorch (CUDA) on
the same GPU, and CuPy for the layout conversions, each doing the same work; and the markdown tables of
docs/performance.md rendered from such runs.

Every kernel's output is compared with NumPy bit for bit before it is timed (workload.Workload). GPU times come from
timestamp queries, calibrated as in every gpuops-bench run; bandwidth counts the bytes of tensor elements actually
read (distinct elements) and written. Contiguous rows run at least `elements` elements, and more where their types
are narrower than the copy's float32: as many as make the row's largest tensor as large as the copy's (2^27 float16,
2^28 8-bit elements at the default), since a dispatch's start and drain are a fixed cost that weighs more on fewer
bytes (`same_elements` runs every row at `elements`). Every timed figure is sampled as the other commands' rows
are (stats.py: a noise target, a minimum count, a time budget) and keeps its samples, so that two runs can be
compared (compare.py). The JSON document is described in docs/bench-json.md.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import api
from ..device import Binding, Device
from ..enums import DataType
from ..errors import GpuOpsError
from ..operators import OPERATORS, SignDesc, spec_by_name
from ..tensor import TensorDesc
from . import report
from .cuda_context import hold_cuda_contexts
from .cupy_compare import cupy_cuda, time_cupy
from .stats import ABOVE_TARGET, DEFAULT_MAX_TIME_S, Sampled, StoppingRule, summary
from .ticks import calibrate
from .timing import CopyKernel, GpuTimer, Sampler
from .torch_compare import (BROADCAST, CHANNELS_LAST_OUT, CONTIGUOUS, COPY, ROW_MAJOR_OUT, STRIDED_OUT,
                            summary as library_summary, time_torch, torch_cuda)
from .workload import DATA_SETS as BENCH_DATA_SETS
from .workload import (Case, DataMaker, Workload, buffer_usage, bytes_moved, nchw_sizes, nhwc_strides, operation_label,
                       timed_fields, types_label)

COMMAND = "targets"
LEGACY_SCHEMA = "gpuops-targets/1"  # the records in bench/results/ (read by render, never written)
SECTIONS = ("contiguous", "layouts", "host")
LAYOUT_SECTIONS = ("packed-2d", "broadcast", "transposed", "nchw-to-nhwc", "transposed-k", "strided-out")
ROW_SECTIONS = ("contiguous",) + LAYOUT_SECTIONS
LAYOUT_TYPES = (DataType.FLOAT32, DataType.FLOAT16, DataType.INT8, DataType.INT64)
DEFAULT_ELEMENTS = 1 << 26
# The host section's timed figures, by key: each keeps its samples in `host["samples"]`, in the figure's unit.
HOST_FIGURES = ("batch_host_us_per_op", "batch_table_host_us_per_op", "bare_batch_host_us_per_op",
                "small_op_readback_us", "bare_submit_readback_us", "numpy_api_small_op_us", "large_gpu_median_ns",
                "large_batch_wall_ns_per_op")
HOST_BATCH_OPS = 1000  # small operations per batch recorded
HOST_LARGE_OPS = 50  # large operations per batch, in HOST_LARGE_BATCHES batches
HOST_LARGE_BATCHES = 5

# (operator, mode) for every operator and every value of its attribute; mode is the value as a number (the rows'
# "mode"), None for an operator without an attribute.
OPS = [(spec.name, None if spec.mode_attribute is None else int(mode[spec.mode_attribute.name]))
       for spec in OPERATORS for mode in spec.modes()]
# The layouts section's operators: every one, at its attribute's default (IS_INFINITY either).
LAYOUT_OPS = [(spec.name, None if spec.mode_attribute is None else int(spec.mode_attribute.default))
              for spec in OPERATORS]


class TargetsDocumentError(GpuOpsError):
    """A file given to render that is not a targets document."""


@dataclass(frozen=True)
class TargetOptions:
    """What a targets run measures and how (the command's options)."""

    elements: int = DEFAULT_ELEMENTS
    same_elements: bool = False
    iterations: int = 10  # samples per figure; with max_noise, the fewest
    warmup: int = 2
    repeats: int = 1  # passes per timed span (GpuTimer.run): rounded timestamps (TickConversion.rounded) need about 40
    max_noise: float | None = None  # a noise target: sample each figure until its noise is at most this
    max_time_s: float = DEFAULT_MAX_TIME_S  # with max_noise: sampling time per figure, after its first samples
    match: str | None = None  # a regex: measure only the rows whose label matches
    sections: tuple[str, ...] = SECTIONS
    layouts: tuple[str, ...] = LAYOUT_SECTIONS
    units_per_invocation: int | None = None  # recorded only: the device's DispatchPolicy applies it
    data: str = "goals"  # the rows' data set (DATA_SETS)

    @property
    def rule(self) -> StoppingRule:
        return StoppingRule(self.iterations, self.max_noise, self.max_time_s)

    def settings(self) -> dict:
        return {"iterations": self.iterations, "warmup": self.warmup, "repeats": self.repeats,
                **self.rule.settings(), "elements": self.elements, "same_elements": self.same_elements,
                "sections": list(self.sections), "layouts": list(self.layouts), "match": self.match,
                "units_per_invocation": self.units_per_invocation, "data": self.data}


def type_pairs(operator: str, level) -> list[tuple[DataType, DataType]]:
    """(input, output) types of the operator's rows: each input type with itself where the operator allows it, else
    with every output type it allows."""
    row = spec_by_name(operator).support_row(level)
    if row is None:
        return []
    outs = row.output_types
    pairs = []
    for t in sorted(row.input_types):
        pairs += [(t, t)] if t in outs else [(t, o) for o in sorted(outs)]
    return pairs


def goal_values(data_type: DataType, count: int, rng: np.random.Generator, field: str) -> np.ndarray:
    """The goals' data: normal floats (times 10) with 0.1% inf and 0.1% NaN, integers uniform over the full range
    (no zero divisors)."""
    dtype = data_type.numpy_dtype
    if dtype.kind == "f":
        x = (rng.standard_normal(count) * 10).astype(dtype)
        x[rng.integers(0, count, count // 1000)] = np.inf
        x[rng.integers(0, count, count // 1000)] = np.nan
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, count, endpoint=True, dtype=dtype)
    if field == "b_tensor":
        x[x == 0] = 3
    return x


# The rows' data sets (--data): the goals' own, and the benchmark's (workload.DATA_SETS).
DATA_SETS: dict[str, DataMaker] = {"goals": goal_values, **BENCH_DATA_SETS}


def contiguous_elements(n: int, in_type: DataType, out_type: DataType, same_elements: bool = False) -> int:
    """A contiguous row's element count: n, or more where the row's types are narrower than the copy's float32, as
    many as make its largest tensor as large as the copy's (n float32 elements)."""
    return n if same_elements else max(n, n * 4 // max(in_type.size, out_type.size))


def label(row: dict) -> str:
    """'is_infinity-positive float16->uint8': a row by its operator, mode and types."""
    return f"{operation_label(row['operator'], row.get('mode'))} {types_label(row['dtype'], row['out_dtype'])}"


def layout_cases(operator: str, in_type: DataType, out_type: DataType, n: int, mode: int | None = None) \
        -> dict[str, Case]:
    """The layouts section's cases, by section: a square of n elements packed, with its last input broadcast along
    the rows, with its inputs transposed (the output row-major, or in the inputs' order), n/2 elements written to
    every second element of the output; and n elements (nchw_sizes) read NCHW and written NHWC."""
    spec = spec_by_name(operator)
    side = int(n ** 0.5)
    square = (side, side)
    transposed = {name: (1, side) for name in spec.inputs}
    nchw = nchw_sizes(n)
    strides = {"packed-2d": (square, {}), "broadcast": (square, {spec.inputs[-1]: (0, 1)}),
               "transposed": (square, transposed),
               "nchw-to-nhwc": (nchw, {spec.output: nhwc_strides(nchw)}),
               "transposed-k": (square, {**transposed, spec.output: (1, side)}),
               "strided-out": ((n // 2,), {spec.output: (2,)})}
    member = _member(operator, mode)
    return {section: Case(spec.name, in_type, out_type, sizes, mode=member, field_strides=tuple(fields.items()))
            for section, (sizes, fields) in strides.items()}


# Which sections compare with PyTorch (packed-2d and transposed-k are read against the other cases), and the layout
# of PyTorch's call (torch_compare.COMPARE_LAYOUTS): the same work as gpuops' case, so a transposed input is read
# into a row-major output and an NCHW one written channels-last.
TORCH_LAYOUTS = {"contiguous": CONTIGUOUS, "broadcast": BROADCAST, "transposed": ROW_MAJOR_OUT,
                 "nchw-to-nhwc": CHANNELS_LAST_OUT, "strided-out": STRIDED_OUT}
# The sections also compared with CuPy: the goals' layout conversions.
CUPY_LAYOUTS = {"transposed": ROW_MAJOR_OUT, "nchw-to-nhwc": CHANNELS_LAST_OUT}


class TargetRun:
    """One run: the device, its calibrated timer and the options; `rows` checks and times the cases."""

    def __init__(self, device: Device, options: TargetOptions, say: Callable[[str], None] | None = None):
        self.device, self.options = device, options
        self.say = say or (lambda line: None)
        self.timer = GpuTimer(device)
        self.conversion = calibrate(device, self.timer)
        if self.conversion.tick_ns is None:
            self.timer.supported = False  # GPU times would be meaningless: rate on host time
        self.sampler = Sampler(self.timer, options.rule, options.warmup, options.repeats)
        self.pattern = re.compile(options.match) if options.match else None

    def wanted(self, operator: str, mode, in_type: DataType, out_type: DataType) -> bool:
        name = label({"operator": operator, "mode": mode, "dtype": in_type.name, "out_dtype": out_type.name})
        return self.pattern is None or self.pattern.search(name) is not None

    def time(self, record, moved: int) -> dict:
        """The timing keys of a row (workload.timed_fields) and its GB/s, from samples taken until the run's rule
        stops."""
        fields = timed_fields(self.sampler.time(record))
        return {**fields, **_rate(moved, fields)}

    def torch(self, operator: str, mode, inputs: list[np.ndarray], out_type: DataType,
              layout: str = CONTIGUOUS) -> dict:
        return time_torch(operator, mode, inputs, out_type.numpy_dtype, self.options.rule, self.options.warmup,
                          layout)

    def cupy(self, operator: str, mode, inputs: list[np.ndarray], out_type: DataType, layout: str) -> dict:
        return time_cupy(operator, mode, inputs, out_type.numpy_dtype, self.options.rule, self.options.warmup,
                         layout)

    def row(self, section: str, case: Case) -> dict:
        """Check the case against NumPy, then time it, and PyTorch and CuPy on the same data where the section
        compares."""
        moved = bytes_moved(case)
        row = {"operator": case.operator, "mode": None if case.mode is None else int(case.mode),
               "dtype": case.dtype.name, "out_dtype": case.out_dtype.name, "sizes": list(case.sizes),
               "strides": {name: list(strides) for name, strides in case.field_strides}, "bytes": moved}
        workload = Workload(self.device, case, data=DATA_SETS[self.options.data])
        try:
            mismatch = workload.check()
            row.update(exact=mismatch is None, error=None if mismatch is None else f"{mismatch.describe()}: not timed",
                       **dict.fromkeys(TIMED_KEYS), torch=None, cupy=None)
            if mismatch is None:
                row.update(self.time(workload.record, moved))
                if section in TORCH_LAYOUTS:
                    row["torch"] = self.torch(case.operator, row["mode"], workload.inputs, case.out_dtype,
                                              TORCH_LAYOUTS[section])
                if section in CUPY_LAYOUTS:
                    row["cupy"] = self.cupy(case.operator, row["mode"], workload.inputs, case.out_dtype,
                                            CUPY_LAYOUTS[section])
        finally:
            workload.release()
        torch_gbps = (row["torch"] or {}).get("gbps")
        cupy = f"  cupy {(row['cupy'] or {}).get('gbps') or float('nan'):7.0f}" if section in CUPY_LAYOUTS else ""
        self.say(f"{section:12s} {label(row):40s} exact={row['exact']} {row['gbps'] or 0:7.0f} GB/s "
                 f"{_noise_cell(row):>12s}  torch {torch_gbps or float('nan'):7.0f}{cupy}")
        return row


# A row's timing keys, in the order rows carry them (workload.timed_fields), and the GB/s rated on them.
TIMED_KEYS = ("iterations", "stopped_on", "gpu_median_ns", "gpu_min_ns", "gpu_max_ns", "gpu_noise", "host_median_ns",
              "host_noise", "gpu_samples_ns", "host_samples_ns", "gbps", "gbps_basis")


def _rate(moved: int, fields: dict) -> dict:
    """GB/s from the GPU time, or from host time where the row keeps none (Sampled.kept)."""
    if fields["gpu_median_ns"] is not None:
        return {"gbps": moved / fields["gpu_median_ns"], "gbps_basis": "gpu"}
    return {"gbps": moved / fields["host_median_ns"], "gbps_basis": "host"}


def measure(device: Device, options: TargetOptions, say: Callable[[str], None] | None = None) -> dict:
    """A targets document (docs/bench-json.md): the copies, then the sections asked for."""
    cuda_contexts = hold_cuda_contexts()  # before the first figure (the WGSL copy), kept to the end of the run
    run = TargetRun(device, options, say)
    n = options.elements
    doc = report.envelope(COMMAND, device, run.conversion, options.settings())
    doc["cuda_context"] = bool(cuda_contexts)
    torch = torch_cuda()
    doc["torch_device"] = torch.cuda.get_device_name() if torch is not None else None
    cupy = cupy_cuda()
    doc["cupy_device"] = _cupy_device_name(cupy) if cupy is not None else None
    copy = CopyKernel(device, n * 4)
    wgsl_copy = {"bytes": copy.bytes_moved, **run.time(copy.record, copy.bytes_moved)}
    doc.update(wgsl_copy_gbps=wgsl_copy["gbps"], wgsl_copy=wgsl_copy)
    copy.release()

    def torch_copy() -> dict:
        return run.torch(COPY, None, [np.zeros(n, np.float32)], DataType.FLOAT32)

    copies = [torch_copy()]
    run.say(f"WGSL copy {doc['wgsl_copy_gbps']:.0f} GB/s, torch copy {copies[0].get('gbps', 0):.0f} GB/s")
    doc.update({"torch_copy": copies[0], "torch_copy_samples": copies, **{section: [] for section in ROW_SECTIONS},
                "host": None})
    level = device.feature_level
    if "contiguous" in options.sections:
        for operator, mode in OPS:
            for in_type, out_type in type_pairs(operator, level):
                if run.wanted(operator, mode, in_type, out_type):
                    count = contiguous_elements(n, in_type, out_type, options.same_elements)
                    case = Case(operator, in_type, out_type, (count,), mode=_member(operator, mode))
                    doc["contiguous"].append(run.row("contiguous", case))
        # PyTorch's copy once more after the rows: a single measurement can come out several percent below the
        # others, which would flatter every ratio; the goals take the faster.
        copies.append(torch_copy())
        doc["torch_copy"] = max(copies, key=lambda c: c.get("gbps") or 0)
        run.say(f"torch copy after the rows {copies[-1].get('gbps', 0):.0f} GB/s")
    if "layouts" in options.sections:
        # Every operator at its default mode and output type.
        for operator, mode in LAYOUT_OPS:
            spec = spec_by_name(operator)
            for in_type, out_type in type_pairs(operator, level):
                if in_type not in LAYOUT_TYPES or out_type != spec.output_type(in_type) \
                        or not run.wanted(operator, mode, in_type, out_type):
                    continue
                cases = layout_cases(operator, in_type, out_type, n, mode)
                for section in options.layouts:
                    if section == "strided-out" and out_type.size >= 4:
                        continue
                    doc[section].append(run.row(section, cases[section]))
    if "host" in options.sections:
        doc["host"] = host_side(device, run)
    return doc


def _member(operator: str, mode: int | None):
    attribute = spec_by_name(operator).mode_attribute
    return None if attribute is None else attribute.parse(mode)


def _cupy_device_name(cupy) -> str | None:
    try:
        name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    except Exception:  # CuPy's CUDA errors share no base class; the name is a label, not a measurement
        return None
    return name.decode() if isinstance(name, bytes) else str(name)


def wrong_rows(doc: dict) -> list[dict]:
    return [row for section in ROW_SECTIONS for row in doc.get(section) or [] if not row["exact"]]


def large_elements(device: Device) -> int:
    """The float32 elements of the host section's large operations: an eighth of the storage binding limit."""
    return device.limits["max-storage-buffer-binding-size"] // 8


def host_side(device: Device, run: TargetRun) -> dict:
    """Host time per operation in a batch, one small operation with read-back, large batches' wall-clock: each
    figure the median of its samples, which `samples` keeps (HOST_FIGURES)."""
    def buffer(size: int):
        return device.wgpu_device.create_buffer(size=-(-size // 16) * 16, usage=buffer_usage(device))

    f32 = TensorDesc(DataType.FLOAT32, (1024,))
    sign = device.compile(SignDesc(f32, f32))
    pairs = [(buffer(4096), buffer(4096)) for _ in range(HOST_BATCH_OPS)]
    bindings = [{"input_tensor": Binding(a), "output_tensor": Binding(b)} for a, b in pairs]
    queue = device.wgpu_device.queue

    def host_us_per_op(*record_batches) -> list[list[float]]:
        """Host time per operation of seven batches of HOST_BATCH_OPS for each way of recording, in us, the ways
        interleaved (the host's speed drifts within a run; each batch is waited for before the next)."""
        per_op = [[] for _ in record_batches]
        for _ in range(7):
            for samples, record_batch in zip(per_op, record_batches):
                start = time.perf_counter_ns()
                record_batch()
                samples.append((time.perf_counter_ns() - start) / 1000 / len(pairs))
                queue.read_buffer(pairs[-1][1], 0, 4)
        return per_op

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

    def timed(*steps, count=200) -> list[list[float]]:
        """`count` times of each step in us, the steps' samples interleaved: the host's speed drifts within a run,
        so steps timed one after the other would compare different moments of the host."""
        for _ in range(20):
            for step in steps:
                step()
        samples = [[] for _ in steps]
        for _ in range(count):
            for step, step_samples in zip(steps, samples):
                start = time.perf_counter_ns()
                step()
                step_samples.append((time.perf_counter_ns() - start) / 1000)
        return samples

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
        entries=[{"binding": 0, "resource": {"buffer": a}}, {"binding": 1, "resource": {"buffer": b}}])
        for a, b in pairs]

    def bare_batch():
        encoder = device.wgpu_device.create_command_encoder()
        compute_pass = encoder.begin_compute_pass()
        compute_pass.set_pipeline(copy.pipeline)
        for group in copy_groups:
            compute_pass.set_bind_group(0, group)
            compute_pass.dispatch_workgroups(1)
        compute_pass.end()
        queue.submit([encoder.finish()])

    samples = dict(zip(("batch_host_us_per_op", "batch_table_host_us_per_op", "bare_batch_host_us_per_op"),
                       host_us_per_op(gpuops_batch, gpuops_table_batch, bare_batch)))
    x = np.ones(1024, np.float32)
    samples.update(zip(("bare_submit_readback_us", "small_op_readback_us"), timed(bare, ours)))
    [samples["numpy_api_small_op_us"]] = timed(lambda: api.sign(x, device=device), count=100)
    # Large operations batched: wall-clock against the sum of GPU timestamp times.
    n = large_elements(device)
    big = TensorDesc(DataType.FLOAT32, (n,))
    big_sign = device.compile(SignDesc(big, big))
    a, b = buffer(n * 4), buffer(n * 4)
    big_bindings = {"input_tensor": Binding(a), "output_tensor": Binding(b)}
    samples["large_gpu_median_ns"] = run.timer.run(lambda enc, w: big_sign.record(enc, big_bindings, w), 10, 2).gpu_ns
    samples["large_batch_wall_ns_per_op"] = []
    for _ in range(HOST_LARGE_BATCHES):
        start = time.perf_counter_ns()
        with device.batch() as batch:
            for _ in range(HOST_LARGE_OPS):
                batch.record(big_sign, big_bindings)
        queue.read_buffer(b, 0, 4)
        samples["large_batch_wall_ns_per_op"].append((time.perf_counter_ns() - start) / HOST_LARGE_OPS)
    copy.release()
    for buffer_ in [a, b, *(x for pair in pairs for x in pair)]:
        buffer_.destroy()
    return host_figures(samples, n)


def host_figures(samples: dict[str, list[float]], large: int) -> dict:
    """The host section from its figures' samples (by HOST_FIGURES key, in the figure's unit): each figure the
    median of its samples, and `samples` with their counts and noise."""
    figures = {key: summary(samples[key]) for key in HOST_FIGURES}
    gpu, wall = figures["large_gpu_median_ns"]["median"], figures["large_batch_wall_ns_per_op"]["median"]
    return {**{key: figure["median"] for key, figure in figures.items()}, "large_elements": large,
            "large_wall_fraction_of_gpu": gpu / wall if gpu is not None else None,
            "samples": {key: {"iterations": len(samples[key]), "noise": figure["noise"],
                              "values": [float(v) for v in samples[key]]} for key, figure in figures.items()}}


# ---------------------------------------------------------------------------------------------------- pooling

def pool(documents: list[dict], names: list[str]) -> dict:
    """One targets document from several runs on one adapter (the rounds of a before/after comparison, named by
    `names`): each figure's samples those of every run that has it, in the runs' order, and its summaries computed
    again from them; a row wrong in any run is that run's row. The rest is the first run's, and `pooled_from` lists
    the runs."""
    first = documents[0]
    for name, doc in zip(names, documents):
        if doc.get("schema") != report.SCHEMA or doc.get("command") != COMMAND:
            raise TargetsDocumentError(f"{name}: schema {doc.get('schema')!r}, command {doc.get('command')!r}: "
                                       f"only targets documents of schema {report.SCHEMA!r} are pooled")
        if any(doc["adapter"].get(key) != first["adapter"].get(key) for key in report.ADAPTER_IDENTITY):
            raise TargetsDocumentError(f"{name} ran on {doc['adapter'].get('name')!r} "
                                       f"({doc['adapter'].get('implementation')}), {names[0]} on "
                                       f"{first['adapter'].get('name')!r} ({first['adapter'].get('implementation')})"
                                       ": runs of different adapters or WebGPU implementations are not pooled")
    pooled = {**first, "pooled_from": [{"file": name, "created": doc.get("created")}
                                       for name, doc in zip(names, documents)]}
    copies = [doc["wgsl_copy"] for doc in documents if "wgsl_copy" in doc]
    if copies:
        pooled["wgsl_copy"] = {**copies[0], **_pooled_timing(copies)}
        pooled["wgsl_copy_gbps"] = pooled["wgsl_copy"]["gbps"]
    pooled["torch_copy_samples"] = [copy for doc in documents for copy in doc.get("torch_copy_samples") or []]
    pooled["torch_copy"] = max(pooled["torch_copy_samples"], key=lambda c: c.get("gbps") or 0)
    for section in ROW_SECTIONS:
        groups: dict[tuple, list[dict]] = {}
        for doc in documents:
            for row in doc.get(section) or []:
                groups.setdefault((label(row), tuple(row["sizes"])), []).append(row)
        pooled[section] = [_pooled_row(rows) for rows in groups.values()]
    hosts = [doc["host"] for doc in documents if (doc.get("host") or {}).get("samples")]
    if hosts:
        pooled["host"] = host_figures({key: [v for host in hosts for v in host["samples"][key]["values"]]
                                       for key in HOST_FIGURES}, hosts[0]["large_elements"])
    return pooled


def _pooled_row(rows: list[dict]) -> dict:
    wrong = next((row for row in rows if not row["exact"]), None)
    if wrong is not None:
        return wrong
    libraries = {library: _pooled_library([row[library] for row in rows]) for library in ("torch", "cupy")
                 if rows[0].get(library) is not None}
    return {**rows[0], **_pooled_timing(rows), **libraries}


def _ended(entries: list[dict]) -> str:
    """Why the pooled sampling ended: above the target where any run's did."""
    return next((e["stopped_on"] for e in entries if e["stopped_on"] in ABOVE_TARGET), entries[0]["stopped_on"])


def _pooled_timing(entries: list[dict]) -> dict:
    """The timing keys and GB/s of a row (or the WGSL copy) from the samples of several runs: GPU samples where
    every run has some."""
    gpu = [t for e in entries for t in e["gpu_samples_ns"] or []] if all(e["gpu_samples_ns"] for e in entries) else []
    fields = timed_fields(Sampled.kept(gpu, [t for e in entries for t in e["host_samples_ns"]], _ended(entries)))
    return {**fields, **_rate(entries[0]["bytes"], fields)}


def _pooled_library(entries: list[dict]) -> dict:
    """A PyTorch or CuPy figure from several runs' (the first run's where one could not run it)."""
    if not all("gpu_samples_ns" in e for e in entries):
        return entries[0]
    samples = [t for e in entries for t in e["gpu_samples_ns"]]
    return library_summary(Sampled(samples, [], _ended(entries)), entries[0]["bytes"], entries[0]["layout"])


# ----------------------------------------------------------------------------------------------------- render

def upgrade(data: dict, where: str = "document") -> dict:
    """A targets document as this module writes it, from one of these or from a gpuops-targets/1 record (whose
    adapter is wgpu's own adapter info, with the implementation beside it as `backend`, and whose settings are at
    the top level)."""
    if not isinstance(data, dict):
        raise TargetsDocumentError(f"{where}: a JSON {type(data).__name__}, not a targets document")
    schema, command = data.get("schema"), data.get("command")
    if schema == report.SCHEMA and command == COMMAND:
        return data
    if schema != LEGACY_SCHEMA:
        raise TargetsDocumentError(f"{where}: schema {schema!r}, command {command!r}: not a targets document "
                                   f"(schema {report.SCHEMA!r} with command {COMMAND!r}, or {LEGACY_SCHEMA!r})")
    info = data.get("adapter") or {}
    adapter = {"name": info.get("device", ""), "implementation": data.get("backend", ""),
               "vendor": info.get("vendor", ""), "backend": info.get("backend_type", ""),
               "type": info.get("adapter_type", ""), "driver": info.get("description", "")}
    settings = {key: data[key] for key in ("iterations", "repeats", "elements", "same_elements") if key in data}
    return {**data, "schema": report.SCHEMA, "command": COMMAND, "adapter": adapter, "settings": settings}


def load(path: str | Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TargetsDocumentError(f"{path}: not JSON ({exc})") from None
    return upgrade(data, str(path))


def _pct(value, reference) -> str:
    """A percentage rounded down, so that a figure at its goal means the goal is met (49.5% reads 49%, not 50%)."""
    return f"{math.floor(100 * value / reference + 1e-9)}%" if value and reference else "n/a"


def _gbps(value) -> str:
    return f"{value:.0f}" if value is not None else "-"


def _noise_cell(entry: dict | None) -> str:
    """'0.42% (10)': the noise of a timed figure (a row, a PyTorch or CuPy figure, the copies) and its sample count,
    the noise marked '!' where sampling ended on its budget above the run's target; '-' for a figure not timed."""
    entry = entry or {}
    if not entry.get("iterations") or not {"gpu_noise", "host_noise"} & set(entry):
        return "-"
    noise = entry.get("host_noise") if entry.get("gbps_basis") == "host" else entry.get("gpu_noise")
    flag = "!" if entry.get("stopped_on") in ABOVE_TARGET else ""
    return f"{report.format_noise(noise)}{flag} ({entry['iterations']})"


def _sampled(rows: list[dict]) -> bool:
    """Whether the rows keep noise figures (the records written before rows kept their samples do not)."""
    return any("gpu_noise" in row for row in rows)


def _host_noise(host: dict, *keys: str) -> str:
    """'3.1% (200)': the noise and sample count of host figures, ' / ' between several."""
    figures = [host["samples"][key] for key in keys]
    return " / ".join(f"{report.format_noise(f['noise'])} ({f['iterations']})" for f in figures)


def _copy_samples(data: dict) -> str:
    samples = [c.get("gbps") for c in data.get("torch_copy_samples") or [] if c.get("gbps")]
    return f" (the faster of {', '.join(f'{g:.0f}' for g in samples)})" if len(samples) > 1 else ""


def _torch_layout(row: dict) -> str | None:
    """The layout PyTorch ran the row in; None in records that did not say (PyTorch wrote x.t()'s order)."""
    return (row.get("torch") or {}).get("layout")


# The goals' layout conversions, each in a table against the copy roof, PyTorch and CuPy doing the same work.
CONVERSIONS = {"transposed": ("Transposed 2-D inputs into a row-major output", "row-major out"),
               "nchw-to-nhwc": ("NCHW inputs into an NHWC output", "channels-last out")}


def _conversion_tables(data: dict) -> list[str]:
    """A table per layout conversion of the documents that record CuPy beside PyTorch (older records have the
    transposed rows in the layouts table only)."""
    out = []
    for section, (title, out_layout) in CONVERSIONS.items():
        rows = data.get(section) or []
        if not any("cupy" in row for row in rows):
            continue
        noise = _sampled(rows)
        extra = " noise (samples) |" if noise else ""
        out += [f"{title} (PyTorch and CuPy: {out_layout}):", "",
                (f"| operator, types | sizes | GB/s |{extra} % of torch copy | PyTorch GB/s |{extra} vs PyTorch | "
                 f"CuPy GB/s |{extra} vs CuPy |"), "|---|---|---|---|---|---|---|---|" + "---|" * 3 * noise]
        for row in rows:
            gbps = row.get("gbps")
            cells = []
            for library in ("torch", "cupy"):
                entry = row.get(library) or {}
                theirs, note = entry.get("gbps"), entry.get("error", "")
                if library == "torch" and theirs and entry.get("layout") != out_layout:
                    note = f"{entry.get('layout') or 'x.t() order'}"  # a merged record of another layout
                cells.append(f"{theirs:.0f}" + (f" ({note})" if note else "") if theirs else
                             f"n/a ({note[:40]})" if note else "n/a")
                cells += [_noise_cell(entry)] if noise else []
                cells.append(f"{gbps / theirs:.2f}x" if theirs and gbps else "n/a")
            own = f" {_noise_cell(row)} |" if noise else ""
            out.append(f"| {label(row)} | {'x'.join(map(str, row['sizes']))} | {_gbps(gbps)} |{own} "
                       f"{_pct(gbps, row.get('_copy'))} | {' | '.join(cells)} |")
        out.append("")
    return out


def render(paths: list[str | Path]) -> str:
    """The markdown tables of the targets documents in these files (see render_documents)."""
    return render_documents([load(path) for path in paths])


def render_documents(documents: list[dict]) -> str:
    """Markdown tables from targets documents. Rows of later documents replace the rows of the same section and
    label of earlier ones of the same WebGPU implementation (so a run of a few rows updates a full run's table), and
    the host figures of the last document that has them win; each contiguous row is set against the PyTorch copy of
    its own run, and the header names the run of the last document with contiguous rows (else the first one's)."""
    runs: dict[str, dict] = {}
    for data in (upgrade(d) for d in documents):
        merged = runs.setdefault(data["adapter"]["implementation"], {})
        for key, value in data.items():
            if key in ROW_SECTIONS:
                rows = {label(r): r for r in merged.get(key, [])}
                for row in value or []:
                    rows[label(row)] = dict(row, _copy=(data.get("torch_copy") or {}).get("gbps"))
                merged[key] = list(rows.values())
            elif key == "host":  # the latest host figures
                if value is not None:
                    merged[key] = value
            elif key not in merged:  # else the first document's
                merged[key] = value
        if data.get("contiguous"):
            merged["header"] = data
    out = []
    for backend, data in runs.items():
        run = data.get("header", data)
        adapter, settings = run["adapter"], run.get("settings") or {}
        tc = (run.get("torch_copy") or {}).get("gbps")
        out.append(f"### {adapter.get('name')} ({adapter.get('backend')}), {backend}, "
                   f"driver {adapter.get('driver')}\n")
        sizes = "narrow types at the copy's tensor bytes" if settings.get("same_elements") is False else "every row"
        out.append(f"{settings['elements']} elements ({sizes}); WGSL copy {run['wgsl_copy_gbps']:.0f} GB/s, PyTorch "
                   f"CUDA copy {f'{tc:.0f} GB/s' if tc else 'not measured (no CUDA)'}{_copy_samples(run)} (targets "
                   f"use PyTorch's copy); versions {run['versions']}.\n")
        if "wgsl_copy" in run:  # a run whose figures keep their samples
            target = settings.get("max_noise")
            out.append("noise (samples): the relative interquartile range of a figure's samples, (Q3 - Q1) / median, "
                       "and their count" + (f"; '!': sampling ended on its budget above the target "
                                            f"{report.format_noise(target)}" if target is not None else "")
                       + f". WGSL copy {_noise_cell(run['wgsl_copy'])}, PyTorch copy "
                       f"{_noise_cell(run.get('torch_copy'))}.\n")
        if data.get("contiguous"):
            noise = _sampled(data["contiguous"])
            extra = " noise (samples) |" if noise else ""
            out += [f"| operator, types | elements | GB/s |{extra} % of torch copy (goal 95%) | PyTorch same op GB/s "
                    f"|{extra} vs PyTorch |", "|---|---|---|---|---|---|" + "---|---|" * noise]
            for row in data["contiguous"]:
                torch_gbps = (row.get("torch") or {}).get("gbps")
                note = (row.get("torch") or {}).get("error", "")
                torch_cell = f"{torch_gbps:.0f}" if torch_gbps else f"n/a ({note[:40]})" if note else "n/a"
                ratio = f"{row['gbps'] / torch_gbps:.2f}x" if torch_gbps and row.get("gbps") else "n/a"
                count = f"2^{int(row['sizes'][0]).bit_length() - 1}"
                gbps = row.get("gbps")
                own, theirs = (f" {_noise_cell(row)} |", f" {_noise_cell(row.get('torch'))} |") if noise else ("", "")
                out.append(f"| {label(row)} | {count} | {_gbps(gbps)} |{own} {_pct(gbps, row['_copy'])} | "
                           f"{torch_cell} |{theirs} {ratio} |")
            out.append("")
        if data.get("packed-2d"):
            packed = {label(r): r.get("gbps") for r in data["packed-2d"]}
            # A transposed row's PyTorch figure without a layout (the gpuops-targets/1 records) wrote x.t()'s order.
            row_major = any(_torch_layout(r) == ROW_MAJOR_OUT for r in data.get("transposed") or [])
            out += ["| operator, types | packed 2-D GB/s | broadcast (goal 90%) | transposed input, output in the "
                    "input's order (PyTorch's layout) | true transpose (row-major output) | PyTorch on x.t()"
                    f"{', row-major out' if row_major else ''} | strided output, 8/16-bit (goal 50%) |",
                    "|---|---|---|---|---|---|---|"]
            by = {sec: {label(r): r for r in data.get(sec) or []} for sec in
                  ("broadcast", "transposed", "transposed-k", "strided-out")}
            for name, base in packed.items():
                def cell(sec):
                    row = by[sec].get(name)
                    if not row:
                        return "-"
                    torch_gbps = (row.get("torch") or {}).get("gbps") if sec in ("broadcast", "strided-out") else None
                    theirs = f"; PyTorch {torch_gbps:.0f}" if torch_gbps else ""
                    return f"{_gbps(row.get('gbps'))} ({_pct(row.get('gbps'), base)}){theirs}"
                transposed_row = by["transposed"].get(name, {})
                torch_t = (transposed_row.get("torch") or {}).get("gbps")
                order = " (out in x.t()'s order)" if row_major and _torch_layout(transposed_row) is None else ""
                out.append(f"| {name} | {_gbps(base)} | {cell('broadcast')} | {cell('transposed-k')} | "
                           f"{cell('transposed')} | {f'{torch_t:.0f}{order}' if torch_t else 'n/a'} | "
                           f"{cell('strided-out')} |")
            out.append("")
            out += _layout_noise_table(data)
        out += _conversion_tables(data)
        if data.get("host"):
            out += _host_table(data["host"])
    return "\n".join(out)


def _layout_noise_table(data: dict) -> list[str]:
    """The noise and sample count of the layouts table's figures, in its columns (documents whose rows keep their
    samples)."""
    sections = ("packed-2d", "broadcast", "transposed-k", "transposed", "strided-out")
    by = {sec: {label(r): r for r in data.get(sec) or []} for sec in sections}
    if not any(_sampled(list(rows.values())) for rows in by.values()):
        return []
    out = ["noise (samples) of the figures above:", "",
           "| operator, types | packed 2-D | broadcast | transposed input, output in the input's order | true "
           "transpose | PyTorch on x.t() | strided output |", "|---|---|---|---|---|---|---|"]
    for name in by["packed-2d"]:
        def cell(sec, library=None):
            row = by[sec].get(name)
            if row is None:
                return "-"
            theirs = _noise_cell(row.get("torch")) if library is None and sec in ("broadcast", "strided-out") else "-"
            own = _noise_cell(row.get(library) if library else row)
            return own + (f"; PyTorch {theirs}" if theirs != "-" else "")
        out.append(f"| {name} | {cell('packed-2d')} | {cell('broadcast')} | {cell('transposed-k')} | "
                   f"{cell('transposed')} | {cell('transposed', 'torch')} | {cell('strided-out')} |")
    return out + [""]


def _host_table(host: dict) -> list[str]:
    """The host figures against their goals, with their noise and sample counts where the document keeps them."""
    noise = "samples" in host
    out = ["| host-side measure | value | goal |" + (" noise (samples) |" if noise else ""),
           "|---|---|---|" + "---|" * noise]

    def line(text: str, *keys: str) -> str:
        return f"| {text} |" + (f" {_host_noise(host, *keys)} |" if noise else "")

    if "batch_table_host_us_per_op" in host:  # (older records lack it)
        out.append(line(f"batch of 1000 ops of 1024 elements recorded from binding tables (`compiled.bind`), host "
                        f"time per op | {host['batch_table_host_us_per_op']:.1f} us | <= 10 us",
                        "batch_table_host_us_per_op"))
    out.append(line(f"batch of 1000 ops of 1024 elements recorded from bindings (plan cache), host time per op | "
                    f"{host['batch_host_us_per_op']:.1f} us | <= 10 us", "batch_host_us_per_op"))
    if "bare_batch_host_us_per_op" in host:  # (older records lack it)
        out.append(line(f"the same 1000 dispatches with wgpu alone (a copy kernel): host time per op | "
                        f"{host['bare_batch_host_us_per_op']:.1f} us | (information: this host's floor)",
                        "bare_batch_host_us_per_op"))
    fraction = host["large_wall_fraction_of_gpu"]
    out += [line(f"one small op + read-back (DML level, cached plan) | {host['small_op_readback_us']:.0f} us = "
                 f"{host['small_op_readback_us'] / host['bare_submit_readback_us']:.2f}x a bare wgpu submit + "
                 f"read-back ({host['bare_submit_readback_us']:.0f} us) | <= 1.2x", "small_op_readback_us",
                 "bare_submit_readback_us"),
            line(f"one small op through the NumPy API (upload, run, read back) | "
                 f"{host['numpy_api_small_op_us']:.0f} us | (information)", "numpy_api_small_op_us"),
            line(f"50 large ops ({host['large_elements']} float32 elements) in one batch: wall-clock vs GPU "
                 f"timestamps | {f'{100 * fraction:.0f}%' if fraction is not None else 'n/a'} | >= 90%",
                 "large_batch_wall_ns_per_op", "large_gpu_median_ns"), ""]
    return out
