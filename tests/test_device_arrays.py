"""Device arrays (gpuops.asarray, DeviceArray.from_buffer) through the NumPy-level functions, the device's buffer
pool, thread safety, and the NumPy-level benchmark script at tiny sizes."""

from __future__ import annotations

import gc
import importlib.util
import json
import random
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import wgpu

import gpuops
from gpuops import DataType, api, pool
from gpuops.bench.reference import compare

from .reference import special_values

USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
TYPES = ["float16", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def same(got, want) -> None:
    """Same dtype, shape and bits (NaN payloads aside)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    mismatch = compare(got, want)
    assert mismatch is None, mismatch.describe()


def numpy_sign(x):
    """np.sign with gpuops' documented difference: NaN and -0 give +0."""
    result = np.sign(x)
    if result.dtype.kind == "f":
        result = np.where(np.isnan(result) | (result == 0), result.dtype.type(0), result)
    return result


def specials(dtype: str) -> np.ndarray:
    return special_values(DataType.from_numpy(np.dtype(dtype)))


class Counter:
    """Counts the read-backs (buffer maps, queue.read_buffer), the queue's work-done notices and the submissions of a
    device from now on."""

    def __init__(self, device: gpuops.Device, monkeypatch):
        self.maps = self.reads = self.submits = self.work_done = 0
        self._inside_map = False
        access_type = type(device.host_access)
        queue_type = type(device.wgpu_device.queue)
        begin_map, begin_work_done = access_type.begin_map, access_type.begin_work_done
        read_buffer, submit = queue_type.read_buffer, queue_type.submit

        def counted_map(access, *args, **kwargs):
            self.maps += 1
            self._inside_map = True
            try:
                return begin_map(access, *args, **kwargs)
            finally:
                self._inside_map = False

        def counted_work_done(access):
            pending = begin_work_done(access)
            self.work_done += pending is not None
            return pending

        def counted_read(queue, *args, **kwargs):
            self.reads += 1
            return read_buffer(queue, *args, **kwargs)

        def counted_submit(queue, *args, **kwargs):
            if not self._inside_map:  # wgpu-py's map_async on wgpu-native flushes the queue with an empty submit
                self.submits += 1
            return submit(queue, *args, **kwargs)

        monkeypatch.setattr(access_type, "begin_map", counted_map)
        monkeypatch.setattr(access_type, "begin_work_done", counted_work_done)
        monkeypatch.setattr(queue_type, "read_buffer", counted_read)
        monkeypatch.setattr(queue_type, "submit", counted_submit)

    @property
    def read_backs(self) -> int:
        return self.maps + self.reads


@pytest.mark.parametrize("dtype", TYPES + ["bool"])
def test_round_trip(device, dtype):
    x = specials(dtype) if dtype != "bool" else np.array([True, False, True])
    d = gpuops.asarray(x, device)
    assert type(d) is gpuops.DeviceArray
    assert d.shape == x.shape and d.dtype == x.dtype and d.device is device and d.owned
    assert d.desc == gpuops.TensorDesc(d.data_type, x.shape, (1,))
    assert d.binding.buffer is d.buffer and d.binding.offset == 0
    same(d.numpy(), x)


@pytest.mark.parametrize("make", [
    lambda: np.arange(24, dtype=np.int16).reshape(2, 3, 4),
    lambda: np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
    lambda: np.arange(40, dtype=np.int32).reshape(5, 8)[::2, 1::3],
    lambda: np.arange(10, dtype=np.uint8)[::-1],
    lambda: np.broadcast_to(np.float16([1, 2, 3]), (4, 3)),
    lambda: np.array(-5, np.int64),
    lambda: np.zeros((3, 0), np.float32),
    lambda: np.array([1.5, -2.0], ">f4"),
    lambda: [[1, 2], [3, 4]],
], ids=["c", "fortran", "strided", "reversed", "broadcast", "0-d", "empty", "big-endian", "list"])
def test_round_trip_layouts(device, make):
    x = make()
    d = gpuops.asarray(x, device)
    back = d.numpy()
    want = np.asarray(x)
    assert back.dtype == want.dtype.newbyteorder("=") and back.shape == want.shape
    assert np.array_equal(back, want)
    assert all(s >= 0 for s in d.strides)
    if isinstance(x, np.ndarray) and x.flags.f_contiguous and not x.flags.c_contiguous:
        assert back.flags.f_contiguous  # uploaded and read back in its own axis order


def test_asarray_refusals(device):
    with pytest.raises(TypeError, match="gpuops.asarray: device 'cpu' is a str, not a gpuops.Device"):
        gpuops.asarray(np.zeros(3, np.float32), "cpu")
    with pytest.raises(gpuops.ValidationError, match="gpuops.asarray: x has dtype complex64; allowed: bool, "):
        gpuops.asarray(np.zeros(3, np.complex64), device)
    with pytest.raises(gpuops.ValidationError, match="gpuops.asarray: x is a numpy.ma.MaskedArray"):
        gpuops.asarray(np.ma.masked_array([1, 2], mask=[0, 1]), device)
    d = gpuops.asarray(np.zeros(3, np.float32), device)
    assert gpuops.asarray(d) is d and gpuops.asarray(d, device) is d
    other = gpuops.Device(wgpu_device=device.wgpu_device)
    with pytest.raises(gpuops.ValidationError, match=r"another gpuops.Device than device=\); gpuops does not copy"):
        gpuops.asarray(d, other)
    with pytest.raises(AttributeError, match="immutable"):
        d.shape = (4,)
    with pytest.raises(TypeError, match=r"read it back with .numpy\(\)"):
        np.asarray(d)
    with pytest.raises(TypeError, match="made by gpuops.asarray"):
        gpuops.DeviceArray()


def test_chained_calls_read_nothing_back(device, monkeypatch):
    rng = np.random.default_rng(1)
    a_host = (rng.standard_normal((64, 33)) * 100).astype(np.float32)
    b_host = (rng.standard_normal(33) * 7).astype(np.float32)
    a, b = gpuops.asarray(a_host, device), gpuops.asarray(b_host, device)
    counter = Counter(device, monkeypatch)
    remainder = gpuops.modulus_floor(a, b)
    signs = gpuops.sign(remainder)
    nans = gpuops.is_nan(gpuops.modulus_truncate(signs, b))
    assert counter.read_backs == 0
    assert counter.submits == 4  # one per call: each call's work goes in one submission
    assert type(remainder) is type(signs) is type(nans) is gpuops.DeviceArray
    assert remainder.shape == (64, 33) and remainder.dtype == np.float32
    assert nans.dtype == np.bool_ and nans.data_type == DataType.UINT8
    with np.errstate(all="ignore"):
        want = np.remainder(a_host, b_host)
        same(signs.numpy(), numpy_sign(want))
        same(nans.numpy(), np.isnan(np.fmod(numpy_sign(want), b_host)))
    same(remainder.numpy(), want)
    assert counter.read_backs == 3  # one map per .numpy()


def test_synchronize_waits_for_the_queue_without_growth(device, monkeypatch):
    """Device.synchronize(): on wgpu-native one work-done notice of the queue and nothing submitted; on Dawn one
    submission of a 4-byte copy and one mapping. No pool growth over many calls; the results of the calls before it
    are there (the queue runs in order)."""
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)
    x_host = np.float32([3, -0.0, -7, np.nan])
    x = gpuops.asarray(x_host, fresh)
    signs = gpuops.sign(x)
    fresh.synchronize()  # on Dawn the pool's staging buffer for it is made now
    created = fresh.pool.stats().created
    counter = Counter(fresh, monkeypatch)
    for _ in range(20):
        gpuops.sign(signs, out=signs)
        assert fresh.synchronize() is None
    if fresh.backend == "wgpu-native":
        assert (counter.submits, counter.read_backs, counter.work_done) == (20, 0, 20)
    else:
        assert (counter.submits, counter.read_backs) == (40, 20)
    assert fresh.pool.stats().created == created
    same(signs.numpy(), np.float32([1, 0, -1, 0]))


