"""Devices, compiled operators, dispatch, and the waits for the GPU."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import wgpu

from .adapter_choice import adapter_label, check_wgpu_device, pick_adapter, wanted_adapter
from .backends import (backend_name, backend_of, create_shader_module, load_backend, request_device,
                       resolve_runtime_checks)
from .binding import Binding, BufferWatch, buffer_problem, buffer_watch, described, watch_buffer, watch_device
from .enums import FeatureLevel
from .errors import DeviceError, GpuOpsError, Refusal, ValidationError, cause_of, shown
from .kernel import KernelKey, LoopRequest, Operation, operands_of
from .operators import DeviceFacts, OperatorSpec, spec_of
from . import shaders
from .hostcopy import HostCopier
from .pool import FLAG_BYTES, BufferPool, read_back
from .plan import BoundRegion, DispatchPlan, DispatchPolicy, PlanLimits, plan_dispatches
from .shaders import READ, shader_source, wgsl_file
from .tensor import TensorDesc
from .validation import validate, validate_bindings
from .wgpu_internals import Pending, host_access

PLAN_CACHE_SIZE = 8192  # dispatch plans (bind groups and their uniform buffers) remembered per device
COMPILED_CACHE_SIZE = 1024  # compiled operators remembered per device
# Compute pipelines (compiled kernels) remembered per device, the least recently used dropped first: each holds
# the driver's compiled code (megabytes on a software adapter), and the NumPy-level functions meet a new kernel
# with every new combination of shape class, types and operator.
PIPELINE_CACHE_SIZE = 256
# Seconds a wait for the device lasts at most before DeviceError (a lost device ends it at once).
WAIT_TIMEOUT = 120.0
# wgpu's words for a call on a lost device: wgpu-native's "Parent device is lost", Dawn's "[Device "x"] is lost."
_SAYS_LOST = "is lost"
_WAIT_STEP = 0.05  # the longest pause, in seconds, between looks at a wait's progress and the device's loss

# wgpu-native: a wait polls without pausing for its first _SPIN_SECONDS (a small call's work ends within them, and
# the operating system's shortest sleep would end the wait tens of microseconds late), then pauses for at most
# _LATE_SHARE of the time waited so far (at least _SHORTEST_PAUSE): a long wait ends at most about that share late,
# with a few hundred polls a second of a few microseconds each. The spin is short because a thread that takes the
# GIL back right after each poll keeps other Python threads from it (CPython hands the GIL over only when its holder
# lets it go long enough), and during a pause the GIL is free.
_SPIN_SECONDS = 2.5e-4
_LATE_SHARE = 0.02
_SHORTEST_PAUSE = 5e-5

# Looks into Dawn without a pause at the start of a wait (a small read-back ends within microseconds), and then
# the longest pause as a share of the time waited so far: a wait ends at most about that share late.
_DAWN_EAGER_LOOKS = 32
_DAWN_LATE_SHARE = 0.05
_DAWN_SHORTEST_PAUSE = 1e-5
# Where Dawn waits for a future itself: the longest it blocks under the device's lock, and the pause between.
_DAWN_LOCKED_WAIT = 1e-3
_DAWN_UNLOCKED_PAUSE = 1e-5


def native_wait_pause(waited: float) -> float:
    """The pause before a wgpu-native wait's next poll after `waited` seconds: none while spinning, then at most
    _LATE_SHARE of the time waited (see _SPIN_SECONDS)."""
    if waited < _SPIN_SECONDS:
        return 0.0
    return min(max(_LATE_SHARE * waited, _SHORTEST_PAUSE), _WAIT_STEP)


def dawn_wait_pause(looks: int, waited: float) -> float:
    """The pause before a Dawn wait's next call into Dawn, after `looks` calls and `waited` seconds. Dawn runs the
    callback that ends a wait only inside such a call, so a pause's length is how late the wait may end: none at
    first, then at most _DAWN_LATE_SHARE of the time already waited (and never over _WAIT_STEP), so a wait of
    any length ends within about 5% of when the work did while a long one makes a few hundred calls a second."""
    if looks < _DAWN_EAGER_LOOKS:
        return 0.0
    return min(max(_DAWN_LATE_SHARE * waited, _DAWN_SHORTEST_PAUSE), _WAIT_STEP)

# One entry of the buffers a submission uses, checked just before it: (operator, binding name or None, buffer).
Use = tuple[str, "str | None", wgpu.GPUBuffer]


class Device:
    """A WebGPU device that runs gpuops operators at one DirectML feature level."""

    def __init__(self, feature_level: FeatureLevel | str | int = FeatureLevel.LEVEL_6_4,
                 adapter: int | str | None = None, wgpu_device: wgpu.GPUDevice | None = None,
                 backend: str | None = None, runtime_checks: bool | None = None,
                 policy: DispatchPolicy | None = None):
        """`adapter`: the adapter's index in wgpu's enumeration (gpuops.adapters() lists them) or part of its name;
        None takes $GPUOPS_ADAPTER (an index or part of a name), else the best adapter found.
        `runtime_checks`: whether the shaders keep the safety code WebGPU adds for untrusted shaders (see
        backends.py). None (the default, or $GPUOPS_RUNTIME_CHECKS) leaves it out where the backend can;
        `self.runtime_checks` says what this device does. `policy`: the dispatch's tuning knobs (DispatchPolicy;
        the defaults are the measured choices and the adapter's limits)."""
        if policy is not None and not isinstance(policy, DispatchPolicy):
            raise TypeError(f"policy {policy!r} is not a gpuops.DispatchPolicy")
        self.policy = policy or DispatchPolicy()
        try:
            self.feature_level = FeatureLevel.parse(feature_level)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if wgpu_device is not None:
            check_wgpu_device(wgpu_device)
            self.wgpu = backend_of(wgpu_device)  # the wgpu-py module (wgpu or wgpudawn) behind this device
            self.wgpu_device = wgpu_device
            self.adapter = wgpu_device.adapter
        else:
            self.wgpu = load_backend(backend)
        self.runtime_checks = resolve_runtime_checks(self.wgpu, runtime_checks, wgpu_device)
        if wgpu_device is None:
            # GPUOPS_ADAPTER picks the adapter (an index or part of a name) when the caller does not.
            self.adapter = pick_adapter(self.wgpu, *wanted_adapter(adapter))
            limits = self.adapter.limits
            wanted = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroups-per-dimension")
            features = [f for f in ("timestamp-query",) if f in self.adapter.features]
            self.wgpu_device = request_device(
                self.wgpu, self.adapter, self.runtime_checks, label="gpuops", required_features=features,
                required_limits={k: limits[k] for k in wanted})
        # What gpuops knows of the wgpu device (lost or not), shared by every gpuops.Device on it.
        self._watch = watch_device(self.wgpu_device)
        self.wait_timeout = WAIT_TIMEOUT
        self._synchronize_source: wgpu.GPUBuffer | None = None  # what synchronize() reads back, made once
        self.host_access = host_access(self.wgpu, self.wgpu_device)  # how gpuops maps its buffers and waits here
        self.limits = self.wgpu_device.limits
        self.storage_offset_alignment = self.limits["min-storage-buffer-offset-alignment"]
        self.max_buffer_size = self.policy.max_buffer_size or self.limits["max-buffer-size"]
        # Whether pack2x16float rounds inexact values to nearest, ties to even, as NumPy does: the policy's answer, or
        # probed the first time a kernel depends on it (see _probe_pack_rounding).
        self._pack_rounds_to_nearest = self.policy.pack_rounds_to_nearest
        # Every wgpu call made for this Device happens under this lock, the wgpu device's (every gpuops.Device on
        # it shares it): Dawn crashes when one device is used from several threads at once. gpuops never waits for
        # the GPU while holding it; code of gpuops' other modules that calls into the device's objects holds it too.
        self.lock = self._watch.lock
        if self._watch.lost is not None:
            raise DeviceError(f"Device.wgpu_device: the WebGPU device on {self.adapter_name} is lost "
                              f"({self._watch.lost}); request a new device")
        self._pipelines: OrderedDict[KernelKey, tuple[wgpu.GPUComputePipeline, wgpu.GPUBindGroupLayout]] = \
            OrderedDict()
        self._placeholders: dict[str, wgpu.GPUBuffer] = {}
        self._plan_cache = _PlanCache()
        self._plans = self._plan_cache.plans  # (prepared operator, each buffer's watch key, offset, size) -> dispatches
        # The prepared operators (LRU), and the CompiledOperators handed out and still held somewhere (weakly: each
        # holds this Device, which must not hold it back, see PreparedOperator).
        self._prepared: OrderedDict[tuple[object, FeatureLevel], PreparedOperator] = OrderedDict()
        self._handed_out: weakref.WeakValueDictionary[tuple[object, FeatureLevel], CompiledOperator] = \
            weakref.WeakValueDictionary()
        self.pool = BufferPool()  # the NumPy-level functions' buffers and binding tables, and read-back staging
        self.host_copies = HostCopier()  # this device's own threads for large host copies (no other device waits)

    def placeholder(self, access: str) -> wgpu.GPUBuffer:
        """A 16-byte buffer bound where a view is declared but has nothing to reach (one per access mode, so
        read-only and writable bindings never share it)."""
        with self.lock:
            if access not in self._placeholders:
                self._placeholders[access] = self.wgpu_device.create_buffer(
                    label=f"gpuops placeholder ({access})", size=16, usage=self.wgpu.BufferUsage.STORAGE)
            return self._placeholders[access]

    @property
    def adapter_name(self) -> str:
        return adapter_label(self.adapter)

    @functools.cached_property
    def backend(self) -> str:
        """'wgpu-native' or 'dawn'."""
        return backend_name(self.wgpu)

    def compile(self, desc: object, feature_level: FeatureLevel | str | int | None = None) -> CompiledOperator:
        """Validate `desc` at the feature level (the device's by default) and prepare its dispatch (cached: the same
        description and level give the same CompiledOperator while one is held)."""
        prepared = self.prepare(desc, feature_level)
        key = (desc, prepared.feature_level)
        with self.lock:
            compiled = self._handed_out.get(key)
            if compiled is None or compiled.prepared is not prepared:
                compiled = self._handed_out[key] = CompiledOperator(self, prepared)
        return compiled

    def prepare(self, desc: object, feature_level: FeatureLevel | str | int | None = None) -> PreparedOperator:
        """compile()'s work without the handle: the PreparedOperator the device keeps for `desc` at the level, for
        callers that hold this Device themselves as long as they use it (the NumPy-level functions)."""
        try:
            level = self.feature_level if feature_level is None else FeatureLevel.parse(feature_level)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        key = (desc, level)
        with self.lock:
            prepared = self._prepared.get(key)
            if prepared is None:
                validate(desc, level)
                prepared = self._prepared[key] = PreparedOperator(self, desc, level)
                while len(self._prepared) > COMPILED_CACHE_SIZE:
                    self._prepared.popitem(last=False)
            else:
                self._prepared.move_to_end(key)
        if prepared.spec.type_policy(prepared.tensors[0].data_type).pack_rounding:
            self.probe_pack_rounding()  # now, outside the lock: planning asks for it under the lock
        return prepared

    def batch(self) -> Batch:
        """Many executions recorded into one command encoder and submitted once (see Batch)."""
        return Batch(self)

    def submit(self, encoder: wgpu.GPUCommandEncoder, what: str = "gpuops work", uses: Iterable[Use] = ()) -> None:
        """Finish `encoder` and submit it. Every buffer in `uses` is checked first (destroyed, mapped, another
        device's: wgpu-native aborts the process on a submission that uses one), and so is the device, under the
        lock that destroying either takes: nothing is submitted when a check fails."""
        watch = self._watch
        with self.lock:
            if watch.lost is not None:
                raise self.lost_error(what, "submitting")
            self.check_uses(uses)
            with self.explained(what, "submitting"):
                self.wgpu_device.queue.submit([encoder.finish()])

    def check_uses(self, uses: Iterable[Use]) -> None:
        """ValidationError naming the operator, the binding and the buffer where a buffer in `uses` cannot be
        used by a submission now."""
        for operator, name, buffer in uses:
            problem = buffer_problem(buffer, self.wgpu_device)
            if problem is not None:
                where = f"bindings[{name!r}]" if name is not None else "the buffer read back"
                raise Refusal(operator, where, f"{described(buffer)} {problem}").error()

    @property
    def lost(self) -> bool:
        """Whether the device is known to be lost: destroyed (`wgpu_device.destroy()`), or found lost by a call
        that failed. Asks nothing of the device (is_lost() does)."""
        return self._watch.lost is not None

    def is_lost(self) -> bool:
        """Whether the device is lost, asking it where gpuops does not know yet: a lost device refuses even a
        4-byte buffer (wgpu-native has no other synchronous question for it)."""
        if self._watch.lost is None:
            with self.lock:
                try:
                    probe = self.wgpu_device.create_buffer(label="gpuops device check", size=4,
                                                           usage=self.wgpu.BufferUsage.COPY_DST)
                except Exception as exc:  # whatever the backend raises, the device cannot be used
                    self._watch.mark_lost(loss_reason(exc))
                else:
                    probe.destroy()
        return self._watch.lost is not None

    def lost_error(self, operator: str, step: str, cause: str | None = None) -> DeviceError:
        """The DeviceError for `step` of `operator` on a lost device."""
        reason = self._watch.lost or cause or "lost"
        detail = f"; wgpu: {cause}" if cause and cause != reason else ""
        return DeviceError(f"{operator}: {step}: the WebGPU device on {self.adapter_name} was lost ({reason}){detail}; "
                           "make a new gpuops.Device (gpuops.default_device() replaces a lost default device)")

    def explained(self, operator: str, step: str) -> _Explained:
        """wgpu reports validation and memory errors as its own exceptions: say what gpuops was doing. A lost
        device raises DeviceError on entry, and on exit where it was lost meanwhile."""
        return _Explained(self, operator, step)

    def refusal(self, operator: str, step: str, exc: Exception) -> DeviceError:
        """The DeviceError for a wgpu error raised while gpuops was doing `step` for `operator`: with wgpu's own
        cause, and saying so where the device is lost."""
        cause = cause_of(exc)
        if isinstance(exc, self.wgpu.GPUError) and _SAYS_LOST in str(exc):
            self._watch.mark_lost(loss_reason(exc))  # wgpu says so (Dawn does, where is_lost's probe may not tell)
        if self.is_lost():
            return self.lost_error(operator, step, cause)
        return DeviceError(f"{operator}: the WebGPU device refused {step} on {self.adapter_name}: {cause}")

    def read_buffer(self, buffer: wgpu.GPUBuffer, offset: int = 0, size: int | None = None, *,
                    what: str = "Device.read_buffer") -> memoryview:
        """The bytes of a region of `buffer` (its usage must include COPY_SRC), once the work submitted before
        has run: the NumPy-level read-back (pool.read_back), into a copy of its own. The wait is bounded, holds no
        lock while the device works, and a lost device ends it with DeviceError. `what` names the
        operation in errors."""
        size = buffer.size - offset if size is None else size
        data = bytearray(size)

        def fill(mapped: memoryview) -> None:
            data[:] = mapped[:size]

        read_back(self, self.pool, None, buffer, offset, size, fill, what, uses=[(what, None, buffer)])
        return memoryview(data)

    def watch(self, buffer) -> None:
        """Watch `buffer`'s destroy (a buffer of this device that gpuops may use again, as a pooled device array's):
        calls refuse it from then on, and the pool does not take it back."""
        watch_buffer(buffer, self._watch)

    def synchronize(self) -> None:
        """Return once the work submitted to this device's queue so far (gpuops' and the caller's own) has run:
        for device arrays, whose calls return before the GPU is done. On wgpu-native it waits for the queue's
        work-done notice; on Dawn a 4-byte copy submitted after that work is read back (WebGPU finishes a queue's
        submissions in order). Bounded by `wait_timeout`; a lost device raises DeviceError."""
        what = "Device.synchronize"
        with self.lock, self.explained(what, "asking for the queue's work-done notice"):
            pending = self.host_access.begin_work_done()
            if pending is None and self._synchronize_source is None:
                self._synchronize_source = self.wgpu_device.create_buffer(
                    label="gpuops synchronize", size=4, usage=self.wgpu.BufferUsage.COPY_SRC)
            source = self._synchronize_source
        if pending is not None:
            self.wait(pending, what, "waiting for the queue")
        else:
            self.read_buffer(source, 0, 4, what=what)

    def wait(self, pending: Pending, operator: str, step: str) -> None:
        """Return once `pending` (a mapping or work-done notice begun through `host_access`) is done: bounded by
        `wait_timeout`, ended by the device's loss with DeviceError, and holding no lock while the device works, so
        that other threads submit and wait meanwhile. On wgpu-native the waiting thread polls the device itself
        (native_wait_pause); Dawn's looks hold the device's lock for one short call into Dawn each."""
        access = self.host_access
        event = pending.event
        if event is None:  # a wgpu-py without the promise's event: wgpu's own wait, unbounded, under the lock
            with self.lock, self.explained(operator, step):
                access.finish(pending)
            return
        start = time.monotonic()
        deadline = start + self.wait_timeout
        looks = 0
        try:
            while True:
                if access.looks_under_lock:  # Dawn (see PromiseAccess)
                    with self.lock, self.explained(operator, step):
                        waited_in_dawn = access.look(pending, _DAWN_LOCKED_WAIT)
                    pause = _DAWN_UNLOCKED_PAUSE if waited_in_dawn else \
                        dawn_wait_pause(looks, time.monotonic() - start)
                elif access.polls:
                    access.look(pending)
                    pause = native_wait_pause(time.monotonic() - start)
                else:  # wgpu-py's poll thread sets the event, which ends a pause at once
                    pause = _WAIT_STEP
                looks += 1
                if event.is_set():
                    break
                if self._watch.lost is not None:
                    raise self.lost_error(operator, step)
                if time.monotonic() > deadline:
                    raise DeviceError(f"{operator}: {step}: the WebGPU device on {self.adapter_name} did not finish "
                                      f"in {self.wait_timeout} seconds (Device.wait_timeout)")
                if pause and event.wait(pause):
                    break
        except BaseException:
            access.abandon(pending)
            raise
        with self.explained(operator, step):
            access.finish(pending)

    def pipeline(self, key: KernelKey) -> tuple[wgpu.GPUComputePipeline, wgpu.GPUBindGroupLayout]:
        """The pipeline and bind group layout of a kernel, from the device's bounded cache. Dispatches keep their
        own references: dropping one from the cache frees it only when nothing else uses it."""
        with self.lock:
            pipelines = self._pipelines
            found = pipelines.get(key)
            if found is None:
                with self.explained(key.label, "compiling the kernel"):
                    found = pipelines[key] = self._create_pipeline(key)
                while len(pipelines) > PIPELINE_CACHE_SIZE:
                    pipelines.popitem(last=False)
            else:
                pipelines.move_to_end(key)
            return found

    def plan_limits(self) -> PlanLimits:
        """The limits the planner works with: the adapter's, unless the policy lowers them."""
        policy = self.policy
        return PlanLimits(
            binding_size=policy.binding_size_limit or self.limits["max-storage-buffer-binding-size"],
            storage_offset_alignment=self.storage_offset_alignment,
            workgroups_per_dimension=(policy.max_workgroups_per_dimension
                                      or self.limits["max-compute-workgroups-per-dimension"]),
            workgroup_size=policy.workgroup_size, units_per_invocation=policy.units_per_invocation)

    def probe_pack_rounding(self) -> bool:
        """Whether pack2x16float rounds as NumPy does: the policy's answer, else probed once on the device."""
        if self._pack_rounds_to_nearest is None:
            found = _probe_pack_rounding(self)  # two threads may both probe: the same answer
            with self.lock:
                if self._pack_rounds_to_nearest is None:
                    self._pack_rounds_to_nearest = found
        return self._pack_rounds_to_nearest

    def _create_pipeline(self, key: KernelKey):
        device, api = self.wgpu_device, self.wgpu
        source = shader_source(key)
        shaders.dump_shader(key, source)
        module = create_shader_module(api, device, key.label, source, self.runtime_checks)
        entries = [{"binding": 0, "visibility": api.ShaderStage.COMPUTE,
                    "buffer": {"type": api.BufferBindingType.uniform}}]
        for binding, _, access, _ in shaders.bindings(key):
            kind = api.BufferBindingType.read_only_storage if access == READ else api.BufferBindingType.storage
            entries.append({"binding": binding, "visibility": api.ShaderStage.COMPUTE, "buffer": {"type": kind}})
        layout = device.create_bind_group_layout(entries=entries)
        pipeline = device.create_compute_pipeline(
            label=key.label, layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": "main"})
        return pipeline, layout


# float32 values strictly between two float16 normals: halfway (ties, towards an even and an odd neighbour) and
# an eighth of a unit either side of halfway, at several exponents (the values float16 MODULUS_FLOOR converts).
_PACK_PROBE_HALVES = np.array([0x3c00, 0x3c01, 0x0400, 0x0401, 0x7bfe, 0x5a5a, 0x2155, 0x46ab], np.uint16)


def _pack_probe_values() -> np.ndarray:
    base = _PACK_PROBE_HALVES.view(np.float16).astype(np.float32).view(np.uint32)
    # float16's unit is 2^13 of float32's at these normals: halfway is + 0x1000, an eighth either side +- 0x200
    return np.concatenate([base + 0x1000, base + 0x0e00, base + 0x1200]).view(np.float32)


def _probe_pack_rounding(gpuops_device: Device) -> bool:
    """Whether the device's pack2x16float rounds float32 values between two float16 normals to the nearer, ties to
    the even one, as NumPy's conversion does. WGSL lets it round either way; float16 MODULUS_FLOOR rounds its
    results on their bits first where it does not (DeviceFacts.pack_rounds_to_nearest). The values come from a
    buffer, so that no compiler can fold the conversions (wgsl/probes/pack_rounding.wgsl)."""
    values = _pack_probe_values()
    pairs = values.size // 2
    usage = gpuops_device.wgpu.BufferUsage
    device = gpuops_device.wgpu_device
    what = "the pack2x16float rounding probe"
    with gpuops_device.lock, gpuops_device.explained(what, "preparing"):
        source = device.create_buffer_with_data(data=values.tobytes(), usage=usage.STORAGE)
        result = device.create_buffer(size=pairs * 4, usage=usage.STORAGE | usage.COPY_SRC)
        module = device.create_shader_module(code=wgsl_file("probes/pack_rounding.wgsl"))
        pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        bind_group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": source}}, {"binding": 1, "resource": {"buffer": result}}])
        encoder = device.create_command_encoder()
        record_pass(encoder, None, pipeline, bind_group, (-(-pairs // 64), 1, 1))
    try:
        gpuops_device.submit(encoder, what)
        got = np.frombuffer(gpuops_device.read_buffer(result, what=what), np.uint32)
    finally:
        with gpuops_device.lock, contextlib.suppress(Exception):  # a lost device's buffers: nothing to free
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

    __slots__ = ("prepared", "bindings", "_dispatches")

    def __init__(self, prepared: PreparedOperator, bindings: Mapping[str, Binding],
                 dispatches: tuple[_Dispatch, ...]):
        self.prepared = prepared  # (not the CompiledOperator: the device's own caches keep tables too)
        self.bindings = dict(bindings)  # a copy: the table stands for the bindings it was validated with
        self._dispatches = dispatches

    def record_unchecked(self, encoder: wgpu.GPUCommandEncoder) -> None:
        """Record the dispatches into `encoder` as one compute pass, without record()'s checks: for callers that
        made the encoder, hold `Device.lock` and have checked the buffers (`Device.check_uses`), as the NumPy-level
        functions do."""
        compute_pass = encoder.begin_compute_pass()
        _dispatch_all(compute_pass, self._dispatches)
        compute_pass.end()


class CompiledOperator:
    """A validated operator description, ready to record against bindings (DirectML's compiled operator): its
    Device's PreparedOperator for the description, and the Device itself, which it keeps alive."""

    __slots__ = ("device", "prepared", "desc", "spec", "tensor_fields", "tensors", "__weakref__")

    def __init__(self, device: Device, prepared: PreparedOperator):
        self.device = device
        self.prepared = prepared
        self.desc, self.spec = prepared.desc, prepared.spec
        self.tensor_fields, self.tensors = prepared.tensor_fields, prepared.tensors

    @property
    def operation(self) -> Operation:
        return self.prepared.operation

    @property
    def loop_request(self) -> LoopRequest:
        return self.prepared.loop_request

    def bind(self, bindings: Mapping[str, Binding], *, element_offsets: bool = False) -> BindingTable:
        """Validate `bindings` and prepare their dispatches now, for recording many times (DML's
        IDMLBindingTable); a refused binding raises here. `element_offsets` is gpuops' extension beyond DirectML's
        rule (offsets that are multiples of 16), for views of device arrays: each offset need only be a whole
        number of its tensor's elements (see validation.validate_bindings)."""
        return self.prepared.bind(bindings, element_offsets=element_offsets)

    def bind_with_error_flags(self, bindings: Mapping[str, Binding], flags: Binding, *,
                              element_offsets: bool = False) -> BindingTable:
        """bind(), with kernels that also OR NumPy's floating-point error flag into the u32 word at `flags` (4 bytes
        at a multiple of the adapter's storage offset alignment; kernel.Operation.error_flags), for an operator whose
        row has error_flags. For the NumPy-level functions, which clear the word and read it back with the result:
        not part of DirectML's API."""
        return self.prepared.bind_with_error_flags(bindings, flags, element_offsets=element_offsets)

    def execute(self, bindings: Mapping[str, Binding] | BindingTable) -> None:
        """Run once on the device's queue."""
        self.prepared.execute(bindings)

    def record(self, encoder: wgpu.GPUCommandEncoder, bindings: Mapping[str, Binding] | BindingTable,
               timestamp_writes: dict | None = None) -> None:
        """Record the work into a caller's command encoder (one compute pass); the caller submits it.

        Everything is validated first: a refused binding records nothing, and so does a buffer destroyed or
        mapped now (keep it alive and unmapped until the caller's submit). `timestamp_writes` is passed to the
        compute pass as is (GPU timing)."""
        self.prepared.record(encoder, bindings, timestamp_writes)

    def dispatch_plans(self, bindings: Mapping[str, Binding], *, error_flags: bool = False
                       ) -> tuple[DispatchPlan, ...]:
        """The kernels that would run for these bindings (validated first): keys, grids, windows, uniforms; with
        `error_flags`, those of bind_with_error_flags. Pure planning: nothing is created on the device (but the
        pack2x16float probe, once, where a kernel needs it)."""
        return self.prepared.dispatch_plans(bindings, error_flags=error_flags)

    def kernels(self, bindings: Mapping[str, Binding], *, error_flags: bool = False) -> tuple[shaders.Kernel, ...]:
        """The exact kernels these bindings would run, in order (with `error_flags`, bind_with_error_flags'): each
        one's key, grid and full WGSL text (whose head names every key field). Nothing is compiled or dispatched."""
        return self.prepared.kernels(bindings, error_flags=error_flags)


class PreparedOperator:
    """What a CompiledOperator runs, and what its Device keeps of it: the validated description at a feature
    level, its operation, and the dispatch plans of its bindings. It refers to its Device weakly: the Device's
    caches keep PreparedOperators (and binding tables and plans made from them), and a strong reference back
    would make each used Device a reference cycle, released only by Python's cycle collector, at some later
    allocation on whatever thread makes it (holding GPU memory until then, and on OpenGL taking the adapter's one
    context from under other threads). Whoever calls one holds the Device: a CompiledOperator, or a NumPy-level
    call."""

    def __init__(self, device: Device, desc: object, feature_level: FeatureLevel):
        self._device = weakref.ref(device)
        self.desc = desc
        self.feature_level = feature_level
        self.spec: OperatorSpec = spec_of(desc)
        self.tensor_fields: tuple[str, ...] = self.spec.tensor_fields
        self.tensors: tuple[TensorDesc, ...] = tuple(getattr(desc, name) for name in self.tensor_fields)
        self.refused_as = f"DML_OPERATOR_{self.spec.name}"  # how binding refusals name the operator

    @property
    def device(self) -> Device:
        device = self._device()
        if device is None:  # (every caller holds the Device: see the class's docstring)
            raise GpuOpsError(f"{self.spec.name}: its gpuops.Device was released; compile it on a live Device")
        return device

    def bind(self, bindings: Mapping[str, Binding], *, element_offsets: bool = False) -> BindingTable:
        """CompiledOperator.bind's work."""
        with self.device.lock:
            return BindingTable(self, bindings, self._plan_locked(bindings, cache=False,
                                                                  element_offsets=element_offsets))

    def bind_with_error_flags(self, bindings: Mapping[str, Binding], flags: Binding, *,
                              element_offsets: bool = False) -> BindingTable:
        """CompiledOperator.bind_with_error_flags's work."""
        with self.device.lock:
            return BindingTable(self, bindings, self._plan_locked(bindings, cache=False,
                                                                  element_offsets=element_offsets, flags=flags))

    def execute(self, bindings: Mapping[str, Binding] | BindingTable) -> None:
        """CompiledOperator.execute's work."""
        self._execute(bindings, cache=True)

    def _execute(self, bindings: Mapping[str, Binding] | BindingTable, cache: bool) -> None:
        device = self.device
        with device.lock:
            if device._watch.lost is not None:
                raise device.lost_error(self.spec.name, "executing")
            dispatches = self._plan_locked(bindings, cache)
            with device.explained(self.spec.name, "recording"):
                encoder = device.wgpu_device.create_command_encoder()
                compute_pass = encoder.begin_compute_pass()
                _dispatch_all(compute_pass, dispatches)
                compute_pass.end()
            device.submit(encoder, self.spec.name, self._uses(bindings))

    def record(self, encoder: wgpu.GPUCommandEncoder, bindings: Mapping[str, Binding] | BindingTable,
               timestamp_writes: dict | None = None) -> None:
        """CompiledOperator.record's work."""
        device = self.device
        if not isinstance(encoder, device.wgpu.GPUCommandEncoder):
            raise ValidationError(f"{self.spec.name}: record: encoder {shown(encoder)} ({type(encoder).__name__}) "
                                  f"is not a GPUCommandEncoder of {device.wgpu.__name__}; make one with "
                                  "device.wgpu_device.create_command_encoder()")
        if getattr(encoder, "_device", device.wgpu_device) is not device.wgpu_device:
            raise ValidationError(f"{self.spec.name}: record: encoder {shown(encoder)} belongs to another wgpu "
                                  "device than this operator's gpuops.Device")
        with device.lock:
            if device._watch.lost is not None:
                raise device.lost_error(self.spec.name, "recording")
            dispatches = self._plan_locked(bindings)
            device.check_uses(self._uses(bindings))
            with device.explained(self.spec.name, "recording"):
                compute_pass = encoder.begin_compute_pass(**({"timestamp_writes": timestamp_writes}
                                                             if timestamp_writes else {}))
                _dispatch_all(compute_pass, dispatches)
                compute_pass.end()

    def _uses(self, bindings: Mapping[str, Binding] | BindingTable) -> list[Use]:
        """The buffers an execution with these (validated) bindings uses, for the checks before its submit."""
        if type(bindings) is BindingTable:
            bindings = bindings.bindings
        operator = self.refused_as
        return [(operator, name, bindings[name].buffer) for name in self.tensor_fields]

    def _plan(self, bindings: Mapping[str, Binding] | BindingTable) -> tuple[_Dispatch, ...]:
        """The dispatches for these bindings: built once, then reused from the device's bounded cache, so
        repeated execution allocates nothing."""
        with self.device.lock:
            return self._plan_locked(bindings)

    def _plan_locked(self, bindings: Mapping[str, Binding] | BindingTable, cache: bool = True,
                     element_offsets: bool = False, flags: Binding | None = None) -> tuple[_Dispatch, ...]:
        """_plan for a caller that holds the device's lock (a batch records under it: one acquisition per
        operation). `cache` False makes the dispatches without looking them up or keeping them; `element_offsets`
        as bind's, never cached (the plan cache's keys stand for bindings that DirectML's rules accepted); `flags`:
        the error flags' word (bind_with_error_flags), never with the cache."""
        if type(bindings) is BindingTable:
            if bindings.prepared is not self:
                raise ValidationError(f"{self.spec.name}: this binding table was made by another compiled operator "
                                      f"({bindings.prepared.spec.name}); make one with this operator's bind()")
            return bindings._dispatches
        plans = self.device._plan_cache
        cache = cache and not element_offsets
        if cache:
            key = self._plan_key(bindings)
            if key is not None:
                plan = plans.get(key)
                if plan is not None:
                    return plan
        validate_bindings(self.spec, self.desc, bindings, self.device, element_offsets)
        # Watched before any bind group refers to them: a destroy from now on is seen before the next submit.
        watches = [watch_buffer(bindings[name].buffer, self.device._watch) for name in self.tensor_fields]
        with self.device.explained(self.spec.name, "preparing the dispatch"):
            plan = self._make_plan(bindings, flags)
        if cache and None not in watches:
            key = self._plan_key(bindings)
            if key is not None:
                plans.put(key, plan, watches)
        return plan

    def _plan_key(self, bindings: Mapping[str, Binding]) -> tuple | None:
        """The plan cache's key: this operator and each tensor's buffer (by its watch's serial number, which keeps
        no reference to it), offset and size in the description's order (what makes two Bindings equal, without a
        Python-level hash per Binding: a batch of small operations looks one up per operation). None where
        `bindings` is not exactly one Binding per tensor name (validation then says what is wrong) or a buffer is
        not watched yet (not bound before)."""
        fields = self.tensor_fields
        try:
            if len(bindings) != len(fields):
                return None
            key = [self]
            for name in fields:
                binding = bindings[name]
                if type(binding) is not Binding:
                    return None
                watch = buffer_watch(binding.buffer)
                if watch is None:
                    return None
                key += (watch.key, binding.offset, binding.size)
        except (KeyError, TypeError):
            return None
        return tuple(key)

    def dispatch_plans(self, bindings: Mapping[str, Binding], *, error_flags: bool = False
                       ) -> tuple[DispatchPlan, ...]:
        """CompiledOperator.dispatch_plans's work."""
        validate_bindings(self.spec, self.desc, bindings, self.device)
        return self._dispatch_plans(bindings, error_flags)

    def kernels(self, bindings: Mapping[str, Binding], *, error_flags: bool = False) -> tuple[shaders.Kernel, ...]:
        """CompiledOperator.kernels's work."""
        return tuple(shaders.Kernel(plan.key, plan.grid_size, shader_source(plan.key))
                     for plan in self.dispatch_plans(bindings, error_flags=error_flags))

    @functools.cached_property
    def operation(self) -> Operation:
        """The operator part of this operator's kernels: from its row, its description and, where the kernels
        depend on one, the device's probed facts."""
        return self._operation(error_flags=False)

    @functools.cached_property
    def reporting_operation(self) -> Operation:
        """The operation of the kernels bind_with_error_flags runs: `operation`, also reporting NumPy's
        floating-point errors into a flag word (Operation.error_flags)."""
        return self._operation(error_flags=True)

    @functools.cached_property
    def loop_request(self) -> LoopRequest:
        """What the operation asks of every loop planned for it (OperatorSpec.loop_request of its input type)."""
        return self.spec.loop_request(self.tensors[0].data_type)

    def _operation(self, error_flags: bool) -> Operation:
        input_type = self.tensors[0].data_type
        probed = self.spec.type_policy(input_type).pack_rounding and self.device.probe_pack_rounding()
        return self.spec.operation(self.desc, DeviceFacts(pack_rounds_to_nearest=probed), error_flags)

    def _dispatch_plans(self, bindings: Mapping[str, Binding], error_flags: bool = False
                        ) -> tuple[DispatchPlan, ...]:
        ordered = [bindings[name] for name in self.tensor_fields]
        regions = tuple(BoundRegion(id(b.buffer), b.buffer.size, b.offset) for b in ordered)
        operation = self.reporting_operation if error_flags else self.operation
        return plan_dispatches(operation, self.loop_request, self.tensors, regions, self.device.plan_limits())

    def _make_plan(self, bindings: Mapping[str, Binding], flags: Binding | None = None) -> tuple[_Dispatch, ...]:
        by_operand = dict(zip(operands_of(len(self.spec.inputs)), (bindings[name] for name in self.tensor_fields)))
        return tuple(self._dispatch(plan, by_operand, flags)
                     for plan in self._dispatch_plans(bindings, error_flags=flags is not None))

    def _dispatch(self, plan: DispatchPlan, by_operand: dict, flags: Binding | None = None) -> _Dispatch:
        device = self.device
        pipeline, layout = device.pipeline(plan.key)
        wgpu_device = device.wgpu_device
        uniform_buffer = wgpu_device.create_buffer_with_data(data=plan.uniforms.to_bytes(),
                                                             usage=device.wgpu.BufferUsage.UNIFORM)
        entries = bind_group_entries(device, plan, uniform_buffer, by_operand, flags)
        bind_group = wgpu_device.create_bind_group(layout=layout, entries=entries)
        return _Dispatch(pipeline, bind_group, plan.grid_size, uniform_buffer)


def bind_group_entries(device: Device, plan: DispatchPlan, uniform_buffer, by_operand: dict,
                       flags: Binding | None = None) -> list[dict]:
    """The bind group entries of `plan`'s dispatch: its uniforms, each operand's window of its Binding in
    `by_operand` (by Operand), and where the kernel reports floating-point errors the flag word at `flags`."""
    entries = [{"binding": 0, "resource": {"buffer": uniform_buffer, "offset": 0, "size": uniform_buffer.size}}]
    for binding_index, name, access, operand in shaders.bindings(plan.key):
        if operand is None:  # the operation's flag word (Operation.error_flags)
            entries.append({"binding": binding_index,
                            "resource": {"buffer": flags.buffer, "offset": flags.offset, "size": FLAG_BYTES}})
            continue
        window = plan.windows[operand]
        buffer, offset, size = by_operand[operand].buffer, window.offset, window.size
        if name.endswith("_chunks"):
            size -= size % 16
            if size == 0:  # under 16 bytes: no whole chunk to move, but the view must be bound
                buffer, offset, size = device.placeholder(access), 0, 16
        entries.append({"binding": binding_index, "resource": {"buffer": buffer, "offset": offset, "size": size}})
    return entries


class _PlanCache:
    """The device's dispatch plans, least recently used dropped first (PLAN_CACHE_SIZE). A plan's key names its
    buffers by their watch's serial number only, but its bind groups hold the buffers' memory: so a plan is
    dropped as soon as one of its buffers is destroyed or collected (BufferWatch.forget).

    Forgetting may happen at any moment in any thread (a buffer collected inside another cache operation): it
    queues the buffer and purges only when it can take the cache's lock without waiting; whoever holds the lock
    purges before releasing it."""

    def __init__(self):
        self.plans: OrderedDict[tuple, tuple[_Dispatch, ...]] = OrderedDict()
        self._keys_of: dict[int, set[tuple]] = {}  # watch key -> the keys of the plans that bind that buffer
        self._gone: deque[int] = deque()  # watch keys of buffers destroyed or collected, not purged yet
        self._lock = threading.Lock()  # not reentrant on purpose: see forget

    def __len__(self) -> int:
        return len(self.plans)

    def get(self, key: tuple) -> tuple[_Dispatch, ...] | None:
        with self._lock:
            try:
                plan = self.plans.get(key)
                if plan is not None:
                    self.plans.move_to_end(key)
            finally:
                self._purge()
        return plan

    def put(self, key: tuple, plan: tuple[_Dispatch, ...], watches: list[BufferWatch]) -> None:
        with self._lock:
            try:
                if any(watch.destroyed for watch in watches):  # destroyed while the plan was being made
                    return
                for watch in watches:
                    watch.cached_in(self)
                    self._keys_of.setdefault(watch.key, set()).add(key)
                self.plans[key] = plan
                while len(self.plans) > PLAN_CACHE_SIZE:
                    self._unindex(self.plans.popitem(last=False)[0])
            finally:
                self._purge()

    def forget(self, watch_key: int) -> None:
        """Drop the plans that bind the buffer of this watch key (called when it is destroyed or collected)."""
        self._gone.append(watch_key)
        # A thread already in the cache (this one, through garbage collection, or another) purges on its way out.
        if self._lock.acquire(blocking=False):
            try:
                self._purge()
            finally:
                self._lock.release()

    def _purge(self) -> None:
        gone = self._gone
        while gone:
            for key in self._keys_of.pop(gone.popleft(), ()):
                if self.plans.pop(key, None) is not None:
                    self._unindex(key)

    def _unindex(self, key: tuple) -> None:
        for watch_key in key[1::3]:  # (operator, watch key, offset, size, watch key, ...)
            keys = self._keys_of.get(watch_key)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._keys_of[watch_key]


def loss_reason(exc: Exception) -> str:
    """wgpu's own reason for a loss, from the error a call on the lost device raised: the line that says the
    device is lost (Dawn's last line names only the call), else the last one."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    saying = [line for line in lines if _SAYS_LOST in line]
    return (saying or lines or [type(exc).__name__])[-1]


class _Explained:
    """Device.explained's context manager: a wgpu error inside becomes Device.refusal's DeviceError, and a device
    found lost (before or during the step) DeviceError saying so."""

    __slots__ = ("device", "operator", "step")

    def __init__(self, device: Device, operator: str, step: str):
        self.device, self.operator, self.step = device, operator, step

    def __enter__(self) -> None:
        if self.device._watch.lost is not None:
            raise self.device.lost_error(self.operator, self.step)

    def __exit__(self, exc_type, exc, tb) -> None:
        device = self.device
        if exc is None:
            if device._watch.lost is not None:  # lost meanwhile: what the step gave back cannot be trusted
                raise device.lost_error(self.operator, self.step)
            return
        if not isinstance(exc, Exception) or isinstance(exc, GpuOpsError):
            return
        # wgpu's errors, and wgpu-py's own RuntimeErrors (a mapping that failed); anything else only where the
        # device turns out lost (wgpu-py then fails in its own ways: a stopped or missing polling thread).
        if isinstance(exc, (device.wgpu.GPUError, RuntimeError)) or device.is_lost():
            raise device.refusal(self.operator, self.step, exc) from exc


class Batch:
    """Executions recorded in order into one compute pass of one command encoder and submitted together, like a
    DirectML command list. WebGPU makes each dispatch see the storage writes of the dispatches before it, so an
    operation reading another's output sees it. Use as a context manager (submits on success, discards on an
    exception) or call submit(). Every buffer recorded is checked when recorded and again at submit (it may be
    destroyed or mapped in between: the batch is then refused, and nothing of it runs).
    """

    def __init__(self, device: Device):
        self.device = device
        self._uses: dict[int, Use] = {}  # id(buffer) -> a use of it, checked again at submit
        with device.lock, device.explained("a batch", "starting"):
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
        if not isinstance(compiled, CompiledOperator):
            raise ValidationError(f"Batch.record: compiled {shown(compiled)} ({type(compiled).__name__}) is not a "
                                  "gpuops.CompiledOperator; make one with device.compile(desc)")
        if compiled.device is not self.device:
            raise ValidationError(f"{compiled.spec.name}: compiled on another gpuops.Device than this batch's")
        device = self.device
        # No context manager here (a try instead): a batch of many small operations spends most of its host time in
        # this method.
        with device.lock:
            if device._watch.lost is not None:
                raise device.lost_error(compiled.spec.name, "recording into a batch")
            prepared = compiled.prepared
            dispatches = prepared._plan_locked(bindings)  # validated before anything is recorded
            uses = self._uses
            new = [use for use in prepared._uses(bindings) if id(use[2]) not in uses]
            if new:
                device.check_uses(new)
                for use in new:
                    uses[id(use[2])] = use
            try:
                self._pipeline = _dispatch_all(self._pass, dispatches, self._pipeline)
            except device.wgpu.GPUError as exc:
                raise device.refusal(compiled.spec.name, "recording", exc) from exc
        self.count += 1

    def submit(self) -> None:
        if self._done:
            raise GpuOpsError("this batch was already submitted; start a new one with device.batch()")
        self._done = True
        what = f"a batch of {self.count} operations"
        with self.device.lock, self.device.explained(what, "ending its pass"):
            self._pass.end()
        uses, self._uses = self._uses, {}
        self.device.submit(self.encoder, what, uses.values())

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and not self._done:
            self.submit()
        self._done = True
        self._uses = {}


_default_device: Device | None = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """The device the NumPy-level functions use when none is given: created on first use, then reused, and
    replaced by a new one once it is lost."""
    global _default_device
    with _default_lock:
        if _default_device is None or _default_device.lost:
            _default_device = Device()
        return _default_device


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
