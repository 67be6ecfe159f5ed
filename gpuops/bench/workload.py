"""One benchmark case: an operator, its data types, sizes and memory layout, put on a device with real data.

A case is checked against NumPy before it is timed: a kernel that computes the wrong thing fast is a bug, not a
result. Bandwidth counts the bytes of tensor elements that are actually read (distinct addresses, so a broadcast
operand counts once per distinct element) plus the bytes written.
"""

from __future__ import annotations

import enum
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import wgpu

from ..device import Binding, Device
from ..enums import DataType
from ..errors import ValidationError
from ..operators import OPERATORS, OperatorSpec, spec_by_name
from ..tensor import TensorDesc, implied_size_in_bytes, packed_strides
from . import reference
from .cupy_compare import time_cupy
from .stats import Sampled, StoppingRule, summary
from .timing import CopyKernel, Sampler
from .torch_compare import BROADCAST, CHANNELS_LAST_OUT, CONTIGUOUS, ROW_MAJOR_OUT, time_torch

LAYOUTS = ("packed", "transposed", "nchw-to-nhwc", "broadcast-a", "broadcast-b", "strided")
LAYOUT_HELP = {
    "packed": "every tensor row-major and contiguous",
    "transposed": "inputs stored transposed (strides of the reversed shape; 2 or more dimensions), the output "
                  "row-major",
    "nchw-to-nhwc": "4-D sizes N,C,H,W: inputs packed NCHW, the output stored NHWC (channels-last)",
    "broadcast-a": "the first input repeats along the outer dimension (stride 0)",
    "broadcast-b": "the second input repeats along the outer dimension (stride 0; binary operators)",
    "strided": "every input and the output step 2 elements along the innermost dimension",
}
OUTPUT_FILL = 0xAB  # the output buffer starts with this byte everywhere, so an unwritten element cannot pass


def buffer_usage(device: Device) -> int:
    """Storage that can be written and read back, in the flags of the device's WebGPU implementation."""
    usage = device.wgpu.BufferUsage
    return usage.STORAGE | usage.COPY_SRC | usage.COPY_DST


@dataclass(frozen=True)
class Case:
    """What to run: operator (a spec name), the value of its attribute (IS_INFINITY's mode), data types, sizes and
    layout."""

    operator: str
    dtype: DataType
    out_dtype: DataType
    sizes: tuple[int, ...]
    layout: str = "packed"
    mode: enum.Enum | None = None  # the row's mode_attribute's value; None for an operator without one
    input_strides: tuple[int, ...] | None = None  # explicit input strides (--strides) instead of the layout's
    # Element strides of named tensor fields, replacing the layout's for those fields: the goal tables' cases
    # (a transposed output, a strided output) that no layout describes.
    field_strides: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def spec(self) -> OperatorSpec:
        return spec_by_name(self.operator)

    @property
    def layout_label(self) -> str:
        if self.input_strides is not None:
            return "strides=" + ",".join(map(str, self.input_strides))
        return self.layout

    @property
    def label(self) -> str:
        return operation_label(self.operator, self.mode)


def operation_label(operator: str, mode: Any = None) -> str:
    """'is_infinity-positive': the operator's NumPy-level name, and the value of its attribute (a name, number or
    member; None: none given) where it has one."""
    spec = spec_by_name(operator)
    if mode is None or spec.mode_attribute is None:
        return spec.numpy_name
    return f"{spec.numpy_name}-{spec.mode_attribute.parse(mode).name.lower()}"


def types_label(dtype: str | DataType, out_dtype: str | DataType) -> str:
    """'float16->uint8', or 'float16' where the output has the input's type (DataType members or their names)."""
    names = [(t.name if isinstance(t, DataType) else str(t)).lower() for t in (dtype, out_dtype)]
    return names[0] if names[0] == names[1] else "->".join(names)