def test_a_buffer_its_holder_destroyed_never_goes_back_to_the_pool(device):
    """A device array's `.buffer` destroyed by the caller: when the array is collected, the pool does not take the
    buffer back, so no later call of the same size is handed a destroyed buffer."""
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)
    x = np.float32([3, -7, 0.5, -2] * 64)
    doomed = gpuops.asarray(x, fresh)
    doomed.buffer.destroy()
    idle = fresh.pool.stats().idle_buffers
    del doomed
    gc.collect()
    assert fresh.pool.stats().idle_buffers == idle  # (stats takes in what finalizers gave back)
    # A garbage cycle holding an array and its buffer may finalize the buffer first: wgpu-py releases its handle,
    # then the array's finalizer gives it back.
    released = gpuops.asarray(x, fresh).buffer
    released._release()
    fresh.pool.give_back(released)
    assert fresh.pool.stats().idle_buffers == idle
    for _ in range(3):  # each call's input of the same size: a fresh or a reused live buffer
        same(gpuops.sign(gpuops.asarray(x, fresh)).numpy(), np.sign(x))
        same(gpuops.sign(x, device=fresh), np.sign(x))


@pytest.mark.parametrize("dtype", TYPES)
def test_device_results_are_bit_exact(device, dtype):
    a_host, b_host = np.meshgrid(specials(dtype), specials(dtype), indexing="ij")
    a, b = gpuops.asarray(a_host, device), gpuops.asarray(b_host, device)
    with np.errstate(all="ignore"):
        same(gpuops.modulus_floor(a, b).numpy(), np.remainder(a_host, b_host))
        same(gpuops.modulus_truncate(a, b).numpy(), np.fmod(a_host, b_host))
    same(gpuops.sign(a).numpy(), numpy_sign(a_host))
    if dtype.startswith("float"):
        same(gpuops.is_nan(a).numpy(), np.isnan(a_host))
        same(gpuops.is_infinity(a, "negative").numpy(), np.isneginf(a_host))


