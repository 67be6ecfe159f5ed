"""Binding: a region of a caller's wgpu buffer bound to one tensor of an operator (DML_BUFFER_BINDING); and what
gpuops watches of the caller's buffers and devices (destroyed, mapped, lost), with each wgpu device's lock."""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass

import wgpu

from .adapter_choice import wgpu_module_of
from .backends import BACKENDS
from .enums import integer_value
from .errors import ValidationError, shown


@dataclass(frozen=True)
class Binding:
    """DML_BUFFER_BINDING: a region of a wgpu buffer. `size` None means the rest of the buffer.

    The types are checked here, where the caller made the value; whether the region fits the buffer and the
    tensor (alignment, size) is checked when an operator is bound to it."""

    buffer: wgpu.GPUBuffer
    offset: int = 0
    size: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, wgpu.GPUBuffer) and wgpu_module_of(self.buffer, "GPUBuffer") is None:
            raise ValidationError(f"Binding.buffer: {shown(self.buffer)} ({type(self.buffer).__name__}) is not a "
                                  f"GPUBuffer of {' or '.join(BACKENDS.values())}")
        # Normalised to Python ints: NumPy integers are welcome, and the values stay exact and hashable alike.
        self._normalise("offset", "")
        if self.size is not None:
            self._normalise("size", "None (the rest of the buffer) or ")

    def _normalise(self, field: str, also_allowed: str) -> None:
        value = getattr(self, field)
        number = integer_value(value)
        if number is None or number < 0:
            raise ValidationError(f"Binding.{field}: {shown(value)}; allowed: {also_allowed}an integer (int or NumPy "
                                  "integer) of at least 0")
        if type(value) is not int:
            object.__setattr__(self, field, number)

    @property
    def resolved_size(self) -> int:
        return self.buffer.size - self.offset if self.size is None else self.size


# What gpuops watches of a caller's wgpu objects. wgpu-py (0.32) keeps no destroyed state on a buffer or device
# (destroy() leaves `_internal` set and nothing else changes), yet wgpu-native aborts the process when a
# submission uses a destroyed buffer, a mapped one, or a lost device. So gpuops replaces `destroy` on the
# instances it binds (the class's method is untouched) to learn of it, and takes the device's lock there:
# a destroy then never falls between gpuops' checks and its submit.

_serials = itertools.count(1)  # watch serial numbers: unlike id(), never reused after an object dies


class DeviceWatch:
    """`destroy` of a wgpu device that gpuops.Devices use. It marks the device lost at once (every gpuops call on
    it then raises DeviceError before touching it), and destroys it as soon as no gpuops.Device on it is inside a
    call: a call in progress may be waiting for the GPU (a read-back's mapping), and wgpu-py stops polling a
    destroyed device, so that wait would never end; after the call, nothing of gpuops uses the device."""

    __slots__ = ("lock", "lost", "_device", "_prior", "_destroying", "__weakref__")

    def __init__(self, wgpu_device, prior):
        # Every call gpuops makes into this wgpu device and its objects, a submit with its checks included, is made
        # under this lock, shared by every gpuops.Device on the device (Device.lock): Dawn crashes when one device
        # is used from two threads at once, and a buffer or the device destroyed between a submit's checks and the
        # submit aborts wgpu-native. Never held across a wait for the GPU.
        self.lock = threading.RLock()
        self.lost: str | None = None  # why the device is lost; None while it is usable
        self._device = weakref.ref(wgpu_device)
        self._prior = prior  # an instance-level destroy someone set before gpuops: still called
        self._destroying = False

    def __call__(self) -> None:
        self.mark_lost("destroyed by wgpu_device.destroy()")
        if self._destroying:
            return
        self._destroying = True
        # The lock held by this thread means a gpuops call of this thread is under way (destroy was called from
        # inside it): that call must end first too, so the device is destroyed by another thread once it has.
        if not getattr(self.lock, "_is_owned", lambda: False)() and self.lock.acquire(blocking=False):
            try:
                self._destroy()
            finally:
                self.lock.release()
            return
        threading.Thread(target=self._destroy_after, name="gpuops device destroy", daemon=True).start()

    def _destroy_after(self) -> None:
        with self.lock:
            self._destroy()

    def _destroy(self) -> None:
        wgpu_device = self._device()
        if self._prior is not None:
            self._prior()
        elif wgpu_device is not None:
            type(wgpu_device).destroy(wgpu_device)

    def mark_lost(self, reason: str) -> None:
        if self.lost is None:
            self.lost = reason