def make_case(operator: str, dtype: str | DataType = "float32", sizes=(1024, 1024), layout: str = "packed",
              mode: str | int | None = None, out_dtype: str | DataType | None = None,
              input_strides=None) -> Case:
    """A Case from command-line words, refusing combinations that cannot run with a message saying why."""
    spec = spec_by_name(operator)
    try:
        data_type = DataType.parse(dtype)
    except (ValueError, KeyError):
        raise ValidationError(f"unknown data type {dtype!r}; e.g. float32, float16, int32, uint8") from None
    attribute_value = _mode(spec, mode)
    output_type = default_output_type(spec, data_type) if out_dtype is None else _parse_type(out_dtype)
    sizes = tuple(int(s) for s in sizes)
    if layout not in LAYOUTS:
        raise ValidationError(f"unknown layout {layout!r}; allowed: {', '.join(LAYOUTS)}")
    if layout == "transposed" and len(sizes) < 2:
        raise ValidationError("layout 'transposed' needs 2 or more dimensions, e.g. --sizes 1024,1024")
    if layout == "nchw-to-nhwc" and len(sizes) != 4:
        raise ValidationError(f"layout 'nchw-to-nhwc' needs 4 sizes (N, C, H, W), e.g. --sizes 4,64,32,32; got "
                              f"{len(sizes)} ({','.join(map(str, sizes))})")
    if layout == "broadcast-b" and len(spec.inputs) < 2:
        raise ValidationError(f"layout 'broadcast-b' needs a second input; {spec.numpy_name} has one")
    strides = None
    if input_strides is not None:
        strides = tuple(int(s) for s in input_strides)
        if len(strides) != len(sizes):
            raise ValidationError(f"--strides has {len(strides)} values for {len(sizes)} sizes")
    return Case(spec.name, data_type, output_type, sizes, layout, attribute_value, strides)


def _mode(spec: OperatorSpec, mode: str | int | None) -> enum.Enum | None:
    """--mode: the value of the operator's attribute (its default when not given), None for an operator without
    one."""
    attribute = spec.mode_attribute
    if attribute is None:
        if mode is not None:
            takers = ", ".join(s.numpy_name for s in OPERATORS if s.attributes)
            raise ValidationError(f"--mode applies to {takers} only, not {spec.numpy_name}")
        return None
    try:
        return attribute.parse(mode if mode is not None else attribute.default)
    except (ValueError, KeyError):
        allowed = ", ".join(value.name.lower() for value in attribute.values)
        raise ValidationError(f"unknown --mode {mode!r}; allowed: {allowed}") from None


def _parse_type(value) -> DataType:
    try:
        return DataType.parse(value)
    except (ValueError, KeyError):
        raise ValidationError(f"unknown data type {value!r}") from None


def default_output_type(spec: OperatorSpec, data_type: DataType) -> DataType:
    """The row's default_output_type (UINT8 for the predicates), else the input's type."""
    return spec.output_type(data_type)


def supported_types(spec: OperatorSpec, level) -> list[DataType]:
    """Input data types the operator accepts at `level`, in a stable order."""
    row = spec.support_row(level)
    if row is None:
        return []
    order = list(DataType)
    return sorted(row.input_types, key=order.index)


def tensor_strides(case: Case) -> dict[str, tuple[int, ...]]:
    """Element strides of every tensor field for the case's layout."""
    spec, sizes = case.spec, case.sizes
    packed = packed_strides(sizes)
    strides = {name: packed for name in spec.tensor_fields}
    if case.layout == "nchw-to-nhwc":
        strides[spec.output] = nhwc_strides(sizes)
    if case.input_strides is not None:
        return {**strides, **{name: case.input_strides for name in spec.inputs}}
    if case.layout == "transposed":
        transposed = tuple(reversed(packed_strides(tuple(reversed(sizes)))))
        strides.update({name: transposed for name in spec.inputs})
    elif case.layout in ("broadcast-a", "broadcast-b"):
        name = spec.inputs[0 if case.layout == "broadcast-a" else 1]
        inner = packed_strides(sizes[1:])
        strides[name] = (0,) + inner
    elif case.layout == "strided":
        doubled = packed_strides(sizes[:-1] + (2 * sizes[-1],))
        strides = {name: doubled[:-1] + (2,) for name in spec.tensor_fields}
    strides.update(case.field_strides)
    return strides