def test_mixing_host_and_device_arrays(device, monkeypatch):
    a_host = np.int16([[7, -7, 30000, -1]])
    b_host = np.int16([[3], [-4]])
    b = gpuops.asarray(b_host, device)
    counter = Counter(device, monkeypatch)
    mixed = gpuops.modulus_floor(a_host, b)  # the host array is uploaded, the result stays on the device
    scalar = gpuops.modulus_truncate(b, 3)  # a Python int takes the device array's type
    assert counter.read_backs == 0
    same(mixed.numpy(), np.remainder(a_host, b_host))
    same(scalar.numpy(), np.fmod(b_host, np.int16(3)))
    backwards = np.int16([5, -6, 7, -8])[::-1]  # a device result: the reversed host view is copied, not flipped
    same(gpuops.modulus_floor(backwards, b).numpy(), np.remainder(backwards, b_host))
    # NumPy computes int16 % int8 in int16: the host int8 is converted on the host
    same(gpuops.modulus_floor(b, np.int8([5, -5])).numpy(), np.remainder(b_host, np.int8([5, -5])))
    # a device array would need converting: refused, not converted on the GPU
    with pytest.raises(gpuops.ValidationError, match=r"gpuops.modulus_floor: a is a device array of int16 and "
                                                     r"NumPy computes in float32 here; gpuops does not convert "
                                                     "device arrays on the GPU"):
        gpuops.modulus_floor(b, np.float32([1.5]))
    with pytest.raises(gpuops.ValidationError, match="b is a device array of int8 and NumPy computes in int16"):
        gpuops.modulus_floor(b, gpuops.asarray(np.int8([1]), device))
    with pytest.raises(gpuops.ValidationError, match="b=2.5 .*NumPy computes in float64"):
        gpuops.modulus_floor(b, 2.5)


def test_device_array_type_rules_and_refusals(device):
    f = gpuops.asarray(np.float32([1, np.nan, -np.inf]), device)
    flags = gpuops.asarray(np.array([True, False]), device)
    with pytest.raises(gpuops.ValidationError, match="gpuops.sign: x is a bool device array; DirectML has no "
                                                     "boolean tensors"):
        gpuops.sign(flags)
    with pytest.raises(gpuops.ValidationError, match="gpuops.is_nan: .*NumPy computes in int8; gpuops computes "
                                                     "is_nan at feature level 6_4 in float16, float32"):
        gpuops.is_nan(gpuops.asarray(np.int8([1]), device))
    with pytest.raises(gpuops.ValidationError, match=r"gpuops.sign: .*NumPy computes in float64"):
        gpuops.sign(gpuops.asarray(np.float64([1]), device))
    other = gpuops.Device(wgpu_device=device.wgpu_device)
    with pytest.raises(gpuops.ValidationError, match="gpuops.modulus_floor: b is on another gpuops.Device than a"):
        gpuops.modulus_floor(f, gpuops.asarray(np.float32([1, 2, 3]), other))
    with pytest.raises(gpuops.ValidationError, match="gpuops.sign: x is on another gpuops.Device than device="):
        gpuops.sign(f, device=other)
    with pytest.raises(gpuops.ValidationError, match=r"shapes a \(3,\) and b \(2,\) cannot be broadcast"):
        gpuops.modulus_floor(f, gpuops.asarray(np.float32([1, 2]), device))
    zero_d = gpuops.sign(gpuops.asarray(np.float32(-3), device))  # a 0-d device array, not a NumPy scalar
    assert type(zero_d) is gpuops.DeviceArray and zero_d.shape == ()
    same(zero_d.numpy(), np.array(-1, np.float32))
    empty = gpuops.is_nan(gpuops.asarray(np.zeros((2, 0), np.float16), device))
    assert type(empty) is gpuops.DeviceArray and empty.shape == (2, 0) and empty.dtype == np.bool_
    same(empty.numpy(), np.zeros((2, 0), bool))
    column = gpuops.asarray(np.int32([[7], [-7], [9]]), device)
    row = gpuops.asarray(np.int32([2, -3, 4, 5]), device)
    same(gpuops.modulus_floor(column, row).numpy(), np.remainder(np.int32([[7], [-7], [9]]), np.int32([2, -3, 4, 5])))


