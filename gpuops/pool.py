"""Reused device memory for the NumPy-level functions (buffers by size class, and their binding tables), and the
transfers through it: uploads and read-backs.

A NumPy-level call needs a buffer per uploaded input, one for the output and a MAP_READ staging buffer to read
the output back; made afresh each call they cost more than a small call's work (and wgpu clears every new buffer
the first time a shader writes it). Each Device has one BufferPool (`Device.pool`), which keeps the buffers a call
gives back for the next one:

- Sizes round up to a power of two (at least MIN_BUFFER_BYTES; capped at the device's largest buffer), so arrays
  of similar sizes share buffers. Storage buffers (STORAGE | COPY_SRC | COPY_DST), read-back staging buffers
  (MAP_READ | COPY_DST) and upload buffers (MAP_WRITE | COPY_SRC, for large uploads) are kept apart.
- Idle buffers are bounded per device: at most the larger of `max_idle_bytes` (MAX_IDLE_BYTES, 1 GiB, by default)
  and the most bytes the pool has had lent out at once (to calls under way and device arrays), and at most the
  larger of `max_idle_buffers` (MAX_IDLE_BUFFERS, 64) and the most buffers lent out at once; past either, the least
  recently given back is destroyed. Calls that run side by side (a Dask worker's tasks, threads sharing a Device)
  thus find each other's buffers again instead of pushing them out, and the pool never keeps more than the program
  once had in use, as CuPy's and PyTorch's caching allocators do. The one exception is the set of buffers that the
  last call gave back together: it is kept even when it alone passes the bounds, so that repeating a large call
  makes nothing new; the next call's buffers then push it out.
- Binding tables (the bind groups and uniforms of one operator on one set of pooled buffers) are kept in an LRU
  of at most MAX_TABLES per device, and dropped with any buffer they use.

Buffers in use are not the pool's: a call's temporaries while it runs, and the buffer of each gpuops.DeviceArray
that gpuops made, which comes back to the pool when that array is collected. A caller's buffer
(DeviceArray.from_buffer) never enters the pool and is never destroyed by gpuops; nor does a buffer its holder
destroyed (a device array's `.buffer`).

Every method but `give_back` is called with the device's lock held (one device's wgpu calls come from one thread at
a time); `give_back` only queues the buffer, so that it may run in a garbage collector's finalizer on any thread.
"""

from __future__ import annotations

import collections
import types
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import wgpu  # for its flags' values, which are WebGPU's in every backend

from .binding import Binding, buffer_destroyed
from .errors import DeviceError
from .hostcopy import HostCopier
from .wgpu_internals import NativeAccess, Pending, PromiseAccess, released

MIN_BUFFER_BYTES = 256
MAX_IDLE_BYTES = 1 << 30
MAX_IDLE_BUFFERS = 64
MAX_TABLES = 512  # each keeps its kernels' pipelines alive: with the device's pipeline cache, the bound on them

MAPPED_UPLOAD_BYTES = 8 << 20  # from this size on, uploads go through a pooled mapped buffer (see upload)
FLAG_BYTES = 4  # the kernels' error flag word (kernel.Operation.error_flags): one u32

STORAGE = "storage"  # STORAGE | COPY_SRC | COPY_DST: the operators' tensors
STAGING = "staging"  # MAP_READ | COPY_DST: read-backs
UPLOAD = "upload"  # MAP_WRITE | COPY_SRC: large uploads


class OwningDevice(Protocol):
    """What the pool and the transfers below use of the gpuops.Device that owns them: declared here, so that the
    pool, which device.py makes for each Device, imports nothing of device.py."""

    wgpu: types.ModuleType  # the wgpu-py backend module (wgpu or wgpudawn)
    wgpu_device: wgpu.GPUDevice
    adapter_name: str
    max_buffer_size: int
    lock: AbstractContextManager  # held around every call into wgpu_device, never across a wait
    pool: BufferPool
    host_access: NativeAccess | PromiseAccess
    host_copies: HostCopier

    def watch(self, buffer) -> None: ...

    def explained(self, operator: str, step: str) -> AbstractContextManager: ...

    def submit(self, encoder, what: str = ..., uses: Iterable = ...) -> None: ...

    def wait(self, pending: Pending, operator: str, step: str) -> None: ...