def nhwc_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a tensor indexed (N, C, H, W) and stored NHWC (channels-last): (H*W*C, 1, W*C, C)."""
    if len(sizes) != 4:
        raise ValidationError(f"NHWC strides need 4 sizes (N, C, H, W); got {tuple(sizes)}")
    _, c, h, w = sizes
    return (h * w * c, 1, w * c, c)


def nchw_sizes(count: int, channels: int = 64, batch: int = 4) -> tuple[int, int, int, int]:
    """(N, C, H, W) of at most `count` elements: `batch` images of `channels` channels (fewer of both where `count`
    is too small for them) on a plane of H x W = count // (N*C), as square as that allows; (4, 64, 512, 512) for
    2^26."""
    if count < 1:
        raise ValidationError(f"nchw_sizes: count {count}; must be at least 1")
    batch = max(1, min(batch, count // channels))
    channels = max(1, min(channels, count // batch))
    plane = count // (batch * channels)
    h = next(h for h in range(math.isqrt(plane), 0, -1) if plane % h == 0)
    return batch, channels, h, plane // h


def compare_layout(case: Case) -> str:
    """How PyTorch and CuPy lay out the case's tensors to do the same work (torch_compare.COMPARE_LAYOUTS): a
    transposed case reads x.T's memory into a row-major output, an NCHW one writes channels-last, a broadcast of the
    last input expands one row; other strided cases are compared on their inputs made contiguous."""
    if case.input_strides is not None:
        return CONTIGUOUS
    if case.layout == "transposed":
        return ROW_MAJOR_OUT
    if case.layout == "nchw-to-nhwc":
        return CHANNELS_LAST_OUT
    broadcast = {"broadcast-a": 0, "broadcast-b": 1}.get(case.layout)
    if broadcast is not None and broadcast == len(case.spec.inputs) - 1 and len(case.sizes) == 2:
        return BROADCAST
    return CONTIGUOUS


def make_desc(case: Case) -> object:
    spec = case.spec
    strides = tensor_strides(case)
    tensors = {name: TensorDesc(case.out_dtype if name == spec.output else case.dtype, case.sizes, strides[name])
               for name in spec.tensor_fields}
    return spec.desc_type(**tensors, **spec.mode_values(case.mode))


def distinct_elements(sizes: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Elements at distinct addresses: a zero-stride dimension repeats the others."""
    return math.prod(size for size, stride in zip(sizes, strides) if stride != 0)


def bytes_moved(case: Case) -> int:
    spec, strides = case.spec, tensor_strides(case)
    read = sum(distinct_elements(case.sizes, strides[name]) * case.dtype.size for name in spec.inputs)
    return read + math.prod(case.sizes) * case.out_dtype.size


def random_values(data_type: DataType, count: int, rng: np.random.Generator) -> np.ndarray:
    """Benchmark data: mostly ordinary values (what real tensors hold), with the special values mixed in so that the
    check before timing covers them too."""
    dtype = data_type.numpy_dtype
    # (float32 draws: a table row's 2^26 values in a quarter of the time float64 draws take)
    if dtype.kind == "f":
        values = rng.standard_normal(count, dtype=np.float32)
        values *= 100
        values = values.astype(dtype, copy=False)
        info = np.finfo(dtype)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, float(info.smallest_subnormal),
                             -float(info.smallest_subnormal), float(info.max), -float(info.max), 0.5, 3.0], dtype)
        pick = rng.random(count, dtype=np.float32) < 0.05
        values[pick] = rng.choice(specials, size=int(pick.sum()))
        return values
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=count, dtype=dtype, endpoint=True)
    # small magnitudes too, where remainders are not just the dividend
    small = rng.random(count, dtype=np.float32) < 0.5
    values[small] = rng.integers(max(info.min, -100), min(info.max, 100), size=int(small.sum()), endpoint=True)
    return values


