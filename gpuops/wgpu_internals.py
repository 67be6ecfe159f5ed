"""Everything gpuops reaches for inside wgpu-py (`wgpu`) and wgpudawn beyond their public API, in one place, each
with the public path it falls back to. tests/test_wgpu_internals.py fails where the installed packages lack one, so
that an upgrade which removes one is noticed instead of quietly running the slower fallback.

- Host access on wgpu-native (`NativeAccess`): gpuops maps its own staging buffers and asks for the queue's
  work-done notice through wgpu-native's C calls, with callbacks of its own that run inside non-blocking polls
  (`wgpuDevicePoll(wait=false)`) made by the waiting thread itself. wgpu-py's own maps hand off twice between
  threads (the caller wakes the device's poll thread, whose blocking poll runs the callback, which wakes the caller),
  and a blocking poll holds wgpu-core's fence lock until the GPU is done (wgpu-core 29, which wgpu-native 29 ships):
  another thread's submit then waits for the GPU. Each non-blocking poll holds that lock for microseconds, and wgpu-py's
  poll thread is never woken for gpuops' work. Uses the buffer's and device's `_internal` handles and wgpu-py's C
  bindings (`_api.libf`, `_ffi.ffi`, `_ffi.lib`). Without them: `PromiseAccess`, wgpu-py's public map_async.
- Promises (`PromiseAccess`, Dawn's path and the fallback): `promise._thread_event`, set once wgpu ran the
  callback, for waits bounded in time; on Dawn, `promise._wgpu_future_id` for `wgpuInstanceWaitAny`, which ends a
  wait the moment the work does. Without the event a wait is the promise's own `sync_wait()`, unbounded; without the
  future, Dawn's events are processed between pauses.
- `buffer._experimental_get_mapped_range` (wgpu-py and wgpudawn): a writable view of a mapped buffer, so that a large
  upload is copied in on several threads. Without it: one copy through `buffer.write_mapped`.
- wgpu-native's trusted shader modules (`wgpuDeviceCreateShaderModuleTrusted`, `trusted_shader_module`): kernels
  without runtime checks. Without it: `Device(runtime_checks=False)` is refused.
- `released`: whether wgpu-py has released an object (its `_internal` is None).
"""

from __future__ import annotations

import functools
import importlib
import itertools
import threading
import types


class Flag:
    """A one-way event for one waiter: threading.Event's is_set, set and wait(timeout) on one lock, held until set
    (made for every wait: an Event is a lock, a condition and a list)."""

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        if self._lock.locked():
            try:
                self._lock.release()
            except RuntimeError:  # set meanwhile by another thread
                pass

    def is_set(self) -> bool:
        return not self._lock.locked()

    def wait(self, timeout: float) -> bool:
        if self._lock.acquire(timeout=timeout):
            self._lock.release()
            return True
        return False


class Pending:
    """A buffer mapping or a queue's work-done notice under way. `event` is set once wgpu has run its callback (None
    where the backend gives no way to look: the wait is then the promise's own); `failure` is wgpu's reason where it
    failed."""

    __slots__ = ("event", "failure", "key", "promise")

    def __init__(self, event: Flag | threading.Event | None, key: int = 0, promise=None):
        self.event = event
        self.failure: str | None = None
        self.key = key
        self.promise = promise

    @property
    def done(self) -> bool:
        return self.event is not None and self.event.is_set()


def released(wgpu_object) -> bool:
    """Whether wgpu-py has released `wgpu_object` (a device, a buffer): it drops its handle then."""
    return getattr(wgpu_object, "_internal", True) is None


# wgpu-native: callbacks of gpuops' own, found by the key passed as their userdata. A callback runs inside whichever
# thread's poll finds its work done (or in wgpu-py's poll thread, where the caller's own work woke it): it records the
# outcome and sets the event, which ends the waiting thread's pause at once.
_pending: dict[int, Pending] = {}
_keys = itertools.count(1)


