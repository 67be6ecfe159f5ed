"""Many cases in one run: the default benchmark, the sweep over sizes, and the sweep's plot.

Every case shares one device, one timer (with its calibrated tick length) and one copy-kernel roof per byte count,
so the percentages in a table are comparable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..device import Device
from ..enums import DataType, FeatureLevel
from ..errors import DeviceError, ValidationError
from ..operators import OPERATORS, spec_by_name
from .report import physical_memory
from .stats import StoppingRule
from .ticks import TickConversion, calibrate
from .timing import CacheFlush, GpuTimer, Sampler
from .cuda_context import hold_cuda_contexts
from .workload import (DATA_SETS, Arena, Case, CopyRoof, Workload, bytes_moved, copy_size, make_case, measure,
                       nchw_sizes, slot_sizes, supported_types, tensor_strides)

DEFAULT_DTYPES = ("float32", "float16", "int32")
SOFTWARE_DEFAULT_ELEMENTS = 1 << 22  # well under a minute for the whole default table on lavapipe
GPU_DEFAULT_ELEMENTS = 1 << 26
SOFTWARE_SWEEP_MAX = 1 << 16
GPU_SWEEP_MAX = 1 << 28
SWEEP_MIN = 1 << 10
NVIDIA_VENDOR_ID = 0x10DE
GPU_FLUSH_BYTES = 256 << 20
SOFTWARE_FLUSH_BYTES = 64 << 20
MIN_FLUSH_BYTES = 16 << 20


def is_software(device: Device) -> bool:
    return device.adapter.info.get("adapter_type") == "CPU"


@dataclass
class Session:
    """What every case of a run shares."""

    device: Device
    timer: GpuTimer
    conversion: TickConversion
    sampler: Sampler
    roof: CopyRoof
    caches: tuple[str, ...]  # the cache states every case is timed in (timing.CACHES)
    compare: tuple[str, ...]
    feature_level: FeatureLevel
    arena: Arena
    cuda_context: list | None = None  # CUDA arrays kept alive for the run (see open)
    cuda_requested: bool = False
    cuda_held: bool = False  # stays true after close(): the run was timed with a CUDA context
    floor_ns: float | None = None  # a dispatch that moves nothing, timed like the cases (see report.PERCENT_MIN_NS)
    data: str = "bench"  # the inputs' data set (workload.DATA_SETS)

    @classmethod
    def open(cls, device: Device, rule: StoppingRule, warmup: int, compare: tuple[str, ...],
             hold_cuda_context: bool = False, repeats: int = 1, caches: tuple[str, ...] = ("warm",),
             flush_bytes: int | None = None, data: str = "bench") -> Session:
        """Calibrate the timer and prepare the arena, the cache flush (for cold samples; `flush_bytes`, else
        default_flush_bytes) and the copy roof.

        With `hold_cuda_context` (and always with --compare torch or cupy, so that every case is timed in the same
        state) a CUDA context is opened through PyTorch (else CuPy) first and held for the run: NVIDIA's driver runs
        Vulkan compute in a lower performance state while no CUDA context exists on the GPU."""
        requested = hold_cuda_context or "torch" in compare or "cupy" in compare
        context = (hold_cuda_contexts() or None) if requested else None
        timer = GpuTimer(device)
        conversion = calibrate(device, timer)
        if conversion.tick_ns is None:
            timer.supported = False  # GPU times would be meaningless: report host times only
        flush = CacheFlush(device, flush_bytes or default_flush_bytes(device)) if "cold" in caches else None
        sampler = Sampler(timer, rule, warmup, repeats, flush)
        arena = Arena(device)
        roof = CopyRoof(device, sampler, arena)
        return cls(device, timer, conversion, sampler, roof, caches, compare, device.feature_level, arena, context,
                   requested, context is not None, roof.floor_ns(), data)

    def reserve(self, cases: list[Case]) -> None:
        """Allocate the arena for the largest of the cases once, before the first is timed."""
        if cases:
            self.arena.reserve([max(sizes) for sizes in zip(*(slot_sizes(case) for case in cases))])

    def run(self, case: Case) -> list[dict]:
        """The case's result rows: one per cache state."""
        workload = Workload(self.device, case, feature_level=self.feature_level, arena=self.arena,
                            data=DATA_SETS[self.data])
        try:
            return measure(workload, self.sampler, self.roof, self.caches, self.compare)
        finally:
            workload.release()

    def close(self) -> None:
        self.arena.release()
        if self.sampler.flush is not None:
            self.sampler.flush.release()
        self.cuda_context = None

    def settings(self, **extra) -> dict:
        sampler = self.sampler
        return {"iterations": sampler.rule.min_samples, "warmup": sampler.warmup, "repeats": sampler.repeats,
                **sampler.rule.settings(), "cache": list(self.caches),
                "flush_bytes": sampler.flush.size_bytes if sampler.flush is not None else None,
                "compare": list(self.compare), "cuda_context": self.cuda_held, "data": self.data, **extra}

    def notes(self) -> list[str]:
        """What a reader of an NVIDIA run must know about the driver's performance state."""
        if self.cuda_requested and not self.cuda_held:
            return ["no CUDA context was held: PyTorch with CUDA is not available"
                    + (", nor CuPy with CUDA" if "cupy" in self.compare else "")]
        if not self.cuda_held and self.device.adapter.info.get("vendor_id") == NVIDIA_VENDOR_ID:
            return ["NVIDIA adapter without a CUDA context in use: the driver may run Vulkan compute in a lower "
                    "performance state (some kernels run several times slower); --cuda-context holds one "
                    "(needs PyTorch with CUDA), as does any CUDA program running on the GPU"]
        return []


