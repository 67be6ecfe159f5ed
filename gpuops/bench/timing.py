"""GPU and host timing for benchmarks: timestamp queries around compute passes, and a plain copy kernel as the
bandwidth roof measured on the same adapter in the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import wgpu

from ..backends import backend_name, dawn_toggles, load_backend
from ..device import Device
from ..errors import ValidationError
from .stats import Sampled, StoppingRule, sample

# Same grid shape as the operator kernels: consecutive invocations copy consecutive 16-byte chunks, each
# invocation COPY_CHUNKS_PER_INVOCATION of them, a workgroup-size apart.
COPY_WGSL = """
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
const CHUNKS: u32 = 4u;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let first = (group.y * groups.x + group.x) * 256u * CHUNKS + lane;
    for (var k = 0u; k < CHUNKS; k += 1u) {
        let i = first + k * 256u;
        if (i < arrayLength(&dst)) {
            dst[i] = src[i];
        }
    }
}
"""
COPY_CHUNKS_PER_INVOCATION = 4


@dataclass(frozen=True)
class Timing:
    gpu_ns: list[float]  # one per iteration, from timestamp queries (empty when the adapter has none)
    host_ns: list[float]  # wall clock per iteration, submit to completion

    @property
    def gpu_median_ns(self) -> float | None:
        return statistics.median(self.gpu_ns) if self.gpu_ns else None

    @property
    def host_median_ns(self) -> float:
        return statistics.median(self.host_ns)

    def summary(self) -> dict:
        gpu = {"gpu_median_ns": self.gpu_median_ns, "gpu_min_ns": min(self.gpu_ns) if self.gpu_ns else None,
               "gpu_max_ns": max(self.gpu_ns) if self.gpu_ns else None}
        return {**gpu, "host_median_ns": self.host_median_ns, "iterations": len(self.host_ns)}


def exact_dawn_timestamps() -> bool:
    """Have Dawn's devices report timestamps as the GPU gives them. By default Dawn rounds them down (its device
    toggle timestamp_quantization, a guard against timing attacks on the web) to multiples of 65536 ns, so a
    span reads to a step at best. A benchmark turns that off; the library never does. Dawn's instance takes the
    toggle when it is made: False where this process made it already (its devices keep rounding; see
    timestamps_quantized)."""
    from wgpudawn.backends.dawn import extras

    try:
        extras.set_instance_extras(disable_toggles=["timestamp_quantization"])
    except RuntimeError:  # "Instance already exists"
        return False
    return True


def exact_timestamps_for(backend: str | None) -> None:
    """exact_dawn_timestamps() where `backend` (a Device's `backend` argument: a name, else $GPUOPS_BACKEND, else
    wgpu-native) is Dawn; before the Device is made."""
    if backend_name(load_backend(backend)) == "dawn":
        exact_dawn_timestamps()  # (where it cannot, timestamps_quantized says so)


def timestamps_quantized(device: Device) -> bool:
    """Whether the device's timestamps are rounded down (Dawn's timestamp_quantization; see exact_dawn_timestamps)."""
    return device.backend == "dawn" and "timestamp_quantization" in dawn_toggles(device.wgpu_device)


class GpuTimer:
    """Times recorded work with timestamp queries at the beginning and end of each compute pass."""

    def __init__(self, device: Device, max_passes: int = 64):
        self.device = device
        self.wgpu_device = device.wgpu_device
        self.supported = "timestamp-query" in self.wgpu_device.features
        self.max_passes = max_passes
        if self.supported:
            api = device.wgpu
            self.query_set = self.wgpu_device.create_query_set(type=api.QueryType.timestamp, count=2 * max_passes)
            size = 16 * max_passes
            self.resolve = self.wgpu_device.create_buffer(
                size=size, usage=api.BufferUsage.QUERY_RESOLVE | api.BufferUsage.COPY_SRC)
        self.tick_ns = 1.0  # wgpu-native reports raw ticks; calibrate() measures their length

    def writes(self, index: int) -> dict | None:
        if not self.supported:
            return None
        return {"query_set": self.query_set, "beginning_of_pass_write_index": 2 * index,
                "end_of_pass_write_index": 2 * index + 1}

    def _read_ticks(self, passes: int) -> np.ndarray:
        encoder = self.wgpu_device.create_command_encoder()
        encoder.resolve_query_set(self.query_set, 0, 2 * passes, self.resolve, 0)
        self.wgpu_device.queue.submit([encoder.finish()])
        raw = np.frombuffer(self.wgpu_device.queue.read_buffer(self.resolve, 0, 16 * passes), np.uint64)
        return raw.reshape(passes, 2).astype(np.float64)

    def run(self, record: Callable[[wgpu.GPUCommandEncoder, dict | None], None], iterations: int,
            warmup: int, repeats: int = 1, before: Callable[[], None] | None = None) -> Timing:
        """Run `record(encoder, timestamp_writes)` warmup + iterations times; one submit and wait each.

        With `repeats` > 1 each iteration records the work that many times back to back and reports the time
        of one: the span between the first pass's start and the last pass's end, divided by `repeats`. Use it
        where timestamps are coarse (Dawn rounds them down to 65536 ns unless exact_dawn_timestamps() ran).
        `before()`, when given, runs before each timed iteration, outside both its host and its GPU time (a cache
        flush)."""
        queue = self.wgpu_device.queue
        for _ in range(warmup):
            encoder = self.wgpu_device.create_command_encoder()
            record(encoder, None)
            queue.submit([encoder.finish()])
        self._wait()
        gpu, host = [], []
        done = 0
        while done < iterations:
            batch = min(self.max_passes, iterations - done)
            for i in range(batch):
                if before is not None:
                    before()
                start = time.perf_counter_ns()
                encoder = self.wgpu_device.create_command_encoder()
                writes = self.writes(i)
                for r in range(repeats):
                    if writes is None or repeats == 1:
                        record(encoder, writes)
                    else:  # the first pass stamps its start, the last its end
                        keep = ("beginning_of_pass_write_index",) if r == 0 else \
                            ("end_of_pass_write_index",) if r == repeats - 1 else ()
                        record(encoder, {"query_set": writes["query_set"], **{k: writes[k] for k in keep}}
                               if keep else None)
                queue.submit([encoder.finish()])
                self._wait()
                host.append((time.perf_counter_ns() - start) / repeats)
            if self.supported:
                ticks = self._read_ticks(batch)
                gpu += list((ticks[:, 1] - ticks[:, 0]) * self.tick_ns / repeats)
            done += batch
        return Timing(gpu, host)

    def _wait(self) -> None:
        # wgpu-py has no fence: an empty read forces the queue to finish.
        self.wgpu_device.queue.read_buffer(self._fence_buffer(), 0, 4)

    def _fence_buffer(self) -> wgpu.GPUBuffer:
        if not hasattr(self, "_fence"):
            self._fence = self.wgpu_device.create_buffer(size=4, usage=self.device.wgpu.BufferUsage.COPY_SRC)
        return self._fence


class CacheFlush:
    """Evicts the GPU's caches: clears (`clear_buffer`, a write of every byte on the GPU) buffers of `size_bytes` in
    all, in a submission of its own that it waits for. Larger than the adapter's last-level cache, it leaves no
    byte of a benchmark's tensors cached."""

    def __init__(self, device: Device, size_bytes: int):
        if size_bytes < 4:
            raise ValidationError(f"--flush-bytes {size_bytes}; must be at least 4")
        usage = device.wgpu.BufferUsage
        piece = device.max_buffer_size - device.max_buffer_size % 4
        self.device = device
        self.size_bytes = -(-size_bytes // 4) * 4
        self.buffers = [device.wgpu_device.create_buffer(label="gpuops-bench cache flush",
                                                         size=min(piece, self.size_bytes - offset),
                                                         usage=usage.COPY_DST | usage.COPY_SRC)
                        for offset in range(0, self.size_bytes, piece)]

    def __call__(self) -> None:
        wgpu_device = self.device.wgpu_device
        encoder = wgpu_device.create_command_encoder()
        for buffer in self.buffers:
            encoder.clear_buffer(buffer)
        wgpu_device.queue.submit([encoder.finish()])
        wgpu_device.queue.read_buffer(self.buffers[-1], 0, 4)  # waits for the clears

    def release(self) -> None:
        for buffer in self.buffers:
            buffer.destroy()
        self.buffers = []


CACHES = ("warm", "cold")  # a row's cache state: as the previous sample left it, or flushed before each sample


class Sampler:
    """Times recorded work the way every row of a run is timed: `warmup` untimed runs, then samples until `rule`
    stops, each a span of `repeats` passes (GpuTimer.run), cold ones after a cache flush."""

    def __init__(self, timer: GpuTimer, rule: StoppingRule, warmup: int, repeats: int = 1,
                 flush: CacheFlush | None = None, clock: Callable[[], float] = time.perf_counter):
        self.timer, self.rule, self.warmup, self.repeats = timer, rule, warmup, repeats
        self.flush, self.clock = flush, clock

    def time(self, record: Callable[[wgpu.GPUCommandEncoder, dict | None], None], cache: str = "warm") -> Sampled:
        if cache not in CACHES:
            raise ValidationError(f"cache {cache!r}; allowed: {', '.join(CACHES)}")
        if cache == "cold" and self.flush is None:
            raise ValidationError("cold samples need a CacheFlush")
        before = self.flush if cache == "cold" else None
        self.timer.run(record, 0, self.warmup, self.repeats)

        def take(count: int) -> tuple[list[float], list[float]]:
            timing = self.timer.run(record, count, 0, self.repeats, before)
            return timing.gpu_ns, timing.host_ns

        return sample(take, self.rule, self.clock)


class CopyKernel:
    """dst = src with vec4<u32> loads and stores (COPY_WGSL): the practical bandwidth roof of a WGSL kernel.

    CopyKernel(device, size) copies between two buffers of its own (`src`, `dst`; `record` times it);
    CopyKernel(device).recorder(source, target, size) copies between any two, such as a benchmark's own buffers.
    A copy larger than the adapter's storage binding limit is split into several dispatches of one compute pass."""

    def __init__(self, device: Device, size_bytes: int | None = None):
        self.device = device
        wgpu_device = device.wgpu_device
        module = wgpu_device.create_shader_module(label="gpuops-bench copy", code=COPY_WGSL)
        self.pipeline = wgpu_device.create_compute_pipeline(layout="auto", compute={"module": module,
                                                                                    "entry_point": "main"})
        self.src: wgpu.GPUBuffer | None = None
        self.dst: wgpu.GPUBuffer | None = None
        self.bytes_moved = 0
        self.dispatches: list[tuple[wgpu.GPUBindGroup, tuple[int, int, int]]] = []
        if size_bytes is not None:
            size_bytes = -(-size_bytes // 16) * 16
            usage = device.wgpu.BufferUsage
            usage = usage.STORAGE | usage.COPY_DST | usage.COPY_SRC
            self.src = wgpu_device.create_buffer(size=size_bytes, usage=usage)
            self.dst = wgpu_device.create_buffer(size=size_bytes, usage=usage)
            self.bytes_moved = 2 * size_bytes
            self.dispatches = self.plan(self.src, self.dst, size_bytes)

    def plan(self, source: wgpu.GPUBuffer, target: wgpu.GPUBuffer, size: int) \
            -> list[tuple[wgpu.GPUBindGroup, tuple[int, int, int]]]:
        """(bind group, grid) of each dispatch copying `size` bytes (a multiple of 16) from source to target."""
        limit = self.device.limits["max-storage-buffer-binding-size"]
        alignment = self.device.storage_offset_alignment
        piece = max(16 * alignment, limit - limit % (16 * alignment))  # whole chunks, aligned offsets
        per_dimension = self.device.limits["max-compute-workgroups-per-dimension"]
        dispatches = []
        for offset in range(0, size, piece):
            length = min(piece, size - offset)
            bind_group = self.device.wgpu_device.create_bind_group(
                layout=self.pipeline.get_bind_group_layout(0),
                entries=[{"binding": 0, "resource": {"buffer": source, "offset": offset, "size": length}},
                         {"binding": 1, "resource": {"buffer": target, "offset": offset, "size": length}}])
            groups = -(-(length // 16) // (256 * COPY_CHUNKS_PER_INVOCATION))
            dispatches.append((bind_group, (min(groups, per_dimension), -(-groups // per_dimension), 1)))
        return dispatches

    def recorder(self, source: wgpu.GPUBuffer, target: wgpu.GPUBuffer, size: int) \
            -> Callable[[wgpu.GPUCommandEncoder, dict | None], None]:
        """A record(encoder, timestamp_writes) function copying `size` bytes (a multiple of 16)."""
        dispatches = self.plan(source, target, size)
        return lambda encoder, timestamp_writes: self._record(encoder, timestamp_writes, dispatches)

    def record(self, encoder: wgpu.GPUCommandEncoder, timestamp_writes: dict | None) -> None:
        """Copy the kernel's own src to its dst."""
        self._record(encoder, timestamp_writes, self.dispatches)

    def _record(self, encoder: wgpu.GPUCommandEncoder, timestamp_writes: dict | None, dispatches) -> None:
        compute_pass = encoder.begin_compute_pass(**({"timestamp_writes": timestamp_writes}
                                                     if timestamp_writes else {}))
        compute_pass.set_pipeline(self.pipeline)
        for bind_group, grid in dispatches:
            compute_pass.set_bind_group(0, bind_group)
            compute_pass.dispatch_workgroups(*grid)
        compute_pass.end()

    def release(self) -> None:
        """Destroy the kernel's own buffers."""
        for buffer in (self.src, self.dst):
            if buffer is not None:
                buffer.destroy()
        self.src = self.dst = None