class BindableOperator(Protocol):
    """What the pool's binding tables use of an operator (device.py's PreparedOperator)."""

    tensor_fields: tuple[str, ...]

    def bind(self, bindings: Mapping[str, Binding], *, element_offsets: bool = ...) -> RecordableTable: ...

    def bind_with_error_flags(self, bindings: Mapping[str, Binding], flags: Binding, *,
                              element_offsets: bool = ...) -> RecordableTable: ...


class RecordableTable(Protocol):
    """A compiled operator's bindings made ready to record (device.py's BindingTable)."""

    def record_unchecked(self, encoder) -> None: ...


@dataclass(frozen=True)
class PoolStats:
    """What a pool holds and has done: `created` and `destroyed` count wgpu buffers over its life."""

    created: int
    destroyed: int
    idle_buffers: int
    idle_bytes: int
    tables: int


def size_class(size: int, max_buffer_size: int) -> int:
    """The size a pooled buffer of at least `size` bytes has: the next power of two (at least MIN_BUFFER_BYTES),
    or `size` rounded up to 16 where that power would pass the device's largest buffer."""
    rounded = max(MIN_BUFFER_BYTES, 1 << (max(size, 1) - 1).bit_length())
    return rounded if rounded <= max_buffer_size else -(-size // 16) * 16


class BufferPool:
    """One device's reusable buffers and binding tables (see the module docstring for the bounds)."""

    def __init__(self, max_idle_bytes: int = MAX_IDLE_BYTES, max_idle_buffers: int = MAX_IDLE_BUFFERS):
        self.max_idle_bytes = max_idle_bytes
        self.max_idle_buffers = max_idle_buffers
        self._idle: dict[tuple[str, int], list] = {}  # (kind, size) -> buffers, the most recently given back last
        self._order: collections.OrderedDict[int, tuple[str, object]] = collections.OrderedDict()  # id -> LRU
        self._idle_bytes = 0
        self._returned: collections.deque = collections.deque()  # from finalizers, taken in under the lock
        self._tables: collections.OrderedDict[tuple, RecordableTable] = collections.OrderedDict()
        self._tables_of: dict[int, set[tuple]] = {}  # id(buffer) -> keys of the tables that bind it
        self._flag_word = None  # see flag_word
        self._lent: dict[int, int] = {}  # id(buffer) -> size: acquired and not given back yet
        self._lent_bytes = 0
        self.peak_lent_bytes = 0  # the most bytes, and buffers, lent out at once: the floor of the idle bounds
        self.peak_lent_buffers = 0
        self.created = 0
        self.destroyed = 0

    def stats(self) -> PoolStats:
        self._take_returned()
        return PoolStats(self.created, self.destroyed, len(self._order), self._idle_bytes, len(self._tables))

    def acquire(self, device: OwningDevice, kind: str, size: int, what: str = "gpuops"):
        """A buffer of at least `size` bytes of `kind` (STORAGE, STAGING or UPLOAD), reused when one is idle;
        DeviceError naming `what` where `size` is past the device's largest buffer (Device.max_buffer_size)."""
        self._take_returned()
        if size > device.max_buffer_size:
            raise DeviceError(f"{what}: a buffer of {size} bytes is needed; the adapter {device.adapter_name} holds "
                              f"at most {device.max_buffer_size} bytes in one buffer")
        size = size_class(size, device.max_buffer_size)
        idle = self._idle.get((kind, size))
        if idle:
            buffer = idle.pop()
            del self._order[id(buffer)]
            self._idle_bytes -= buffer.size
            return self._lend(buffer)
        usage = device.wgpu.BufferUsage
        flags = {STORAGE: usage.STORAGE | usage.COPY_SRC | usage.COPY_DST, STAGING: usage.MAP_READ | usage.COPY_DST,
                 UPLOAD: usage.MAP_WRITE | usage.COPY_SRC}[kind]
        try:
            buffer = device.wgpu_device.create_buffer(label=f"gpuops pool ({kind})", size=size, usage=flags)
        except device.wgpu.GPUError:
            if not self._order:
                raise
            self.clear()  # out of memory, perhaps: give the idle buffers back to the device and try once more
            buffer = device.wgpu_device.create_buffer(label=f"gpuops pool ({kind})", size=size, usage=flags)
        self.created += 1
        device.watch(buffer)  # its holder may destroy it (a device array's .buffer): then it never comes back here
        return self._lend(buffer)

    def _lend(self, buffer):
        self._lent[id(buffer)] = buffer.size
        self._lent_bytes += buffer.size
        self.peak_lent_bytes = max(self.peak_lent_bytes, self._lent_bytes)
        self.peak_lent_buffers = max(self.peak_lent_buffers, len(self._lent))
        return buffer

    def _end_loan(self, buffer) -> None:
        size = self._lent.pop(id(buffer), None)
        if size is not None:
            self._lent_bytes -= size

    def release(self, *buffers) -> None:
        """Take back buffers this pool made, given back together (one call's): they wait for reuse, and the least
        recently given back idle buffers are destroyed past the bounds. The buffers given back together are kept
        even where they alone pass the bounds, so that the next call of the same sizes finds them."""
        for buffer in buffers:
            self._end_loan(buffer)
            if destroyed(buffer):  # by its holder (a device array's `.buffer`): nothing left to reuse
                self._forget_tables(buffer)
                continue
            if id(buffer) in self._order:  # a second owner would get it: gpuops' own bug, never the caller's
                raise AssertionError(f"gpuops' pool took back a buffer it already holds idle ({buffer.label})")
            usage = buffer.usage
            kind = STAGING if usage & wgpu.BufferUsage.MAP_READ else \
                UPLOAD if usage & wgpu.BufferUsage.MAP_WRITE else STORAGE
            self._idle.setdefault((kind, buffer.size), []).append(buffer)
            self._order[id(buffer)] = (kind, buffer)
            self._idle_bytes += buffer.size
        byte_bound = max(self.max_idle_bytes, self.peak_lent_bytes)
        count_bound = max(self.max_idle_buffers, self.peak_lent_buffers)
        while len(self._order) > len(buffers) and (self._idle_bytes > byte_bound or len(self._order) > count_bound):
            _, (old_kind, old) = self._order.popitem(last=False)
            self._idle[(old_kind, old.size)].remove(old)
            self._idle_bytes -= old.size
            self._destroy(old)

    def flag_word(self, device: OwningDevice):
        """The buffer whose first FLAG_BYTES take the kernels' error flags (CompiledOperator.bind_with_error_flags):
        one for every call on the device, made once and never given back, so that the binding tables that bind it
        are kept. Calls share it safely as long as each submission that runs flagged kernels clears the word before
        them and copies it out after them (read_back's tail): the queue runs submissions one after the other."""
        if self._flag_word is None:
            usage = device.wgpu.BufferUsage
            self._flag_word = device.wgpu_device.create_buffer(
                label="gpuops error flags", size=16, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
            self.created += 1
        return self._flag_word

    def give_back(self, buffer) -> None:
        """Queue a buffer for release, from any thread and without the lock (DeviceArray finalizers)."""
        self._returned.append(buffer)

    def clear(self) -> None:
        """Destroy every idle buffer (and the tables that bind them)."""
        self._take_returned()
        while self._order:
            _, (kind, buffer) = self._order.popitem(last=False)
            self._idle[(kind, buffer.size)].remove(buffer)
            self._idle_bytes -= buffer.size
            self._destroy(buffer)

    def table(self, operator: BindableOperator, regions: tuple[tuple[object, int, int], ...],
              cached: bool, flags=None) -> RecordableTable:
        """The binding table of `operator` on `regions` ((buffer, offset, size) per tensor, in the order of
        operator.tensor_fields; an offset may be any whole number of the tensor's elements), remembered when
        `cached` (every buffer the pool's or a pooled DeviceArray's: a caller's buffer is never kept alive by the
        pool). `flags`: a pooled buffer whose first word takes the kernels' error flags
        (CompiledOperator.bind_with_error_flags)."""
        if flags is not None:
            regions += ((flags, 0, FLAG_BYTES),)
        key = (operator,) + regions
        table = self._tables.get(key) if cached else None
        if table is not None:
            self._tables.move_to_end(key)
            return table
        bindings = {name: Binding(*region) for name, region in zip(operator.tensor_fields, regions)}
        # element_offsets: device-array views start at any whole element
        table = (operator.bind(bindings, element_offsets=True) if flags is None
                 else operator.bind_with_error_flags(bindings, Binding(flags), element_offsets=True))
        if not cached:
            return table
        self._tables[key] = table
        for buffer, _, _ in regions:
            self._tables_of.setdefault(id(buffer), set()).add(key)
        while len(self._tables) > MAX_TABLES:
            self._forget(self._tables.popitem(last=False)[0])
        return table

    def _forget(self, key: tuple) -> None:
        self._tables.pop(key, None)
        for buffer, _, _ in key[1:]:
            keys = self._tables_of.get(id(buffer))
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._tables_of[id(buffer)]

    def _forget_tables(self, buffer) -> None:
        """Drop the binding tables that bind `buffer` (destroyed: nothing can run them again)."""
        for key in list(self._tables_of.get(id(buffer), ())):
            self._forget(key)

    def _destroy(self, buffer) -> None:
        self._end_loan(buffer)  # (a lent buffer whose mapping failed)
        self._forget_tables(buffer)
        buffer.destroy()
        self.destroyed += 1

    def _take_returned(self) -> None:
        while self._returned:
            self.release(self._returned.popleft())


def pool_of(device: OwningDevice) -> BufferPool:
    """The device's pool (Device.pool), which lives as long as the Device."""
    return device.pool


def upload(device: OwningDevice, pool: BufferPool, data, encoder, staged, what: str = "gpuops") -> object:
    """A pooled storage buffer that holds the bytes of `data` (a C-contiguous array) from offset 0 for the work
    recorded into `encoder` after this call. Call with the device's lock held.

    Below MAPPED_UPLOAD_BYTES (uploads_mapped) the bytes go by queue.write_buffer (it lands before the next
    submission) and `staged` is None. Larger ones come as `staged`, a pooled MAP_WRITE buffer the caller filled
    with them beforehand (fill_upload, which waits for the mapping: never under the lock), and go from there by a
    copy recorded into `encoder`; `staged` stays the caller's to give back once `encoder` is submitted.
    write_buffer makes a new staging allocation of the full size on every call, which for large arrays costs more
    than the copy itself (fresh memory is faulted in page by page). `what` names the operation in errors."""
    size = data.nbytes
    if (staged is not None) != uploads_mapped(size):  # gpuops' own bug, never the caller's
        raise AssertionError(f"gpuops' upload of {size} bytes was given {'an' if staged else 'no'} upload buffer")
    buffer = pool.acquire(device, STORAGE, -(-size // 16) * 16, what)
    if staged is not None:
        encoder.copy_buffer_to_buffer(staged, 0, buffer, 0, -(-size // 4) * 4)
        return buffer
    queue = device.wgpu_device.queue
    whole = size - size % 4
    if whole:
        queue.write_buffer(buffer, 0, data, 0, whole)
    if whole < size:  # the last 1 to 3 bytes as one padded word
        tail = bytearray(4)
        tail[: size - whole] = memoryview(data).cast("B")[whole:]
        queue.write_buffer(buffer, whole, tail)
    return buffer


def uploads_mapped(size: int) -> bool:
    """Whether an upload of `size` bytes goes through a mapped buffer (fill_upload) rather than write_buffer."""
    return size >= MAPPED_UPLOAD_BYTES


def fill_upload(device: OwningDevice, pool: BufferPool, data, what: str = "gpuops") -> object:
    """A pooled MAP_WRITE buffer holding the bytes of `data` (a C-contiguous array) from offset 0, unmapped, for a
    copy from it (upload's `staged`). The copy into the mapping runs on the device's host-copy threads. It waits
    for the mapping: call it without the device's lock, which it takes only around its calls into the device."""
    size = data.nbytes
    words = -(-size // 4) * 4  # copies and mappings move whole 4-byte words
    access = device.host_access
    with device.lock, device.explained(what, "allocating an upload buffer"):
        staging = pool.acquire(device, UPLOAD, words, what)
    pending = view = None
    try:
        with device.lock, device.explained(what, "mapping an upload buffer"):
            pending = access.begin_map(staging, True, words)
        device.wait(pending, what, "mapping an upload buffer")
        with device.lock, device.explained(what, "writing an upload buffer"):
            view = access.mapped_view(staging, pending, words, write=True)
            if view is None:  # no writable view in this wgpu-py: its own copy, on this thread
                staging.write_mapped(data, 0)
        if view is not None:
            device.host_copies.copy(np.frombuffer(view, np.uint8, size),
                                    np.frombuffer(memoryview(data).cast("B"), np.uint8, size))
        with device.lock, device.explained(what, "writing an upload buffer"):
            access.unmap(staging, pending, view)
    except BaseException:
        with device.lock:
            _give_back_mappable(device, pool, staging, pending, view)
        raise
    return staging


def _give_back_mappable(device: OwningDevice, pool: BufferPool, buffer, pending, view) -> None:
    """Give back a mappable buffer after a failure: unmapped, or destroyed if its mapping is still pending."""
    if device.host_access.reusable(buffer, pending, view):
        pool.release(buffer)
    else:
        pool._destroy(buffer)


def destroyed(buffer) -> bool:
    """Whether `buffer` was destroyed: seen by gpuops' watch on it, or released by wgpu-py."""
    return buffer_destroyed(buffer) or released(buffer)


class ReadBack:
    """A read-back under way (start_read_back): the staging buffer's mapping, begun after the submission that
    copies into it. `finish` waits for it and hands the bytes to `fill`."""

    __slots__ = ("device", "pool", "staging", "pending", "size", "what")

    def __init__(self, device: OwningDevice, pool: BufferPool, staging, pending, size: int, what: str):
        self.device, self.pool, self.staging, self.pending, self.size, self.what = \
            device, pool, staging, pending, size, what

    def finish(self, fill, done: list | None = None) -> None:
        """Wait for the mapping and call `fill(memoryview)` on the mapped bytes: the one copy into host memory. No
        lock is held while the GPU works or while `fill` runs (other threads may submit meanwhile), and a lost
        device ends the wait with DeviceError. `fill` must not keep the memoryview: it is released when the buffer
        is unmapped.

        `done`: the call's other pooled buffers, given back to the pool together with the staging buffer once the
        result is read, and then taken out of the list; where the read-back fails they stay in it for the caller."""
        device, pool, staging, what = self.device, self.pool, self.staging, self.what
        access = device.host_access
        mapped = None
        try:
            device.wait(self.pending, what, "waiting for the read-back")
            with device.lock, device.explained(what, "reading back"):
                mapped = access.mapped_view(staging, self.pending, self.size, write=False)
            fill(mapped)
        except BaseException:
            with device.lock:
                _give_back_mappable(device, pool, staging, self.pending, mapped)
            raise
        with device.lock:
            access.unmap(staging, self.pending, mapped)
            if done is None:
                pool.release(staging)
            else:
                pool.release(*done, staging)
                done.clear()


def start_read_back(device: OwningDevice, pool: BufferPool, encoder, buffer, offset: int, size: int,
                    what: str = "gpuops", uses=(), tail: tuple | None = None) -> ReadBack:
    """Copy `size` bytes of `buffer` from `offset` (both multiples of 4) into a pooled staging buffer at the end of
    `encoder`'s work (None: a new encoder, the copy alone), submit it all at once (the buffers in `uses` checked
    first, as Device.submit does) and begin mapping the staging buffer: ReadBack.finish reads it. `tail`: (buffer,
    offset, size) of a few more bytes copied into the staging buffer after the first `size` (rounded up to 4),
    which `fill` sees after them (the NumPy-level functions' error flags)."""
    size = -(-size // 4) * 4 + (tail[2] if tail is not None else 0)
    staging = None
    try:
        # One hold of the device's lock from the copy to the mapping.
        with device.lock:
            with device.explained(what, "reading a result back"):
                if encoder is None:
                    encoder = device.wgpu_device.create_command_encoder(label="gpuops read-back")
                staging = pool.acquire(device, STAGING, size)
                if tail is None:
                    encoder.copy_buffer_to_buffer(buffer, offset, staging, 0, size)
                else:
                    encoder.copy_buffer_to_buffer(buffer, offset, staging, 0, size - tail[2])
                    encoder.copy_buffer_to_buffer(tail[0], tail[1], staging, size - tail[2], tail[2])
            device.submit(encoder, what, uses)
            with device.explained(what, "mapping the read-back"):
                pending = device.host_access.begin_map(staging, False, size)
    except BaseException:
        if staging is not None:
            with device.lock:
                pool.release(staging)  # never mapped
        raise
    return ReadBack(device, pool, staging, pending, size, what)


def read_back(device: OwningDevice, pool: BufferPool, encoder, buffer, offset: int, size: int, fill,
              what: str = "gpuops", done: list | None = None, uses=(), tail: tuple | None = None) -> None:
    """start_read_back, then ReadBack.finish(fill, done): the copy's submission, the wait and the one copy into
    host memory (see both)."""
    start_read_back(device, pool, encoder, buffer, offset, size, what, uses, tail).finish(fill, done)