def test_out_with_device_arrays(device, monkeypatch):
    x_host = np.float32([[1, np.nan, -np.inf], [np.inf, -0.0, 2]])
    x = gpuops.asarray(x_host, device)
    counter = Counter(device, monkeypatch)
    out = gpuops.asarray(np.full((2, 3), 7, np.float32), device)
    assert gpuops.sign(x, out=out) is out
    assert gpuops.sign(x_host, out=out, device=device) is out  # host input into a device out: no read-back
    for dtype in (np.bool_, np.uint8):
        flags = gpuops.asarray(np.full((2, 3), 9, dtype), device)
        assert gpuops.is_infinity(x, out=flags) is flags
        same(flags.numpy(), np.isinf(x_host).astype(dtype))
    assert counter.submits == 6 and counter.maps == 2  # 4 calls, and the two .numpy() above
    same(out.numpy(), numpy_sign(x_host))
    host_out = np.empty((2, 3), np.float32)  # device inputs into a host out: read back into it
    assert gpuops.sign(x, out=host_out) is host_out
    same(host_out, numpy_sign(x_host))
    with pytest.raises(gpuops.ValidationError, match=r"out is a device array of float16 and the result is float32; "
                                                     r"the GPU does not write float16 exactly"):
        gpuops.sign(x, out=gpuops.asarray(np.zeros((2, 3), np.float16), device))
    with pytest.raises(gpuops.ValidationError, match=r"non-broadcastable output operand with shape \(3,\) doesn't "
                                                     r"match the broadcast shape \(2, 3\)"):
        gpuops.sign(x, out=gpuops.asarray(np.zeros(3, np.float32), device))
    in_place = gpuops.asarray(x_host, device)
    assert gpuops.sign(in_place, out=in_place) is in_place  # SIGN may run in place
    same(in_place.numpy(), numpy_sign(x_host))


def test_from_buffer(device):
    wgpu_device = device.wgpu_device
    buffer = wgpu_device.create_buffer(size=256, usage=USAGE)
    values = np.arange(-20, 20, dtype=np.int32)
    wgpu_device.queue.write_buffer(buffer, 32, values)
    every_other = gpuops.DeviceArray.from_buffer(device, buffer, np.int32, (4, 5), strides=(10, 2), offset=32)
    assert not every_other.owned and every_other.offset == 32 and every_other.strides == (10, 2)
    same(every_other.numpy(), values.reshape(4, 10)[:, ::2])
    # a strided out in another caller's buffer: its elements are written, the bytes between them are not
    out_buffer = wgpu_device.create_buffer(size=256, usage=USAGE)
    canary = np.full(64, 0x5A5A5A5A, np.int32)
    wgpu_device.queue.write_buffer(out_buffer, 0, canary)
    out = gpuops.DeviceArray.from_buffer(device, out_buffer, "int32", (4, 5), strides=(10, 2), offset=16)
    assert gpuops.modulus_floor(every_other, 3, out=out) is out
    got = np.frombuffer(wgpu_device.queue.read_buffer(out_buffer), np.int32)
    written = np.zeros(64, bool)
    written[4:44].reshape(4, 10)[:, ::2] = True
    same(got[written], np.remainder(values.reshape(4, 10)[:, ::2], np.int32(3)).reshape(-1))
    same(got[~written], canary[~written])
    # functions on a caller's buffer; the buffer outlives every array over it and is never destroyed by gpuops
    same(gpuops.sign(every_other).numpy(), np.sign(values.reshape(4, 10)[:, ::2]))
    del every_other, out
    gc.collect()
    same(np.frombuffer(wgpu_device.queue.read_buffer(buffer, 32, 4), np.int32), values[:1])