@functools.cache
def _native():
    """wgpu-py's C bindings of wgpu-native and gpuops' two callbacks, or None where this wgpu-py lacks what they
    need."""
    try:
        from wgpu.backends.wgpu_native import _api
        from wgpu.backends.wgpu_native._ffi import ffi, lib

        calls = types.SimpleNamespace(ffi=ffi, lib=lib, checked=_api.libf)
        for name in ("wgpuBufferMapAsync", "wgpuQueueOnSubmittedWorkDone", "wgpuBufferGetConstMappedRange",
                     "wgpuBufferGetMappedRange", "wgpuBufferUnmap", "wgpuDevicePoll"):
            getattr(lib, name)
        success = {"map": lib.WGPUMapAsyncStatus_Success, "work done": lib.WGPUQueueWorkDoneStatus_Success}
        modes = {False: lib.WGPUMapMode_Read, True: lib.WGPUMapMode_Write}
        process_events = lib.WGPUCallbackMode_AllowProcessEvents
        ffi.new("WGPUBufferMapCallbackInfo *")
        ffi.new("WGPUQueueWorkDoneCallbackInfo *")
    except (ImportError, AttributeError, TypeError):  # (cffi raises TypeError for a type it does not know)
        return None

    def finish(what: str, status: int, message, key) -> None:
        pending = _pending.pop(int(ffi.cast("uintptr_t", key)), None)
        if pending is None:  # abandoned by its wait (timed out, device lost)
            return
        if status != success[what]:
            text = ffi.string(message.data, message.length).decode(errors="replace") if message.data else ""
            pending.failure = f"the {what} callback's status {status}: {text.strip()}"
        pending.event.set()

    @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
    def mapped(status, message, key, _unused):
        finish("map", status, message, key)

    @ffi.callback("void(WGPUQueueWorkDoneStatus, WGPUStringView, void *, void *)")
    def work_done(status, message, key, _unused):
        finish("work done", status, message, key)

    calls.callbacks = {"map": mapped, "work done": work_done}  # module-lifetime: wgpu may call them at any time
    calls.modes, calls.callback_mode = modes, process_events
    return calls


class NativeAccess:
    """wgpu-native: maps and work-done notices with gpuops' own callbacks, run inside the waiting thread's
    non-blocking polls (see the module docstring). Looks take no lock: wgpu-native is safe from several threads."""

    looks_under_lock = False
    polls = True  # the waiting thread's looks are what runs the callbacks

    def __init__(self, wgpu_device):
        self._calls = _native()
        self._device = wgpu_device

    def begin_map(self, buffer, write: bool, size: int) -> Pending:
        """Begin mapping the first `size` bytes of `buffer` (MAP_WRITE or MAP_READ) for writing or reading."""
        calls = self._calls
        info = calls.ffi.new("WGPUBufferMapCallbackInfo *")
        return self._begin(info, "map", lambda: calls.checked.wgpuBufferMapAsync(
            buffer._internal, calls.modes[write], 0, size, info[0]))

    def begin_work_done(self) -> Pending:
        """Begin waiting for every submission made to the device's queue so far."""
        calls = self._calls
        info = calls.ffi.new("WGPUQueueWorkDoneCallbackInfo *")
        queue = self._device.queue
        return self._begin(info, "work done", lambda: calls.checked.wgpuQueueOnSubmittedWorkDone(queue._internal,
                                                                                                  info[0]))

    def _begin(self, info, what: str, call) -> Pending:
        calls = self._calls
        key = next(_keys)
        pending = _pending[key] = Pending(Flag(), key)
        info.mode = calls.callback_mode
        info.callback = calls.callbacks[what]
        info.userdata1 = calls.ffi.cast("void *", key)
        try:
            call()  # a refusal raises wgpu-py's GPUError (and the callback, told of it, finds nothing to finish)
        except BaseException:
            _pending.pop(key, None)
            raise
        return pending

    def look(self, pending: Pending, seconds: float = 0.0) -> None:
        """Run the callbacks of the work done by now: one non-blocking poll (no wait, whatever `seconds`)."""
        self._calls.lib.wgpuDevicePoll(self._device._internal, False, self._calls.ffi.NULL)

    def finish(self, pending: Pending) -> None:
        """After the event: RuntimeError with wgpu's reason where the mapping or notice failed."""
        if pending.failure is not None:
            raise RuntimeError(f"wgpu-native: {pending.failure}")

    def abandon(self, pending: Pending) -> None:
        """Forget a pending wait that will not be waited for (its callback, if it ever runs, finds nothing)."""
        _pending.pop(pending.key, None)

    def mapped_view(self, buffer, pending: Pending, size: int, write: bool) -> memoryview:
        """The mapped bytes (writable where mapped for writing); valid until unmap."""
        calls = self._calls
        lib = calls.lib
        pointer = (lib.wgpuBufferGetMappedRange if write else lib.wgpuBufferGetConstMappedRange)(
            buffer._internal, 0, size)
        if pointer == calls.ffi.NULL:
            raise RuntimeError(f"wgpu-native gave no mapped range of {size} bytes")
        view = memoryview(calls.ffi.buffer(calls.ffi.cast("char *", pointer), size))
        return view if write else view.toreadonly()

    def unmap(self, buffer, pending: Pending, view: memoryview | None) -> None:
        _release(view)
        self._calls.checked.wgpuBufferUnmap(buffer._internal)

    def reusable(self, buffer, pending: Pending | None, view: memoryview | None) -> bool:
        """After a failure: unmap `buffer` if it is mapped; whether it is unmapped now (reusable) rather than still
        mapping (then only destroying it is safe)."""
        if pending is None:
            return True
        if not pending.done:
            self.abandon(pending)
            return False
        if pending.failure is None:
            self.unmap(buffer, pending, view)
        return True