def operator_names(names: Iterable[str] | None) -> list[str]:
    """Spec names for the --ops words (every operator when None)."""
    if not names:
        return [spec.name for spec in OPERATORS]
    return [spec_by_name(name).name for name in names]


def select_pairs(operators: list[str], dtypes: Iterable[str] | None, level: FeatureLevel, layout: str = "packed",
                 default_dtypes: Iterable[str] | None = None) -> tuple[list[tuple[str, DataType]], list[str]]:
    """(operator, data type) pairs to run, and a line for each pair asked for that cannot run, saying why.

    Explicit `dtypes` are parsed strictly (an unknown name is an error); a type an operator lacks at `level` is
    skipped and said. Without explicit ones, `default_dtypes` (or every supported type) are used where supported,
    silently: nobody asked for the others."""
    wanted = None
    if dtypes:
        wanted = []
        for name in dtypes:
            try:
                wanted.append(DataType.parse(name))
            except (ValueError, KeyError):
                raise ValidationError(f"unknown data type {name!r}; e.g. float32, float16, int32, uint8") from None
    elif default_dtypes:
        wanted = [DataType.parse(name) for name in default_dtypes]
    pairs, skipped = [], []
    for operator in operators:
        spec = spec_by_name(operator)
        short = spec.name.removeprefix("ELEMENT_WISE_")
        supported = supported_types(spec, level)
        if not supported:
            skipped.append(f"skipped: {spec.numpy_name} ({short} does not exist at feature level {level.label})")
            continue
        if layout == "broadcast-b" and len(spec.inputs) < 2:
            skipped.append(f"skipped: {spec.numpy_name} (layout broadcast-b needs a second input; {short} has one)")
            continue
        for data_type in supported if wanted is None else wanted:
            if data_type in supported:
                pairs.append((spec.name, data_type))
            elif dtypes:
                skipped.append(f"skipped: {spec.numpy_name} {data_type.name.lower()} ({short} takes "
                               f"{', '.join(t.name.lower() for t in supported)} at feature level {level.label})")
    if not pairs:
        reasons = "; ".join(line.removeprefix("skipped: ") for line in skipped)
        asked = f"the data types asked for ({', '.join(dtypes)})" if dtypes else "the operators asked for"
        raise ValidationError(f"nothing to run: {asked} at feature level {level.label}: {reasons}")
    return pairs, skipped


def cases_for(pairs: list[tuple[str, DataType]], sizes_of: Callable[[int], tuple[int, ...]], elements: Iterable[int],
              layout: str = "packed", mode: str | None = None) -> list[Case]:
    """operator x data type x size, for the pairs select_pairs chose."""
    elements = list(elements)
    cases = []
    for operator, data_type in pairs:
        op_mode = mode if spec_by_name(operator).mode_attribute is not None else None  # --mode: where it applies
        cases.extend(make_case(operator, data_type, sizes_of(count), layout, op_mode) for count in elements)
    return cases