def watch_device(wgpu_device) -> DeviceWatch:
    """The DeviceWatch of `wgpu_device`, installed as its `destroy` the first time."""
    found = vars(wgpu_device).get("destroy")
    if type(found) is DeviceWatch:
        return found
    watch = DeviceWatch(wgpu_device, found)
    wgpu_device.destroy = watch
    return watch


class BufferWatch:
    """`destroy` of a buffer gpuops has bound: marks it destroyed (under its device's lock) before
    destroying it, and tells the plan caches that hold dispatches of it to drop them. Its serial number `key`
    stands for the buffer in those caches' keys, so that they hold no reference to it; when the buffer is
    collected, the caches drop its dispatches too (their bind groups would keep its memory)."""

    __slots__ = ("key", "destroyed", "caches", "_buffer", "_device", "_prior", "__weakref__")

    def __init__(self, buffer, device: DeviceWatch, prior):
        self.key = next(_serials)
        self.destroyed = False
        self.caches: dict[int, weakref.ref] = {}  # id -> the plan caches holding dispatches of this buffer
        self._buffer = weakref.ref(buffer)
        self._device = device
        self._prior = prior
        weakref.finalize(buffer, self.forget).atexit = False  # at exit there is nothing to free

    def __call__(self) -> None:
        buffer = self._buffer()
        with self._device.lock:
            self.destroyed = True
            if self._prior is not None:
                self._prior()
            elif buffer is not None:
                type(buffer).destroy(buffer)
        self.forget()

    def forget(self) -> None:
        """Drop every cached dispatch of the buffer (destroyed or collected)."""
        for cache in list(self.caches.values()):
            found = cache()
            if found is not None:
                found.forget(self.key)

    def cached_in(self, cache) -> None:
        if id(cache) not in self.caches:
            self.caches[id(cache)] = weakref.ref(cache)


def watch_buffer(buffer, device: DeviceWatch) -> BufferWatch | None:
    """The BufferWatch of `buffer`, installed as its `destroy` the first time; None for a buffer that takes no
    attribute (its plans are then never cached)."""
    try:
        found = vars(buffer).get("destroy")
        if type(found) is BufferWatch:
            return found
        watch = BufferWatch(buffer, device, found)
        buffer.destroy = watch
    except (TypeError, AttributeError):
        return None
    return watch


def buffer_watch(buffer) -> BufferWatch | None:
    """The buffer's BufferWatch, if gpuops has installed one."""
    found = getattr(buffer, "__dict__", _NONE).get("destroy")
    return found if type(found) is BufferWatch else None


_NONE: dict = {}


def buffer_destroyed(buffer) -> bool:
    """Whether gpuops' watch on `buffer` saw it destroyed."""
    watch = buffer_watch(buffer)
    return watch is not None and watch.destroyed


def described(buffer) -> str:
    """A buffer as errors name it: its label (where it has one) and size."""
    label = getattr(buffer, "label", "")
    return f"the buffer ({label!r}, {buffer.size} bytes)" if label else f"the buffer ({buffer.size} bytes)"


def buffer_problem(buffer, wgpu_device) -> str | None:
    """Why submitting work that uses `buffer` on `wgpu_device` would fail (wgpu-native aborts the process on each
    of these), or None."""
    if buffer_destroyed(buffer):
        return "was destroyed (buffer.destroy()); bind a live buffer"
    state = getattr(buffer, "map_state", "unmapped")
    if state != "unmapped":
        return f"is {state} (map_state {state!r}); unmap it before gpuops work that uses it is submitted"
    owner = getattr(buffer, "_device", wgpu_device)
    if owner is not wgpu_device:
        return "belongs to another wgpu device than this gpuops.Device"
    return None