class PromiseAccess:
    """wgpu-py's public map_async, whose promise resolves in the backend's own time: wgpu-native's poll thread runs
    the callback, Dawn runs it inside a call into Dawn (`deliver`: its process_events; `wait_future`: its
    wgpuInstanceWaitAny). Looks on Dawn must hold the device's lock: Dawn's objects are not thread-safe."""

    def __init__(self, module: types.ModuleType, deliver=None, wait_future=None):
        self._module = module
        self._deliver = deliver
        self._wait_future = wait_future
        self.looks_under_lock = deliver is not None
        self.polls = False  # wgpu-native's poll thread, or Dawn's looks under the lock, run the callbacks

    def begin_map(self, buffer, write: bool, size: int) -> Pending:
        mode = self._module.MapMode.WRITE if write else self._module.MapMode.READ
        promise = buffer.map_async(mode, 0, size)
        return Pending(getattr(promise, "_thread_event", None), promise=promise)

    def begin_work_done(self) -> Pending | None:
        return None  # synchronize reads back 4 bytes instead (Dawn's measured path)

    def look(self, pending: Pending, seconds: float = 0.0) -> bool:
        """Let the backend run the callbacks due; on Dawn this blocks in Dawn for up to `seconds` where it can wait
        for the promise's future itself. Whether it did."""
        if self._deliver is None:
            return False
        future = getattr(pending.promise, "_wgpu_future_id", None)
        if self._wait_future is not None and future is not None:
            self._wait_future(future, seconds)
            return True
        self._deliver()
        return False

    def finish(self, pending: Pending) -> None:
        pending.promise.sync_wait()  # (resolves at once after the event; raises where the mapping failed)

    def abandon(self, pending: Pending) -> None:
        pass

    def mapped_view(self, buffer, pending: Pending, size: int, write: bool) -> memoryview | None:
        """The mapped bytes; for writing None where this wgpu-py gives no writable view (write with
        buffer.write_mapped then)."""
        if not write:
            return buffer.read_mapped(0, size, copy=False)
        mapped_range = getattr(buffer, "_experimental_get_mapped_range", None)
        return None if mapped_range is None else mapped_range(0, size)

    def unmap(self, buffer, pending: Pending, view: memoryview | None) -> None:
        buffer.unmap()

    def reusable(self, buffer, pending: Pending | None, view: memoryview | None) -> bool:
        if buffer.map_state == "mapped":
            buffer.unmap()
        return buffer.map_state == "unmapped"