def test_from_buffer_refusals(device):
    wgpu_device = device.wgpu_device
    buffer = wgpu_device.create_buffer(size=64, usage=USAGE)
    from_buffer = gpuops.DeviceArray.from_buffer
    with pytest.raises(TypeError, match="from_buffer: device None is a NoneType, not a gpuops.Device"):
        from_buffer(None, buffer, np.float32, (4,))
    with pytest.raises(TypeError, match="from_buffer: buffer b'' is a bytes, not a GPUBuffer"):
        from_buffer(device, b"", np.float32, (4,))
    with pytest.raises(gpuops.ValidationError, match="offset 8; allowed: .* a multiple of 16"):
        from_buffer(device, buffer, np.float32, (4,), offset=8)
    with pytest.raises(gpuops.ValidationError, match="the array spans 68 bytes from offset 0 .* the buffer holds 64"):
        from_buffer(device, buffer, np.float32, (17,))
    with pytest.raises(gpuops.ValidationError, match="spans 24 bytes from offset 48"):
        from_buffer(device, buffer, np.float32, (2, 2), strides=(4, 1), offset=48)
    with pytest.raises(gpuops.ValidationError, match="dtype complex64"):
        from_buffer(device, buffer, np.complex64, (2,))
    with pytest.raises(gpuops.ValidationError, match="dtype >f4 .*in the machine's byte order"):
        from_buffer(device, buffer, ">f4", (2,))
    with pytest.raises(gpuops.ValidationError, match="strides .* has 1 entries and shape"):
        from_buffer(device, buffer, np.float32, (2, 2), strides=(1,))
    with pytest.raises(gpuops.ValidationError, match=r"shape \(2, -1\); allowed: a sequence of integers"):
        from_buffer(device, buffer, np.float32, (2, -1))
    with pytest.raises(gpuops.ValidationError, match=r"strides \(1.5,\); allowed"):
        from_buffer(device, buffer, np.float32, (2,), strides=(1.5,))
    mappable = wgpu_device.create_buffer(size=64, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    with pytest.raises(gpuops.ValidationError, match="lacks wgpu.BufferUsage.STORAGE"):
        from_buffer(device, mappable, np.float32, (4,))
    unreadable = wgpu_device.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE)
    with pytest.raises(gpuops.ValidationError, match="lacks wgpu.BufferUsage.COPY_SRC: it cannot be read back"):
        from_buffer(device, unreadable, np.float32, (4,)).numpy()
    overlapping = from_buffer(device, buffer, np.float32, (8,), offset=0)
    with pytest.raises(gpuops.ValidationError, match=r"^gpuops.sign: .*partially overlap"):
        gpuops.sign(overlapping, out=from_buffer(device, buffer, np.float32, (8,), offset=16))


def test_pool_keeps_what_calls_side_by_side_had_lent_at_once(device):
    """Two calls under way at once (threads, a Dask worker's tasks) hold more buffers together than the bounds: each
    gives its set back, and the pool keeps both, since that many were in use at once; so the next two calls make
    nothing new. One call alone never raises the bound."""
    pool_ = pool.BufferPool(max_idle_bytes=3 * 4096, max_idle_buffers=64)
    first = [pool_.acquire(device, pool.STORAGE, 4096) for _ in range(3)]
    second = [pool_.acquire(device, pool.STORAGE, 4096) for _ in range(3)]
    assert (pool_.peak_lent_bytes, pool_.peak_lent_buffers) == (6 * 4096, 6)
    pool_.release(*first)
    pool_.release(*second)
    assert (pool_.stats().idle_buffers, pool_.stats().destroyed) == (6, 0)
    made = pool_.stats().created
    again = [pool_.acquire(device, pool.STORAGE, 4096) for _ in range(6)]
    assert pool_.stats().created == made
    pool_.release(*again)
    pool_.clear()