def square_sizes(count: int) -> tuple[int, int]:
    """A 2-D shape of `count` (a power of two) elements, as square as possible."""
    rows = 1 << (int(math.log2(count)) // 2)
    return rows, count // rows


def layout_sizes(layout: str) -> Callable[[int], tuple[int, ...]]:
    """1-D tensors for packed runs, 4-D (N, C, H, W) ones for nchw-to-nhwc; 2-D ones where the layout needs an outer
    dimension to act on."""
    if layout == "nchw-to-nhwc":
        return nchw_sizes
    return (lambda n: (n,)) if layout == "packed" else square_sizes


def default_flush_bytes(device: Device) -> int:
    """Bytes a cold sample's flush writes: GPU_FLUSH_BYTES on a GPU (its last-level cache is at most about a
    fifth of that: 50 MiB on an H100), and twice the host's largest CPU cache on a software adapter, whose caches
    are the CPU's (SOFTWARE_FLUSH_BYTES when the host does not say)."""
    if not is_software(device):
        return GPU_FLUSH_BYTES
    largest = host_cache_bytes()
    return max(MIN_FLUSH_BYTES, 2 * largest) if largest else SOFTWARE_FLUSH_BYTES


def host_cache_bytes(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int | None:
    """The largest CPU cache Linux reports for the first CPU, in bytes (None elsewhere)."""
    sizes = []
    for entry in root.glob("index*/size"):
        try:
            text = entry.read_text(encoding="ascii").strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None


def default_elements(device: Device) -> int:
    return SOFTWARE_DEFAULT_ELEMENTS if is_software(device) else GPU_DEFAULT_ELEMENTS


def sweep_limit(device: Device | None, requested: int | None) -> int:
    """Largest element count of the sweep: what was asked, else small on a software adapter and up to 2^28 on a GPU
    (each case is further held to the adapter's buffer size limit and to host memory by `fits`). Without a device
    only the requested size is checked."""
    if requested is not None:
        if requested < SWEEP_MIN:
            raise ValidationError(f"--max-elements {requested} is below the sweep's smallest size {SWEEP_MIN}")
        return requested
    return SOFTWARE_SWEEP_MAX if is_software(device) else GPU_SWEEP_MAX


def fits(device: Device, case: Case) -> str | None:
    """None when the case fits the adapter and host memory, else why not."""
    strides = tensor_strides(case)
    largest = 0
    for name in case.spec.tensor_fields:
        data_type = case.out_dtype if name == case.spec.output else case.dtype
        span = sum((s - 1) * st for s, st in zip(case.sizes, strides[name])) + 1
        largest = max(largest, span * data_type.size)
    largest = max(largest, copy_size(bytes_moved(case)))  # the copy roof's buffers
    limit = device.max_buffer_size  # gpuops splits work over the binding limit, but a buffer must fit
    if largest > limit:
        return f"a buffer of {largest} bytes exceeds the adapter's buffer size limit {limit}"
    memory = physical_memory()
    elements = math.prod(case.sizes)
    # inputs, output, read-back and NumPy's expected result live on the host at once
    host_bytes = elements * ((len(case.spec.inputs) + 1) * case.dtype.size + 3 * case.out_dtype.size)
    if memory is not None and host_bytes > memory // 2:
        return f"the case needs about {host_bytes} bytes of host memory; the machine has {memory}"
    return None


def run_cases(session: Session, cases: list[Case],
              report_progress: Callable[[str, int, int], None] | None = None) -> tuple[list[dict], list[str]]:
    """Results (one row per case that fits) and notes on the cases skipped."""
    results, skipped = [], []
    runnable = []
    for case in cases:
        reason = fits(session.device, case)
        if reason is None:
            runnable.append(case)
        else:
            skipped.append(f"{_label(case)}: skipped, {reason}")
    session.reserve(runnable)
    for index, case in enumerate(runnable, 1):
        if report_progress:
            report_progress(_label(case), index, len(runnable))
        try:
            results.extend(session.run(case))
        except DeviceError as exc:
            skipped.append(f"{_label(case)}: skipped, {exc}")
    return results, skipped


def _label(case: Case) -> str:
    return f"{case.label} {case.dtype.name.lower()} {'x'.join(map(str, case.sizes))}"


def plot_sweep(results: list[dict], copy_roof: list[dict], path: str | Path, run_name: str) -> str:
    """Bandwidth against size, one line per operator and data type, and the copy kernel's line for reference.

    The x axis is bytes moved per dispatch (element bytes read + written), the one size on which operators of
    different data types and the copy kernel line up. `run_name` (the adapter and backend) titles it. Returns a
    note saying what happened."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install matplotlib)"
    lines: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for row in results:
        if not row["exact"]:
            continue
        name = spec_by_name(row["operator"]).numpy_name
        lines.setdefault((name, row["dtype"].lower()), []).append((row["bytes_moved"], row["gbps"]))
    # Colour tells the data type, marker and dash the operator: 34 lines stay tellable apart. With one data type,
    # colour tells the operator too.
    dtypes = sorted({dtype for _, dtype in lines})
    operators = sorted({name for name, _ in lines})
    colours = plt.get_cmap("tab10")
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", (0, (5, 1)))]
    figure, axes = plt.subplots(figsize=(11, 6.5))
    for (name, dtype), points in sorted(lines.items()):
        points.sort()
        marker, dash = styles[operators.index(name) % len(styles)]
        colour = operators.index(name) if len(dtypes) == 1 else dtypes.index(dtype)
        axes.plot([p[0] for p in points], [p[1] for p in points], marker=marker, markersize=3, linewidth=1,
                  linestyle=dash, color=colours(colour % 10), label=f"{name} {dtype}")
    if copy_roof:
        roof = sorted((entry["bytes_moved"], entry["gbps"]) for entry in copy_roof)
        axes.plot([p[0] for p in roof], [p[1] for p in roof], color="black", linestyle="--", linewidth=2,
                  label="plain WGSL copy")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("bytes moved per dispatch (element bytes read + written)")
    axes.set_ylabel("GB/s")
    axes.set_title(f"gpuops operators on {run_name}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="x-small", ncol=3)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return f"plot written to {path}"