def _release(view: memoryview | None) -> None:
    """Release a view of mapped memory before the unmap, so that nothing reads it after (a NumPy array made from it
    and still alive keeps its export: only that array's owner can keep it past the unmap, as with wgpu-py's own)."""
    if view is not None:
        try:
            view.release()
        except BufferError:
            pass


def host_access(module: types.ModuleType, wgpu_device):
    """How gpuops maps its buffers and waits on `wgpu_device` (a device of `module`, wgpu or wgpudawn)."""
    if module.__name__ == "wgpudawn":
        return PromiseAccess(module, _dawn_process_events(module), _dawn_future_waiter(module))
    if _native() is not None and not released(wgpu_device):
        return NativeAccess(wgpu_device)
    return public_access(module)


def public_access(module: types.ModuleType) -> PromiseAccess:
    """The access through the backend's public API alone, as where none of the internals above exist: wgpu-py's
    map_async, and on Dawn its process_events between pauses."""
    return PromiseAccess(module, _dawn_process_events(module) if module.__name__ == "wgpudawn" else None)


def _dawn_process_events(module: types.ModuleType):
    return importlib.import_module(module.__name__ + ".backends.dawn").process_events


def _dawn_future_waiter(module: types.ModuleType):
    """Dawn's blocking wait for a future: `wait(future_id, seconds)` returns once its work is done (its callback
    run) or `seconds` passed; None where this wgpudawn's C bindings lack it."""
    try:
        api = importlib.import_module(module.__name__ + ".backends.dawn._api")
        ffi, libf, instance = api.ffi, api.libf, api.get_wgpu_instance
        ffi.new("WGPUFutureWaitInfo *")
    except Exception:  # (ImportError, AttributeError, or cffi not knowing the struct): waits fall back to looks
        return None

    def wait(future: int, seconds: float) -> None:
        info = ffi.new("WGPUFutureWaitInfo *")
        info.future.id = future
        libf.wgpuInstanceWaitAny(instance(), 1, info, max(0, int(seconds * 1e9)))

    return wait


@functools.cache  # looked up once: every Device and every pipeline asks
def _trusted_entry():
    try:
        from wgpu.backends.wgpu_native import _api
        from wgpu.backends.wgpu_native._ffi import ffi, lib

        create = _api.libf.wgpuDeviceCreateShaderModuleTrusted
    except (ImportError, AttributeError):
        return None
    # what the module's creation uses besides: found missing here rather than there
    if not (all(hasattr(_api, name) for name in ("new_struct_p", "to_c_string_view", "GPUShaderModule"))
            and all(hasattr(lib, name) for name in ("WGPUSType_ShaderSourceWGSL", "WGPUShaderRuntimeChecks_None"))):
        return None
    return _api, ffi, lib, create


def has_trusted_shader_modules() -> bool:
    """Whether wgpu-native's trusted shader modules (no runtime checks) are reachable through this wgpu-py."""
    return _trusted_entry() is not None


def trusted_shader_module(wgpu_device, label: str, code: str):
    """A WGSL shader module without runtime checks on wgpu-native, built as wgpu-py's GPUDevice.create_shader_module
    builds a plain one (wgpu-py 0.32), through the trusted entry point. None where wgpu-native refused it."""
    api, ffi, lib, create = _trusted_entry()
    source = api.new_struct_p("WGPUShaderSourceWGSL *", code=api.to_c_string_view(code))
    source[0].chain.next = ffi.NULL
    source[0].chain.sType = lib.WGPUSType_ShaderSourceWGSL
    descriptor = api.new_struct_p("WGPUShaderModuleDescriptor *", nextInChain=ffi.cast("WGPUChainedStruct *", source),
                                  label=api.to_c_string_view(label))
    handle = create(wgpu_device._internal, descriptor, lib.WGPUShaderRuntimeChecks_None)
    if handle == ffi.NULL:
        return None
    return api.GPUShaderModule(label, handle, wgpu_device)