def test_pool_bounds():
    pool_ = pool.BufferPool(max_idle_bytes=4096, max_idle_buffers=3)
    assert pool.size_class(1, 1 << 30) == pool.MIN_BUFFER_BYTES
    assert pool.size_class(257, 1 << 30) == 512 and pool.size_class(4096, 1 << 30) == 4096
    assert pool.size_class(3000, 2048) == 3008  # past the device's largest buffer: no rounding up to a power

    class Buffer:
        def __init__(self, size):
            self.size, self.usage, self.destroyed = size, int(wgpu.BufferUsage.STORAGE), False

        def destroy(self):
            self.destroyed = True

    buffers = [Buffer(1024) for _ in range(5)]
    for b in buffers:
        pool_.release(b)
    stats = pool_.stats()
    assert (stats.idle_buffers, stats.idle_bytes, stats.destroyed) == (3, 3072, 2)
    assert [b.destroyed for b in buffers] == [True, True, False, False, False]  # the least recently given back
    pool_.release(Buffer(2048))  # 5120 bytes: over the byte bound, the oldest goes
    assert pool_.stats().idle_bytes == 4096 and buffers[2].destroyed
    huge = Buffer(8192)
    pool_.give_back(huge)  # past the byte bound alone: kept, as the last set given back, and the others go
    stats = pool_.stats()
    assert (stats.idle_buffers, stats.idle_bytes) == (1, 8192) and not huge.destroyed
    batch = [Buffer(2048) for _ in range(4)]  # one call's buffers, past both bounds together: all kept
    pool_.release(*batch)
    stats = pool_.stats()
    assert (stats.idle_buffers, stats.idle_bytes) == (4, 8192) and huge.destroyed
    assert not any(b.destroyed for b in batch)
    pool_.release(Buffer(256))  # the next one pushes the set out down to the bounds
    stats = pool_.stats()
    assert (stats.idle_buffers, stats.idle_bytes, stats.destroyed) == (2, 2304, 10)  # 3 + 3 + 1 + 3
    assert [b.destroyed for b in batch] == [True, True, True, False]


