"""Devices, compiled operators and dispatch: the one place where gpuops talks to wgpu."""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import wgpu

from .adapters import adapter_label, pick_adapter
from .backends import (backend_name, backend_of, create_shader_module, load_backend, request_device,
                       resolve_runtime_checks)
from .binding import Binding
from .enums import FeatureLevel
from .errors import DeviceError, GpuOpsError, ValidationError
from .layout import (Iteration, Window, coalesce, span_in_bytes, split_boxes, units_aligned, units_own_their_words,
                     window_for)
from .operators import OperatorSpec, spec_of
from . import shaders
from .shaders import CHUNKS, READ, SEPARATE, SHARED, VIA_OUTPUT, KernelKey, shader_source
from .tensor import TensorDesc
from .validation import validate, validate_bindings

PLAN_CACHE_SIZE = 8192  # dispatch plans (bind groups and their uniform buffers) remembered per device
COMPILED_CACHE_SIZE = 1024  # compiled operators remembered per device


class Device:
    """A WebGPU device that runs gpuops operators at one DirectML feature level."""

    def __init__(self, feature_level: FeatureLevel | str | int = FeatureLevel.LEVEL_6_4,
                 adapter: str | None = None, wgpu_device: wgpu.GPUDevice | None = None,
                 backend: str | None = None, runtime_checks: bool | None = None):
        """`runtime_checks`: whether the shaders keep the safety code WebGPU adds for untrusted shaders (see
        backends.py). None (the default, or $GPUOPS_RUNTIME_CHECKS) leaves it out where the backend can;
        `self.runtime_checks` says what this device does."""
        try:
            self.feature_level = FeatureLevel.parse(feature_level)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if wgpu_device is not None:
            self.wgpu = backend_of(wgpu_device)  # the wgpu-py module (wgpu or wgpudawn) behind this device
            self.wgpu_device = wgpu_device
            self.adapter = wgpu_device.adapter
        else:
            self.wgpu = load_backend(backend)
        self.runtime_checks = resolve_runtime_checks(self.wgpu, runtime_checks, wgpu_device)
        if wgpu_device is None:
            # GPUOPS_ADAPTER picks the adapter (a name substring) when the caller does not.
            self.adapter = pick_adapter(self.wgpu, adapter or os.environ.get("GPUOPS_ADAPTER") or None)
            limits = self.adapter.limits
            wanted = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroups-per-dimension")
            features = [f for f in ("timestamp-query",) if f in self.adapter.features]
            self.wgpu_device = request_device(
                self.wgpu, self.adapter, self.runtime_checks, label="gpuops", required_features=features,
                required_limits={k: limits[k] for k in wanted})
        self.limits = self.wgpu_device.limits
        self.storage_offset_alignment = self.limits["min-storage-buffer-offset-alignment"]
        self.max_buffer_size = self.limits["max-buffer-size"]
        # The two limits the dispatch plan respects. They start at the adapter's values; a test may lower them
        # on its own Device to exercise splitting and 2-D grids with little data.
        self.binding_size_limit = self.limits["max-storage-buffer-binding-size"]
        self.max_workgroups_per_dimension = self.limits["max-compute-workgroups-per-dimension"]
        # Kernel shape (part of every KernelKey): benchmarks and tests may change them on their own Device.
        self.workgroup_size = shaders.WORKGROUP_SIZE
        self.units_per_invocation: int | None = None  # None: shaders.tuned_units_per_invocation
        # Whether pack2x16float rounds inexact values to nearest, ties to even, as NumPy does: found by a probe the
        # first time a kernel depends on it (see _probe_pack_rounding); tests may set it to take the other path.
        self.pack_rounds_to_nearest: bool | None = None
        # Every wgpu call made for this Device happens under this lock: some WebGPU bindings (Dawn's) crash when
        # one device is used from several threads at once.
        self._lock = threading.RLock()
        self._pipelines: dict[KernelKey, tuple[wgpu.GPUComputePipeline, wgpu.GPUBindGroupLayout]] = {}
        self._placeholders: dict[str, wgpu.GPUBuffer] = {}
        self._plans: OrderedDict[tuple, tuple] = OrderedDict()  # (compiled operator, bindings) -> dispatches
        self._compiled: OrderedDict[tuple[object, FeatureLevel], CompiledOperator] = OrderedDict()

    def placeholder(self, access: str) -> wgpu.GPUBuffer:
        """A 16-byte buffer bound where a view is declared but has nothing to reach (one per access mode, so
        read-only and writable bindings never share it)."""
        with self._lock:
            if access not in self._placeholders:
                self._placeholders[access] = self.wgpu_device.create_buffer(
                    label=f"gpuops placeholder ({access})", size=16, usage=self.wgpu.BufferUsage.STORAGE)
            return self._placeholders[access]

    @property
    def adapter_name(self) -> str:
        return adapter_label(self.adapter)

    @property
    def backend(self) -> str:
        """'wgpu-native' or 'dawn'."""
        return backend_name(self.wgpu)

    def compile(self, desc: object, feature_level: FeatureLevel | str | int | None = None) -> CompiledOperator:
        """Validate `desc` at the feature level (the device's by default) and prepare its dispatch (cached)."""
        try:
            level = self.feature_level if feature_level is None else FeatureLevel.parse(feature_level)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        key = (desc, level)
        with self._lock:
            compiled = self._compiled.get(key)
            if compiled is None:
                validate(desc, level)
                compiled = self._compiled[key] = CompiledOperator(self, desc)
                while len(self._compiled) > COMPILED_CACHE_SIZE:
                    self._compiled.popitem(last=False)
            else:
                self._compiled.move_to_end(key)
            return compiled

    def batch(self) -> Batch:
        """Many executions recorded into one command encoder and submitted once (see Batch)."""
        return Batch(self)

    def submit(self, encoder: wgpu.GPUCommandEncoder, what: str = "gpuops work") -> None:
        with self._lock, self.explained(what, "submitting"):
            self.wgpu_device.queue.submit([encoder.finish()])

    def explained(self, operator: str, step: str) -> _Explained:
        """wgpu reports validation and memory errors as its own exceptions: say what gpuops was doing."""
        return _Explained(self, operator, step)

    def refusal(self, operator: str, step: str, exc: Exception) -> DeviceError:
        """The DeviceError for a wgpu error raised while gpuops was doing `step` for `operator`."""
        text = str(exc).strip()
        first_line = text.splitlines()[0] if text else type(exc).__name__
        return DeviceError(f"{operator}: the WebGPU device refused {step} on {self.adapter_name}: "
                           f"{type(exc).__name__}: {first_line}")

    def pipeline(self, key: KernelKey) -> tuple[wgpu.GPUComputePipeline, wgpu.GPUBindGroupLayout]:
        with self._lock:
            found = self._pipelines.get(key)
            if found is None:
                found = self._pipelines[key] = self._create_pipeline(key)
            return found

    def kernel_key(self, **fields) -> KernelKey:
        """The KernelKey of these fields, with the device's own settings that the kernel's text depends on."""
        key = KernelKey(workgroup_size=self.workgroup_size, **fields)
        if (key.shader, key.input_type) in shaders.PACK_ROUNDING_KERNELS:
            key = dataclasses.replace(key, pack_rounds_to_nearest=self.probe_pack_rounding())
        return key

    def probe_pack_rounding(self) -> bool:
        """pack_rounds_to_nearest, probed on the device the first time it is asked (unless set)."""
        with self._lock:
            if self.pack_rounds_to_nearest is None:
                self.pack_rounds_to_nearest = _probe_pack_rounding(self.wgpu, self.wgpu_device)
            return self.pack_rounds_to_nearest

    def _create_pipeline(self, key: KernelKey):
        device, api = self.wgpu_device, self.wgpu
        module = create_shader_module(api, device, key.shader, shader_source(key), self.runtime_checks)
        entries = [{"binding": 0, "visibility": api.ShaderStage.COMPUTE,
                    "buffer": {"type": api.BufferBindingType.uniform}}]
        for binding, _, access, _ in key.bindings():
            kind = api.BufferBindingType.read_only_storage if access == READ else api.BufferBindingType.storage
            entries.append({"binding": binding, "visibility": api.ShaderStage.COMPUTE, "buffer": {"type": kind}})
        layout = device.create_bind_group_layout(entries=entries)
        pipeline = device.create_compute_pipeline(
            label=key.shader, layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": "main"})
        return pipeline, layout


# float32 values strictly between two float16 normals: halfway (ties, towards an even and an odd neighbour) and
# an eighth of a unit either side of halfway, at several exponents (the values float16 MODULUS_FLOOR converts).
_PACK_PROBE_HALVES = np.array([0x3c00, 0x3c01, 0x0400, 0x0401, 0x7bfe, 0x5a5a, 0x2155, 0x46ab], np.uint16)


def _pack_probe_values() -> np.ndarray:
    base = _PACK_PROBE_HALVES.view(np.float16).astype(np.float32).view(np.uint32)
    # float16's unit is 2^13 of float32's at these normals: halfway is + 0x1000, an eighth either side +- 0x200
    return np.concatenate([base + 0x1000, base + 0x0e00, base + 0x1200]).view(np.float32)


_PACK_PROBE_SHADER = """
@group(0) @binding(0) var<storage, read> values: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&packed)) {
        packed[id.x] = pack2x16float(values[id.x]);
    }
}
"""


def _probe_pack_rounding(api, device) -> bool:
    """Whether the device's pack2x16float rounds float32 values between two float16 normals to the nearer, ties to
    the even one, as NumPy's conversion does. WGSL lets it round either way; float16 MODULUS_FLOOR rounds its
    results on their bits first where it does not (KernelKey.pack_rounds_to_nearest). The values come from a
    buffer, so that no compiler can fold the conversions."""
    values = _pack_probe_values()
    pairs = values.size // 2
    usage = api.BufferUsage
    source = device.create_buffer_with_data(data=values.tobytes(), usage=usage.STORAGE)
    result = device.create_buffer(size=pairs * 4, usage=usage.STORAGE | usage.COPY_SRC)
    module = device.create_shader_module(code=_PACK_PROBE_SHADER)
    pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    bind_group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": source}}, {"binding": 1, "resource": {"buffer": result}}])
    encoder = device.create_command_encoder()
    record_pass(encoder, None, pipeline, bind_group, (-(-pairs // 64), 1, 1))
    device.queue.submit([encoder.finish()])
    got = np.frombuffer(device.queue.read_buffer(result), np.uint32)
    source.destroy()
    result.destroy()
    return bool(np.array_equal(got.view(np.uint16), values.astype(np.float16).view(np.uint16)))


@dataclass(frozen=True)
class _Dispatch:
    pipeline: wgpu.GPUComputePipeline
    bind_group: wgpu.GPUBindGroup
    grid: tuple[int, int, int]
    uniforms: wgpu.GPUBuffer  # kept alive with the bind group


class BindingTable:
    """DML's binding table: one compiled operator's bindings, validated and made into dispatches once, then
    recorded any number of times (`batch.record(compiled, table)`, `compiled.record(encoder, table)`,
    `compiled.execute(table)`) without looking anything up. Made by `CompiledOperator.bind`. It keeps its bind
    groups (and so its buffers) alive for as long as it lives, outside the device's bounded plan cache."""

    __slots__ = ("compiled", "bindings", "_dispatches")

    def __init__(self, compiled: CompiledOperator, bindings: Mapping[str, Binding],
                 dispatches: tuple[_Dispatch, ...]):
        self.compiled = compiled
        self.bindings = dict(bindings)  # a copy: the table stands for the bindings it was validated with
        self._dispatches = dispatches


class CompiledOperator:
    """A validated operator description, ready to record against bindings (DirectML's compiled operator)."""

    def __init__(self, device: Device, desc: object):
        self.device = device
        self.desc = desc
        self.spec: OperatorSpec = spec_of(desc)
        self.tensor_fields: tuple[str, ...] = self.spec.tensor_fields
        self.tensors: tuple[TensorDesc, ...] = tuple(getattr(desc, name) for name in self.tensor_fields)
        first = self.tensors[0]
        self.iteration: Iteration = coalesce(first.sizes, [t.element_strides for t in self.tensors])

    def bind(self, bindings: Mapping[str, Binding]) -> BindingTable:
        """Validate `bindings` and prepare their dispatches now, for recording many times (DML's
        IDMLBindingTable); a refused binding raises here."""
        return BindingTable(self, bindings, self._plan(bindings))

    def execute(self, bindings: Mapping[str, Binding] | BindingTable) -> None:
        """Run once on the device's queue."""
        with self.device._lock:
            encoder = self.device.wgpu_device.create_command_encoder()
            self.record(encoder, bindings)
            self.device.submit(encoder, self.spec.name)

    def record(self, encoder: wgpu.GPUCommandEncoder, bindings: Mapping[str, Binding] | BindingTable,
               timestamp_writes: dict | None = None) -> None:
        """Record the work into a caller's command encoder (one compute pass); the caller submits it.

        Everything is validated first: a refused binding records nothing. `timestamp_writes` is passed to the
        compute pass as is (GPU timing)."""
        dispatches = self._plan(bindings)
        with self.device._lock, self.device.explained(self.spec.name, "recording"):
            compute_pass = encoder.begin_compute_pass(**({"timestamp_writes": timestamp_writes}
                                                         if timestamp_writes else {}))
            _dispatch_all(compute_pass, dispatches)
            compute_pass.end()

    def _plan(self, bindings: Mapping[str, Binding] | BindingTable) -> tuple[_Dispatch, ...]:
        """The dispatches for these bindings: built once, then reused from the device's bounded cache, so
        repeated execution allocates nothing."""
        with self.device._lock:
            return self._plan_locked(bindings)

    def _plan_locked(self, bindings: Mapping[str, Binding] | BindingTable) -> tuple[_Dispatch, ...]:
        """_plan for a caller that holds the device's lock (a batch records under it: one acquisition per
        operation)."""
        if type(bindings) is BindingTable:
            if bindings.compiled is not self:
                raise ValidationError(f"{self.spec.name}: this binding table was made by another compiled operator "
                                      f"({bindings.compiled.spec.name}); make one with this operator's bind()")
            return bindings._dispatches
        key = self._plan_key(bindings)
        plans = self.device._plans
        if key is not None:
            try:
                plan = plans.get(key)
            except TypeError:  # an unhashable field in a Binding: validation says what is wrong
                key = plan = None
            if plan is not None:
                plans.move_to_end(key)
                return plan
        validate_bindings(self.spec, self.desc, bindings, self.device)
        with self.device.explained(self.spec.name, "preparing the dispatch"):
            plan = self._make_plan(bindings)
        if key is not None:
            plans[key] = plan
            while len(plans) > PLAN_CACHE_SIZE:
                plans.popitem(last=False)
        return plan

    def _plan_key(self, bindings: Mapping[str, Binding]) -> tuple | None:
        """The plan cache's key: this operator and each tensor's buffer, offset and size in the description's
        order (what makes two Bindings equal, without a Python-level hash per Binding: a batch of small operations
        looks one up per operation). None where `bindings` is not exactly one Binding per tensor name:
        validation then says what is wrong."""
        fields = self.tensor_fields
        try:
            if len(bindings) != len(fields):
                return None
            key = [self]
            for name in fields:
                binding = bindings[name]
                if type(binding) is not Binding:
                    return None
                key += (binding.buffer, binding.offset, binding.size)
        except (KeyError, TypeError):
            return None
        return tuple(key)

    def _make_plan(self, bindings: Mapping[str, Binding]) -> tuple[_Dispatch, ...]:
        spec, device = self.spec, self.device
        ordered = [bindings[name] for name in spec.tensor_fields]
        inputs, output = ordered[:-1], ordered[-1]
        # Operand slots in the shader are a, b, out; a unary operator leaves slot b empty.
        slots = list(range(len(inputs))) + [2]
        element_sizes = [t.data_type.size for t in self.tensors]
        # Room for the windows' alignment slack: every bound window stays within the adapter's limit.
        limit = device.binding_size_limit - device.storage_offset_alignment - 16
        shares_output = [b.buffer is output.buffer for b in inputs]
        if any(shares_output):
            limit //= 2  # an input read through the output's binding widens that window
        dispatches = []
        for box in split_boxes(self.iteration, element_sizes, limit):
            starts = [b.offset + start * es for b, start, es in zip(ordered, box.starts, element_sizes)]
            spans = [span_in_bytes(box.sizes, st, es) for st, es in zip(box.strides, element_sizes)]
            windows = [window_for(start, span, es, device.storage_offset_alignment, b.buffer.size)
                       for b, start, span, es in zip(ordered, starts, spans, element_sizes)]
            placement = [SEPARATE] * len(inputs)
            if any(shares_output):
                # One writable binding per buffer: inputs in the output's buffer are read through the output's
                # binding, widened to cover them (in place, the regions are the same).
                covered = [i for i, shared in enumerate(shares_output) if shared] + [len(inputs)]
                first = min(starts[i] for i in covered)
                end = max(starts[i] + spans[i] for i in covered)
                union = window_for(first, end - first, 1, device.storage_offset_alignment, output.buffer.size)
                if union.size + 16 <= device.binding_size_limit:  # + rounding to whole chunks below
                    for i in covered:
                        windows[i] = Window(union.offset, union.size, (starts[i] - union.offset) // element_sizes[i])
                        if i < len(inputs):
                            placement[i] = VIA_OUTPUT
                else:
                    placement = [SHARED if shared else SEPARATE for shared in shares_output]
            # The output moves as 16-byte chunks when its window can be whole chunks inside the buffer.
            out = windows[-1]
            whole = -(-out.size // 16) * 16
            output_chunks = out.offset + whole <= output.buffer.size
            if output_chunks:
                windows[-1] = Window(out.offset, whole, out.base_element)
                for i, place in enumerate(placement):
                    if place == VIA_OUTPUT:
                        windows[i] = Window(out.offset, whole, windows[i].base_element)
            it = Iteration(box.sizes, box.strides)
            linear = [True, True, True]
            for operand, (slot, window, es) in enumerate(zip(slots, windows, element_sizes)):
                # A linear operand moves in whole chunks or words, so it must start on a 16-byte boundary.
                linear[slot] = it.is_linear(operand) and (window.base_element * es) % 16 == 0
            key = device.kernel_key(
                shader=spec.shader, input_type=self.tensors[0].data_type, output_type=self.tensors[-1].data_type,
                rank=it.rank, linear=tuple(linear), input_placement=tuple(placement),
                output_chunks=output_chunks,
                constants=tuple(sorted(spec.shader_constants(self.desc).items())))
            if not key.reads_linear_words:
                # A linear input whose window can be whole chunks inside its buffer needs no word view (its units
                # read chunks; a partial last unit reads its words through the chunk view): a dispatch then binds
                # one view fewer, and WebGPU implementations validate and track every bound view per dispatch (host
                # time of a batch of small operations).
                for i, (place, slot) in enumerate(zip(placement, slots)):
                    whole = -(-windows[i].size // 16) * 16
                    if place == SEPARATE and linear[slot] and windows[i].offset + whole <= ordered[i].buffer.size:
                        windows[i] = Window(windows[i].offset, whole, windows[i].base_element)
                        placement[i] = CHUNKS
                key = dataclasses.replace(key, input_placement=tuple(placement))
            separate = all(place in (SEPARATE, CHUNKS) for place in placement)  # no input is read via the output
            # Inputs read through the output's binding keep the atomics: their words may be written around them.
            owned = key.atomic_output and separate and units_own_their_words(
                it, len(inputs), windows[-1].base_element, element_sizes[-1], key.unit)
            # Owned 16-byte chunks are read and written whole: a quarter of the memory instructions of words.
            chunks_owned = owned and output_chunks and units_own_their_words(
                it, len(inputs), windows[-1].base_element, element_sizes[-1], key.unit, word_bytes=16)
            key = dataclasses.replace(key, output_words_owned=owned, output_chunks_owned=chunks_owned)
            if separate:
                key = _stepped_output(key, it, len(inputs), windows[-1].base_element, element_sizes[-1])
            key, grid = _work_shape(key, it, device, _row_group(key, it, len(inputs)) if separate else {})
            key = _chunk_rows(key, it, slots, windows)
            dispatches.append(self._dispatch(key, it, slots, ordered, windows, grid))
        return tuple(dispatches)

    def _dispatch(self, key: KernelKey, it: Iteration, slots: list[int], ordered: list[Binding],
                  windows: list[Window], grid: tuple[int, int, int]) -> _Dispatch:
        device = self.device
        pipeline, layout = device.pipeline(key)
        element_count = math.prod(it.sizes)
        uniforms = _uniform_bytes(it, slots, [w.base_element for w in windows], element_count, key.unit)
        wgpu_device = device.wgpu_device
        uniform_buffer = wgpu_device.create_buffer_with_data(data=uniforms, usage=device.wgpu.BufferUsage.UNIFORM)
        entries = [{"binding": 0, "resource": {"buffer": uniform_buffer, "offset": 0, "size": uniform_buffer.size}}]
        for binding_index, name, access, operand in key.bindings():
            buffer, offset, size = ordered[operand].buffer, windows[operand].offset, windows[operand].size
            if name.endswith("_chunks"):
                size -= size % 16
                if size == 0:  # under 16 bytes: no whole chunk to move, but the view must be bound
                    buffer, offset, size = device.placeholder(access), 0, 16
            entries.append({"binding": binding_index, "resource": {"buffer": buffer, "offset": offset, "size": size}})
        bind_group = wgpu_device.create_bind_group(layout=layout, entries=entries)
        return _Dispatch(pipeline, bind_group, grid, uniform_buffer)


class _Explained:
    """Device.explained's context manager: a wgpu error inside becomes Device.refusal's DeviceError."""

    __slots__ = ("device", "operator", "step")

    def __init__(self, device: Device, operator: str, step: str):
        self.device, self.operator, self.step = device, operator, step

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> None:
        if isinstance(exc, self.device.wgpu.GPUError):
            raise self.device.refusal(self.operator, self.step, exc) from exc


class Batch:
    """Executions recorded in order into one compute pass of one command encoder and submitted together, like a
    DirectML command list. WebGPU makes each dispatch see the storage writes of the dispatches before it, so an
    operation reading another's output sees it. Use as a context manager (submits on success, discards on an
    exception) or call submit().
    """

    def __init__(self, device: Device):
        self.device = device
        with device._lock:
            self.encoder = device.wgpu_device.create_command_encoder(label="gpuops batch")
            self._pass = self.encoder.begin_compute_pass()
        self._pipeline = None  # the pass's current pipeline
        self.count = 0
        self._done = False

    def record(self, compiled: CompiledOperator, bindings: Mapping[str, Binding] | BindingTable) -> None:
        """Record one operation. `bindings` made into a BindingTable beforehand (`compiled.bind`) skips the plan
        lookup: the cheapest way to record the same operations again and again."""
        if self._done:
            raise GpuOpsError("this batch was already submitted; start a new one with device.batch()")
        if compiled.device is not self.device:
            raise ValidationError(f"{compiled.spec.name}: compiled on another gpuops.Device than this batch's")
        device = self.device
        # No context manager here (a try instead): a batch of many small operations spends most of its host time in
        # this method.
        with device._lock:
            dispatches = compiled._plan_locked(bindings)  # validated before anything is recorded
            try:
                self._pipeline = _dispatch_all(self._pass, dispatches, self._pipeline)
            except device.wgpu.GPUError as exc:
                raise device.refusal(compiled.spec.name, "recording", exc) from exc
        self.count += 1

    def submit(self) -> None:
        if self._done:
            raise GpuOpsError("this batch was already submitted; start a new one with device.batch()")
        self._done = True
        with self.device._lock:
            self._pass.end()
        self.device.submit(self.encoder, f"a batch of {self.count} operations")

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and not self._done:
            self.submit()
        self._done = True


def record_pass(encoder: wgpu.GPUCommandEncoder, timestamp_writes: dict | None, pipeline, bind_group,
                grid: tuple[int, int, int]) -> None:
    """One compute pass of one dispatch, stamped with `timestamp_writes` where given (bench.timing.GpuTimer.writes):
    for single kernels outside the operators (the device's probe, the benchmarks' copy and roof kernels)."""
    compute_pass = encoder.begin_compute_pass(**({"timestamp_writes": timestamp_writes} if timestamp_writes else {}))
    compute_pass.set_pipeline(pipeline)
    compute_pass.set_bind_group(0, bind_group)
    compute_pass.dispatch_workgroups(*grid)
    compute_pass.end()


def _dispatch_all(compute_pass, dispatches: tuple[_Dispatch, ...], pipeline=None):
    """Records the dispatches; returns the pass's pipeline after them. A pass keeps its pipeline between
    dispatches, so `pipeline` (the one already set) is not set again: a batch of one operation's small
    dispatches then costs two calls into wgpu per dispatch instead of three."""
    for dispatch in dispatches:
        if dispatch.pipeline is not pipeline:
            pipeline = dispatch.pipeline
            compute_pass.set_pipeline(pipeline)
        compute_pass.set_bind_group(0, dispatch.bind_group)
        compute_pass.dispatch_workgroups(*dispatch.grid)
    return pipeline


def _grid(groups: int, per_dimension: int) -> tuple[int, int, int]:
    """A grid of at least `groups` workgroups, 2-D where one dimension cannot hold them, with fewer than one row of
    surplus (the kernel skips it). (A full first row (65535, 2) for 65536 groups launched twice the work's
    workgroups and cost an H200 a fifth of its float32 bandwidth.)"""
    rows = -(-groups // per_dimension)
    return (-(-groups // rows), rows, 1)


def _work_shape(key: KernelKey, it: Iteration, device: Device, row_group: dict[str, object]
                ) -> tuple[KernelKey, tuple[int, int, int]]:
    """The kernel's units per invocation and grid: ROWS where the layout suits it (in groups of rows where
    _row_group found some, given as the key's fields), else the flat grid."""
    def tuned(candidate: KernelKey) -> KernelKey:
        return dataclasses.replace(candidate, units_per_invocation=device.units_per_invocation
                                   or shaders.tuned_units_per_invocation(candidate))

    per_dimension = device.max_workgroups_per_dimension
    if not all(key.linear):
        for fields in (row_group, {}) if row_group else ({},):
            candidate = tuned(dataclasses.replace(key, rows=True, **fields))
            grid = _rows_grid(candidate, it, per_dimension)
            if grid is not None:
                return candidate, grid
    key = tuned(key)
    units = -(-math.prod(it.sizes) // key.unit)
    return key, _grid(-(-units // (key.workgroup_size * key.units_per_invocation)), per_dimension)


def _rows_grid(key: KernelKey, it: Iteration, per_dimension: int) -> tuple[int, int, int] | None:
    """The grid of a ROWS kernel (wgsl/common.wgsl): x = blocks of one row of the innermost dimension, y and z =
    rows, with fewer than one y-row of surplus. None where the layout does not suit one: a single dimension, rows
    that do not hold whole units (a unit would span two rows), or rows of fewer units than a workgroup has
    invocations (most of each workgroup would idle)."""
    row_size = it.sizes[-1]
    if it.rank < 2 or row_size % key.unit or row_size // key.unit < key.workgroup_size:
        return None
    blocks = -(-(row_size // key.unit) // (key.workgroup_size * key.units_per_invocation))
    rows = -(-math.prod(it.sizes[:-1]) // key.row_group)  # (groups of rows, where an invocation takes several)
    if blocks > per_dimension or rows > per_dimension**2:
        return None
    layers = -(-rows // per_dimension)
    return (blocks, -(-rows // layers), layers)


def _stepped_output(key: KernelKey, it: Iteration, operand: int, base_element: int, element_size: int) -> KernelKey:
    """The key with OUT_STEP 2 (wgsl/narrow.wgsl's stepped outputs) where an 8/16-bit output bound as chunks has an
    innermost stride of 2 and every unit's span (its elements and those between them) is aligned: one chunk for
    units of half a chunk's elements, two words for float32 -> uint8's one-word units. Else the key unchanged. No
    input may be read through the output's binding (the caller checks).

    A span is aligned where the first element is, every row's start is (outer strides), and no unit crosses a row.
    Every element then lies at an even position, and as the output's elements do not overlap, no other unit's
    element lies in a unit's span: each unit owns its span's words."""
    if (key.wide or key.output_type.size > 2 or key.linear[2] or not key.output_chunks
            or it.strides[operand][-1] != 2):
        return key
    stepped = dataclasses.replace(key, out_step=2)
    span_chunk = stepped.unit * element_size * 2 == 16
    if not units_aligned(it, operand, base_element, stepped.unit, (16 if span_chunk else 4) // element_size):
        return key
    return dataclasses.replace(stepped, output_words_owned=True, output_chunks_owned=span_chunk)


def _chunk_rows(key: KernelKey, it: Iteration, slots: list[int], windows: list[Window]) -> KernelKey:
    """The key with chunk_rows set for the operands that are not linear but whose every unit lies whole and aligned
    in its chunks: innermost stride 1, the first element and every row's start (outer strides) aligned to the unit,
    and rows of whole units, so that no unit crosses a row. The kernel then moves them by chunks with no gather or
    scatter path (wgsl/common.wgsl: units_whole)."""
    rows = [False, False, False]
    for operand, slot in enumerate(slots):
        rows[slot] = (not key.linear[slot] and it.rank > 1 and it.strides[operand][-1] == 1
                      and units_aligned(it, operand, windows[operand].base_element, key.unit, key.unit))
    return dataclasses.replace(key, chunk_rows=tuple(rows))


def _row_group(key: KernelKey, it: Iteration, input_count: int) -> dict[str, object]:
    """The KernelKey fields of a ROWS kernel that takes groups of rows, or {}. Where every input is the same on
    every row of the innermost dimension (zero strides outside it), the rows' results are equal: each unit is
    computed once for several rows (replicated). Where the divisor b alone is, and its type gains by it
    (KernelKey.takes_divisor_rows), each invocation divides a unit's column in several rows at once
    (DIVISOR_ROWS). The caller asks only where no input is read through the output's binding."""
    if it.rank < 2:
        return {}
    same = [not any(it.strides[i][:-1]) for i in range(input_count)]
    if all(same):
        return {"row_group": shaders.REPLICATED_ROW_GROUP}
    if same == [False, True] and key.takes_divisor_rows:
        return {"row_group": shaders.divisor_row_group(key.input_type), "divisor_rows": True}
    return {}


def _uniform_bytes(it: Iteration, slots: list[int], bases: list[int], element_count: int, unit: int) -> bytes:
    """The Params struct of wgsl/common.wgsl."""
    sizes = np.ones(8, np.uint32)
    sizes[: it.rank] = it.sizes
    strides = np.zeros((3, 8), np.uint32)
    base = np.zeros(4, np.uint32)
    for operand, slot in enumerate(slots):
        strides[slot, : it.rank] = it.strides[operand]
        base[slot] = bases[operand]
    tail = np.array([element_count, -(-element_count // unit), element_count // it.sizes[-1], 0], np.uint32)
    return b"".join(a.tobytes() for a in (sizes, strides, base, tail))