def worst_values(data_type: DataType, count: int, rng: np.random.Generator, field: str) -> np.ndarray:
    """Benchmark data that costs the modulus most (`--data worst`), by field: the first input (the dividend) the
    largest magnitudes, the others (the divisor) the smallest. Floats: dividends of the largest finite exponent and
    divisors that are subnormal with a few significant bits (an odd significand below 16), so that every pair lies
    at the type's largest exponent gap and normalising the divisor adds the most remainder steps; no remainder is
    zero early. Integers: dividends from half the largest magnitude up and divisors from 2 to 2^15 (no zero), the
    largest quotients, which 64-bit division takes in the most steps. Signs are random."""
    dtype = data_type.numpy_dtype
    dividend = field == "a_tensor"
    if dtype.kind == "f":
        info = np.finfo(dtype)
        bits = np.dtype(f"u{dtype.itemsize}")
        mantissa_bits, sign = info.nmant, 8 * dtype.itemsize - 1
        if dividend:
            top_field = (1 << (sign - mantissa_bits)) - 2
            magnitude = (top_field << mantissa_bits) | rng.integers(0, 1 << mantissa_bits, count, dtype=np.uint64)
        else:
            magnitude = rng.integers(1, 8, count, dtype=np.uint64) * 2 + 1
        signs = rng.integers(0, 2, count, dtype=np.uint64) << sign
        return (magnitude | signs).astype(bits).view(dtype)
    info = np.iinfo(dtype)
    largest = int(info.max)
    if dividend:
        magnitude = rng.integers(largest // 2, largest, count, dtype=np.uint64, endpoint=True)
    else:
        magnitude = rng.integers(2, min(largest, 1 << 15), count, dtype=np.uint64, endpoint=True)
    values = magnitude.astype(dtype)
    if info.min < 0:
        values[rng.random(count) < 0.5] *= -1
    return values


def bench_values(data_type: DataType, count: int, rng: np.random.Generator, field: str) -> np.ndarray:
    """random_values for every field (`--data bench`, the default)."""
    return random_values(data_type, count, rng)


# (data type, element count, generator, desc field) -> the values of one input tensor's memory
DataMaker = Callable[[DataType, int, np.random.Generator, str], np.ndarray]
# The benchmark's data sets (--data), by name: what Workload's `data` makes.
DATA_SETS: dict[str, DataMaker] = {"bench": bench_values, "worst": worst_values}
DATA_HELP = {"bench": "ordinary values with 5% special values mixed in",
             "worst": "what costs the modulus most: for floats the largest dividends over small subnormal divisors "
                      "(the type's largest exponent gap), for integers the largest quotients"}


def element_view(memory: np.ndarray, sizes: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """The tensor's elements inside a flat array of its element type, as a strided view."""
    itemsize = memory.dtype.itemsize
    return np.lib.stride_tricks.as_strided(memory, sizes, tuple(s * itemsize for s in strides), writeable=False)


def _padded(data: bytes | np.ndarray, fill: int = 0) -> np.ndarray:
    raw = np.frombuffer(memoryview(data).cast("B"), np.uint8)
    size = max(16, -(-raw.size // 16) * 16)
    padded = np.full(size, fill, np.uint8)
    padded[: raw.size] = raw
    return padded


class Arena:
    """Buffers every case of a run reuses: slot 0 and 1 hold the inputs, slot 2 the output (and the copy kernel's
    source and destination are slots 0 and 2).

    Why: every case, and the copy roof it is compared with, then runs on the same memory, and a sweep allocates
    its largest buffers once instead of hundreds of times. A slot that is too small is replaced (reserve() up
    front avoids that)."""

    SLOTS = 3

    def __init__(self, device: Device):
        self.device = device
        self.buffers: list[wgpu.GPUBuffer | None] = [None] * self.SLOTS

    def reserve(self, sizes: list[int]) -> None:
        for slot, size in enumerate(sizes):
            self.slot(slot, size)

    def slot(self, index: int, size: int) -> wgpu.GPUBuffer:
        size = max(16, -(-size // 16) * 16)
        buffer = self.buffers[index]
        if buffer is None or buffer.size < size:
            if buffer is not None:
                buffer.destroy()
            buffer = self.buffers[index] = self.device.wgpu_device.create_buffer(
                label=f"gpuops-bench arena {index}", size=size, usage=buffer_usage(self.device))
        return buffer

    def release(self) -> None:
        for buffer in self.buffers:
            if buffer is not None:
                buffer.destroy()
        self.buffers = [None] * self.SLOTS


def slot_sizes(case: Case) -> list[int]:
    """Bytes each arena slot needs for the case, its copy-roof measurement included."""
    spec, strides = case.spec, tensor_strides(case)
    inputs = [implied_size_in_bytes(case.dtype, case.sizes, strides[name]) for name in spec.inputs]
    output = implied_size_in_bytes(case.out_dtype, case.sizes, strides[spec.output])
    copy = copy_size(bytes_moved(case))
    return [max(inputs[0], copy), inputs[1] if len(inputs) > 1 else 16, max(output, copy)]


def copy_size(moved: int) -> int:
    """The copy kernel copies half the bytes an operator moves, so that it moves as many bytes in all."""
    return max(16, -(-(moved // 2) // 16) * 16)


class Workload:
    """A case on a device: buffers holding random data, the compiled operator and its bindings.

    With an Arena the buffers are the arena's (filled anew); without one the workload makes and owns its own.
    `data` makes the inputs' values (default: random_values)."""

    def __init__(self, device: Device, case: Case, seed: int = 0, feature_level=None, arena: Arena | None = None,
                 data: DataMaker | None = None):
        self.device, self.case = device, case
        spec = case.spec
        self.desc = make_desc(case)
        self.compiled = device.compile(self.desc, feature_level=feature_level)
        rng = np.random.default_rng(seed)
        strides = tensor_strides(case)
        self.owned: list[wgpu.GPUBuffer] = []
        self.inputs: list[np.ndarray] = []  # logical (strided) views of the uploaded data
        bindings = {}
        for slot, name in enumerate(spec.inputs):
            count = implied_size_in_bytes(case.dtype, case.sizes, strides[name]) // case.dtype.size
            memory = (data or bench_values)(case.dtype, count, rng, name)
            bindings[name] = self._upload(arena, slot, _padded(memory))
            self.inputs.append(element_view(memory, case.sizes, strides[name]))
        self.output_size = implied_size_in_bytes(case.out_dtype, case.sizes, strides[spec.output])
        bindings[spec.output] = self._upload(arena, 2, _padded(bytes(self.output_size), OUTPUT_FILL))
        self.output = bindings[spec.output].buffer
        self.bindings = bindings
        self.out_strides = strides[spec.output]

    def _upload(self, arena: Arena | None, slot: int, data: np.ndarray) -> Binding:
        wgpu_device = self.device.wgpu_device
        if arena is None:
            buffer = wgpu_device.create_buffer_with_data(data=data, usage=buffer_usage(self.device))
            self.owned.append(buffer)
        else:
            buffer = arena.slot(slot, data.size)
            wgpu_device.queue.write_buffer(buffer, 0, data)
        return Binding(buffer, 0, data.size)

    def record(self, encoder: wgpu.GPUCommandEncoder, timestamp_writes: dict | None) -> None:
        self.compiled.record(encoder, self.bindings, timestamp_writes)

    def result(self) -> np.ndarray:
        """Run once and read the output elements back."""
        self.compiled.execute(self.bindings)
        raw = self.device.wgpu_device.queue.read_buffer(self.output, 0, -(-self.output_size // 4) * 4)
        memory = np.frombuffer(raw, self.case.out_dtype.numpy_dtype, self.output_size // self.case.out_dtype.size)
        return np.array(element_view(memory, self.case.sizes, self.out_strides))

    def expected(self) -> np.ndarray:
        return reference.expected(self.case.operator, self.case.mode, self.case.out_dtype, *self.inputs)

    def check(self) -> reference.Mismatch | None:
        """None when the GPU result equals NumPy's bit for bit."""
        return reference.compare(self.result(), self.expected(), tuple(self.inputs))

    def release(self) -> None:
        """Destroy the buffers the workload made itself (an arena's stay for the next case)."""
        for buffer in self.owned:
            buffer.destroy()
        self.owned = []


@dataclass
class CopyRoof:
    """The copy kernel's bandwidth per byte count and cache state, measured once each in a run, on the run's arena
    (slot 0 to slot 2, the memory the operators use), sampled as the cases are."""

    device: Device
    sampler: Sampler
    arena: Arena
    measured: dict[tuple[int, str], dict] = field(default_factory=dict)
    _copy: CopyKernel | None = None
    _floor_ns: float | None = None

    def for_bytes(self, moved: int, cache: str = "warm") -> dict:
        """Copy `moved / 2` bytes (so it moves as many bytes as the operator) and report its speed."""
        size = copy_size(moved)
        if (size, cache) not in self.measured:
            sampled = self.sampler.time(self._recorder(size), cache)
            gpu, host = summary(sampled.gpu_ns), summary(sampled.host_ns)
            self.measured[size, cache] = _speeds(2 * size, gpu["median"], host["median"], {
                "bytes_moved": 2 * size, "cache": cache, "iterations": len(sampled.host_ns),
                "gpu_median_ns": gpu["median"], "gpu_noise": gpu["noise"], "host_median_ns": host["median"],
                "host_noise": host["noise"]})
        return self.measured[size, cache]

    def _recorder(self, size: int):
        if self._copy is None:
            self._copy = CopyKernel(self.device)
        return self._copy.recorder(self.arena.slot(0, size), self.arena.slot(2, size), size)

    def entries(self) -> list[dict]:
        return [self.measured[key] for key in sorted(self.measured)]

    def floor_ns(self) -> float:
        """Median time of a 16-byte copy, GPU time where there are timestamps, else host time: what a dispatch
        costs in this run before it moves any data. Kept apart from the roof's entries."""
        if self._floor_ns is None:
            sampler = self.sampler
            timing = sampler.timer.run(self._recorder(16), sampler.rule.min_samples,
                                       max(1, sampler.warmup), sampler.repeats)  # never the first, cold run
            self._floor_ns = float(timing.gpu_median_ns or timing.host_median_ns)
        return self._floor_ns


def _speeds(moved: int, gpu_ns: float | None, host_ns: float, row: dict) -> dict:
    """Add gbps (bytes per ns = GB/s) from the GPU time, or from host time when there is no GPU time."""
    basis = "gpu" if gpu_ns else "host"
    row["gbps"] = float(moved / (gpu_ns if gpu_ns else host_ns))
    row["gbps_basis"] = basis
    return row


def timed_fields(sampled: Sampled) -> dict:
    """A row's timing keys (docs/bench-json.md) from its samples."""
    gpu, host = summary(sampled.gpu_ns), summary(sampled.host_ns)
    return {"iterations": len(sampled.host_ns), "stopped_on": sampled.stopped_on,
            "gpu_median_ns": gpu["median"], "gpu_min_ns": gpu["min"], "gpu_max_ns": gpu["max"],
            "gpu_noise": gpu["noise"], "host_median_ns": host["median"], "host_noise": host["noise"],
            "gpu_samples_ns": [float(t) for t in sampled.gpu_ns] if sampled.gpu_ns else None,
            "host_samples_ns": [float(t) for t in sampled.host_ns]}


def measure(workload: Workload, sampler: Sampler, roof: CopyRoof, caches: tuple[str, ...] = ("warm",),
            compare: tuple[str, ...] = ()) -> list[dict]:
    """Check the case against NumPy, then time it in each cache state of `caches`: one result row of the JSON
    schema (docs/bench-json.md) per state."""
    case = workload.case
    moved = bytes_moved(case)
    base = {"operator": case.operator, "mode": case.mode.name if case.mode is not None else None,
            "dtype": case.dtype.name, "output_dtype": case.out_dtype.name, "sizes": list(case.sizes),
            "layout": case.layout_label,
            "strides": {_dml_name(k): list(v) for k, v in tensor_strides(case).items()},
            "elements": math.prod(case.sizes), "bytes_moved": moved}
    mismatch = workload.check()
    if mismatch is not None:
        return [{**base, "cache": cache, "exact": False, "error": mismatch.describe(), **_empty_timing()}
                for cache in caches]
    rows = []
    for cache in caches:
        row = {**base, "cache": cache, "exact": True, "error": None, "warmup": sampler.warmup,
               **timed_fields(sampler.time(workload.record, cache))}
        _speeds(moved, row["gpu_median_ns"], row["host_median_ns"], row)
        copy = roof.for_bytes(moved, cache)
        row["copy_gbps"] = copy["gbps"]
        row["percent_of_copy"] = 100.0 * row["gbps"] / copy["gbps"] if copy["gbps"] else None
        rows.append(row)
    # The other libraries time their own loops, with their caches as those leave them: once per case.
    compared = {}
    for what in compare:
        if what == "numpy":
            compared["numpy"] = time_numpy(workload, sampler.rule.min_samples, sampler.warmup, moved)
        elif what in COMPARISONS:
            compared[what] = gpu_comparison(what, workload, sampler.rule.min_samples, sampler.warmup, moved)
    for row in rows:
        row["compare"] = dict(compared)
    return rows


def _dml_name(field: str) -> str:
    """'a_tensor' -> 'ATensor': desc fields by their DirectML names in results, as in model files."""
    return "".join(part.capitalize() for part in field.split("_"))


def _empty_timing() -> dict:
    keys = ("iterations", "warmup", "stopped_on", "gpu_median_ns", "gpu_min_ns", "gpu_max_ns", "gpu_noise",
            "host_median_ns", "host_noise", "gpu_samples_ns", "host_samples_ns", "gbps", "gbps_basis", "copy_gbps",
            "percent_of_copy")
    return {**{key: None for key in keys}, "compare": {}}


def time_numpy(workload: Workload, iterations: int, warmup: int, moved: int) -> dict:
    """The same operation on the same (strided) arrays in NumPy on the CPU, wall clock per call."""
    case = workload.case
    function = reference.numpy_function(case.operator, case.mode, case.out_dtype)
    times = []
    with np.errstate(all="ignore"):
        for i in range(warmup + iterations):
            start = time.perf_counter_ns()
            function(*workload.inputs)
            if i >= warmup:
                times.append(time.perf_counter_ns() - start)
    median = float(statistics.median(times))
    return {"median_ns": median, "min_ns": float(min(times)), "max_ns": float(max(times)),
            "gbps": moved / median, "device": "cpu"}


# Other libraries doing the same work on a CUDA GPU: the function timing it, and the name of its own byte count.
COMPARISONS = {"torch": (time_torch, "torch_counted_bytes"), "cupy": (time_cupy, "cupy_counted_bytes")}


def gpu_comparison(what: str, workload: Workload, iterations: int, warmup: int, moved: int) -> dict:
    """PyTorch or CuPy (`what`) on CUDA on the same data laid out as the case (compare_layout), rated with the same
    byte count as gpuops (its own count is kept too)."""
    case = workload.case
    mode = int(case.mode) if case.mode is not None else None
    timer, counted = COMPARISONS[what]
    result = timer(case.operator, mode, workload.inputs, case.out_dtype.numpy_dtype, StoppingRule(iterations),
                   warmup, compare_layout(case))
    if "error" in result:
        return {"error": result["error"]}
    return {"median_ns": result["gpu_median_ns"], "min_ns": result["gpu_min_ns"], "max_ns": result["gpu_max_ns"],
            "gbps": moved / result["gpu_median_ns"], counted: result["bytes"], "device": "cuda",
            "layout": result["layout"]}