def test_pool_reuse_without_growth(device, monkeypatch):
    """10,000 calls of varying shapes, types, host and device arrays: the pool makes its buffers in the first round
    and none after; once the binding tables of the buffer combinations that recur are made (a few rounds), no wgpu
    buffer at all is made. A caller's cached DirectML-level plan on the same Device stays cached throughout."""
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)  # its own, empty pool
    f32 = gpuops.TensorDesc(DataType.FLOAT32, (4,))
    dml_sign = fresh.compile(gpuops.SignDesc(f32, f32))
    caller_buffer = device.wgpu_device.create_buffer_with_data(data=np.float32([2, -3, 0, 1]), usage=USAGE)
    caller_bindings = {"input_tensor": gpuops.Binding(caller_buffer), "output_tensor": gpuops.Binding(caller_buffer)}
    dml_sign.execute(caller_bindings)
    dml_plans = list(fresh._plans)
    assert len(dml_plans) == 1
    rng = np.random.default_rng(5)
    shapes = [(1,), (3,), (17,), (64,), (5, 7), (3, 1, 4), (129,), (8, 8), (2, 3, 2, 3)]
    cases = []
    for shape in shapes:
        for dtype in ("float32", "int8", "uint16", "float16"):
            a = rng.choice(specials(dtype), shape)
            b = rng.choice(specials(dtype), shape)
            cases.append((a, b))
    buffer_type = type(device.wgpu_device)
    create_buffer = buffer_type.create_buffer
    created = []
    monkeypatch.setattr(buffer_type, "create_buffer",
                        lambda self, **kwargs: created.append(kwargs.get("size")) or create_buffer(self, **kwargs))

    on_device = [gpuops.asarray(a, fresh) for a, _ in cases]
    held = api.pool_of(fresh).stats().created  # one buffer per array above, theirs while they live
    assert held == len(cases)

    def one(i: int, check: bool) -> None:
        a, b = cases[i % len(cases)]
        kind = (i // len(cases)) % 3
        if kind == 0:
            with np.errstate(all="ignore"):  # the cases' zero divisors report as np.fmod's do
                got = gpuops.modulus_truncate(a, b, device=fresh)
        elif kind == 1:
            got = gpuops.modulus_floor(on_device[i % len(cases)], b)  # dropped at once unless checked
        else:
            got = gpuops.sign(on_device[i % len(cases)])
        if check:
            with np.errstate(all="ignore"):
                want = (np.fmod(a, b), np.remainder(a, b), numpy_sign(a))[kind]
            same(got if kind == 0 else got.numpy(), want)

    period = 3 * len(cases)  # every case of every kind once
    for i in range(period):
        one(i, check=True)
    made = api.pool_of(fresh).stats().created
    assert made - held <= 16  # a few buffers per size class, not one per call
    for i in range(period, 4 * period):
        one(i, check=False)
    assert api.pool_of(fresh).stats().created == made
    created.clear()
    for i in range(10_000):
        one(i, check=i % 997 == 0)
    stats = api.pool_of(fresh).stats()
    assert stats.created == made and stats.destroyed == 0
    assert list(fresh._plans) == dml_plans  # the NumPy-level calls never entered the DirectML-level plan cache
    dml_sign.execute(caller_bindings)  # and it runs from that plan, making nothing
    assert created == []  # no wgpu buffer at all: uniforms and bind groups come from the kept binding tables
    assert np.frombuffer(fresh.read_buffer(caller_buffer), np.float32).tolist() == [1, -1, 0, 1]
    assert stats.idle_buffers <= pool.MAX_IDLE_BUFFERS and stats.idle_bytes <= pool.MAX_IDLE_BYTES


def test_a_refused_device_array_leaves_no_error_behind(monkeypatch):
    """DeviceArray() is refused before any slot is set: its collection gives nothing back and raises nothing."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with pytest.raises(TypeError, match="made by gpuops.asarray"):
        gpuops.DeviceArray()
    gc.collect()
    assert unraisable == []


def test_device_array_buffers_return_to_the_pool(device):
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)
    x = gpuops.asarray(np.float32([1, -2, 3]), fresh)
    for _ in range(50):
        gpuops.sign(gpuops.sign(x))  # results dropped at once: their buffers are reused
    assert api.pool_of(fresh).stats().created <= 4
    kept = [gpuops.sign(x) for _ in range(5)]  # live arrays keep theirs
    assert len({id(k.buffer) for k in kept}) == 5


def test_threads(device, dropped_devices_released):
    """8 threads x 200 calls on one device, host and device arrays, every result checked."""
    failures: list[str] = []
    rng = np.random.default_rng(9)
    inputs = [rng.choice(specials(t), (int(rng.integers(1, 40)), int(rng.integers(1, 5)))) for t in
              ("float32", "int16", "float16", "uint8")]

    def work(seed: int) -> None:
        local = random.Random(seed)
        try:
            for _ in range(200):
                a = local.choice(inputs)
                b = a[::-1].copy()
                choice = local.randrange(4)
                with np.errstate(all="ignore"):
                    if choice == 0:
                        same(gpuops.modulus_floor(a, b, device=device), np.remainder(a, b))
                    elif choice == 1:
                        same(gpuops.sign(gpuops.asarray(a, device)).numpy(), numpy_sign(a))
                    elif choice == 2:
                        same(gpuops.modulus_truncate(gpuops.asarray(a, device), b).numpy(), np.fmod(a, b))
                    else:
                        out = np.empty_like(a)
                        gpuops.sign(a, out=out, device=device)
                        same(out, numpy_sign(a))
        except Exception as exc:  # reported by the main thread
            failures.append(f"thread {seed}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_benchmark_script_runs_at_tiny_sizes(tmp_path):
    script = Path(__file__).resolve().parent.parent / "bench" / "numpy_level.py"
    spec = importlib.util.spec_from_file_location("bench_numpy_level", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no argument parsing at import
    path = tmp_path / "numpy_level.json"
    document = module.main(["--sizes", "256", "2^10", "--iterations", "2", "--warmup", "1", "--skip-calibration",
                            "--all-types", "--types-size", "64", "--json", str(path)])
    assert json.loads(path.read_text()) == json.loads(json.dumps(document))
    assert document["schema"] == "gpuops-numpy-level/1"
    calls = [c for c in document["cases"] if "floor" in c]
    chains = [c for c in document["cases"] if "chain" in c]
    assert len(calls) == 2 * 2 + 2 * len(TYPES) and len(chains) == 2
    for case in calls + chains:
        assert case["exact"], case
    for case in calls:
        assert case["ratios"]["gpuops"] > 0 and case["floor"]["median_ns"] > 0
        assert case["floor"]["median_ns"] == min(case["floor_write"]["median_ns"], case["floor_mapped"]["median_ns"])
    assert module.parse_size("2^22") == module.parse_size("2**22") == 1 << 22
