"""Arrays that stay on the GPU: gpuops.DeviceArray, made by gpuops.asarray or DeviceArray.from_buffer.

The NumPy-level functions take device arrays and give device arrays (see gpuops/api.py): chained calls then move
no data between host and device until `.numpy()` reads a result back. A device array is a tensor in a wgpu buffer
(its dtype, shape, element strides and byte offset) on one gpuops.Device; `.binding` and `.desc` hand it to the
DirectML-level API as a gpuops.Binding and a gpuops.TensorDesc.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from .binding import Binding
from .device import Device
from .enums import DataType, integer_value
from .errors import ValidationError, shown
from .layout import span_in_bytes
from .numpy_types import refuse_subclass
from .pool import STORAGE, pool_of, read_back, upload
from .tensor import MINIMUM_BUFFER_TENSOR_ALIGNMENT, TensorDesc, packed_strides


def storage_type(dtype: np.dtype) -> DataType | None:
    """The DataType a device array of `dtype` holds: bool arrays hold UINT8 bytes (0 and 1); None when DirectML has
    no such type."""
    if dtype == np.bool_:
        return DataType.UINT8
    data_type = DataType.from_numpy(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)
    return data_type if data_type not in (None, DataType.UINT4, DataType.INT4) else None


def host_bytes(view: np.ndarray) -> np.ndarray:
    """The bytes from a view's first element to its last, as they lie in memory (strides all >= 0)."""
    span = sum((n - 1) * s for n, s in zip(view.shape, view.strides)) + view.itemsize
    pointer = view.__array_interface__["data"][0]
    return np.ctypeslib.as_array((ctypes.c_ubyte * span).from_address(pointer))


def empty_in_order(shape: tuple[int, ...], strides: tuple[int, ...], dtype) -> np.ndarray:
    """A new packed array whose axes lie in memory in the order of `strides` (largest outermost; ties keep C order),
    so that copying a view of that layout into it is one linear pass."""
    order = sorted(range(len(shape)), key=lambda axis: -strides[axis])
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return np.empty([shape[axis] for axis in order], dtype).transpose(inverse)


_DTYPES = "bool, float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32 or uint64"


class DeviceArray:
    """An array in a gpuops Device's memory (a region of a wgpu buffer).

    `dtype` is a NumPy dtype (bool arrays hold one byte per element, 0 or 1: DirectML's UINT8); `shape` as NumPy's;
    `strides` in elements, as DirectML's (all >= 0; zero strides broadcast); `offset` in bytes (a multiple of 16).
    Immutable: the functions write into one only when it is passed as out=.

    A device array made by gpuops owns its buffer: the buffer is reused by gpuops (returned to the device's pool)
    once the array is garbage-collected, so keep the array alive while you use its `.buffer` or `.binding`
    elsewhere. One made by `from_buffer` is a view of the caller's buffer, never destroyed or reused by gpuops.
    """

    __slots__ = ("_device", "_buffer", "_dtype", "_shape", "_strides", "_offset", "_owned", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("gpuops.DeviceArray is made by gpuops.asarray(array, device=...), by "
                        "gpuops.DeviceArray.from_buffer(device, buffer, dtype, shape, ...) or by the functions")

    @classmethod
    def _wrap(cls, device: Device, buffer, dtype: np.dtype, shape: tuple[int, ...], strides: tuple[int, ...],
              offset: int, owned: bool) -> DeviceArray:
        """A device array over checked values; `owned`: `buffer` is from the device's pool, and goes back to it
        when the array is collected."""
        self = object.__new__(cls)
        for name, value in (("_device", device), ("_buffer", buffer), ("_dtype", dtype), ("_shape", shape),
                            ("_strides", strides), ("_offset", offset), ("_owned", owned)):
            object.__setattr__(self, name, value)
        return self

    def __del__(self) -> None:
        # Unlike weakref.finalize, nothing to set up per array. It may run in any thread, inside the garbage
        # collector: give_back only queues the buffer. (An instance whose __init__ refused has no slots set.)
        if getattr(self, "_owned", False):
            self._device.pool.give_back(self._buffer)

    @classmethod
    def from_buffer(cls, device: Device, buffer, dtype, shape, strides=None, offset: int = 0) -> DeviceArray:
        """A device array over the caller's wgpu `buffer` (which needs STORAGE usage, and COPY_SRC for `.numpy()`):
        `dtype` a NumPy dtype (bool: one byte per element, 0 or 1), `shape` its sizes, `strides` in elements (None:
        packed row-major), `offset` in bytes (a multiple of 16). gpuops never destroys the buffer."""
        where = "gpuops.DeviceArray.from_buffer"
        if not isinstance(device, Device):
            raise TypeError(f"{where}: device {shown(device)} is a {type(device).__name__}, not a gpuops.Device")
        if not isinstance(buffer, device.wgpu.GPUBuffer):
            raise TypeError(f"{where}: buffer {shown(buffer)} is a {type(buffer).__name__}, not a GPUBuffer of "
                            f"{device.wgpu.__name__}")
        if getattr(buffer, "_device", device.wgpu_device) is not device.wgpu_device:
            raise ValidationError(f"{where}: buffer belongs to another wgpu device than device's "
                                  f"({device.adapter_name})")
        if not buffer.usage & device.wgpu.BufferUsage.STORAGE:
            raise ValidationError(f"{where}: buffer's usage {int(buffer.usage)} lacks wgpu.BufferUsage.STORAGE")
        try:
            numpy_dtype = np.dtype(dtype)
        except TypeError:
            raise ValidationError(f"{where}: dtype {shown(dtype)} is not a NumPy dtype; allowed: {_DTYPES}") from None
        if storage_type(numpy_dtype) is None or not numpy_dtype.isnative:
            raise ValidationError(f"{where}: dtype {numpy_dtype} (byte order {numpy_dtype.byteorder!r}); allowed: "
                                  f"{_DTYPES}, in the machine's byte order")
        sizes = _integers(where, "shape", shape)
        if strides is None:
            element_strides = packed_strides(sizes)
        else:
            element_strides = _integers(where, "strides", strides)
            if len(element_strides) != len(sizes):
                raise ValidationError(f"{where}: strides {shown(strides)} has {len(element_strides)} entries and "
                                      f"shape {sizes} {len(sizes)}; one stride per dimension")
        start = integer_value(offset)
        if start is None or start < 0 or start % MINIMUM_BUFFER_TENSOR_ALIGNMENT:
            raise ValidationError(f"{where}: offset {shown(offset)}; allowed: an integer of at least 0, a multiple of "
                                  f"{MINIMUM_BUFFER_TENSOR_ALIGNMENT} (DirectML's binding alignment)")
        needed = _span(sizes, element_strides, numpy_dtype.itemsize)
        if start + -(-needed // 4) * 4 > buffer.size:
            raise ValidationError(f"{where}: the array spans {needed} bytes from offset {start} (rounded up to 4 "
                                  f"bytes); the buffer holds {buffer.size}")
        return cls._wrap(device, buffer, numpy_dtype, sizes, element_strides, start, False)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def buffer(self):
        """The wgpu buffer the array lies in (see the class docstring for how long it is the array's)."""
        return self._buffer

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def strides(self) -> tuple[int, ...]:
        """In elements, as DirectML's (NumPy's are in bytes)."""
        return self._strides

    @property
    def offset(self) -> int:
        """The first element's byte offset in the buffer."""
        return self._offset

    @property
    def owned(self) -> bool:
        """True when gpuops made the buffer (it reuses it once the array is collected); False for from_buffer."""
        return self._owned

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def data_type(self) -> DataType:
        """DirectML's type of the elements (UINT8 for bool)."""
        return storage_type(self._dtype)

    @property
    def desc(self) -> TensorDesc:
        """The array as a DirectML tensor (a 0-d array as one element of one dimension)."""
        return TensorDesc(self.data_type, self._shape or (1,), self._strides or (1,))

    @property
    def binding(self) -> Binding:
        """The array's region of its buffer, for the DirectML-level API with `.desc`: from its offset to its last
        element's end (rounded up to 16 bytes where the array's own buffer has them, else to 4)."""
        return Binding(*self._region())

    def _region(self) -> tuple[object, int, int]:
        """(buffer, offset, size) of `.binding`, without making a Binding."""
        return self._buffer, self._offset, self._binding_size()

    def _binding_size(self) -> int:
        span = _span(self._shape, self._strides, self.itemsize)
        if self._owned:  # the pool's buffers were made at least this large
            return -(-span // 16) * 16
        return -(-span // 4) * 4

    def numpy(self) -> np.ndarray:
        """The array read back into a new NumPy array (packed, in the axis order of its strides)."""
        where = "gpuops.DeviceArray.numpy"
        result = empty_in_order(self._shape, self._strides, self._dtype)
        if result.size == 0:
            return result
        device = self._device
        if not self._buffer.usage & device.wgpu.BufferUsage.COPY_SRC:
            raise ValidationError(f"{where}: the buffer's usage {int(self._buffer.usage)} lacks "
                                  "wgpu.BufferUsage.COPY_SRC: it cannot be read back")
        itemsize = self.itemsize
        span = _span(self._shape, self._strides, itemsize)
        byte_strides = tuple(s * itemsize for s in self._strides)
        target = result.view(np.uint8) if self._dtype == np.bool_ else result
        source_type = target.dtype

        def fill(mapped: memoryview) -> None:
            elements = np.frombuffer(mapped, source_type, span // itemsize)
            device.host_copies.copy(target, np.lib.stride_tricks.as_strided(elements, self._shape, byte_strides,
                                                                           writeable=False))

        read_back(device, pool_of(device), None, self._buffer, self._offset, span, fill, where,
                  uses=[(where, None, self._buffer)])
        return result

    def __array__(self, dtype=None, copy=None):
        raise TypeError("gpuops.DeviceArray is on the GPU: read it back with .numpy() (NumPy does not convert it "
                        "implicitly, so that no read-back happens unasked)")

    def __setattr__(self, name, value):
        raise AttributeError(f"gpuops.DeviceArray is immutable: {name} cannot be set")

    def __delattr__(self, name):
        raise AttributeError(f"gpuops.DeviceArray is immutable: {name} cannot be deleted")

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d gpuops.DeviceArray")
        return self._shape[0]

    def __repr__(self) -> str:
        layout = "" if self._strides == packed_strides(self._shape) else f", strides={self._strides}"
        return (f"gpuops.DeviceArray(shape={self._shape}, dtype={self._dtype}{layout}, "
                f"device={self._device.adapter_name!r})")


def _span(sizes: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> int:
    """Bytes from the first element to the last element's end (0 for an empty array)."""
    return 0 if math.prod(sizes) == 0 else span_in_bytes(sizes, strides, itemsize)


def _integers(where: str, name: str, values) -> tuple[int, ...]:
    try:
        items = tuple(values)
    except TypeError:
        items = None
    numbers = None if items is None or isinstance(values, (str, bytes)) else tuple(integer_value(v) for v in items)
    if numbers is None or any(n is None or n < 0 for n in numbers):
        raise ValidationError(f"{where}: {name} {shown(values)}; allowed: a sequence of integers of at least 0")
    return numbers


def asarray(x, device: Device | None = None) -> DeviceArray:
    """`x` on the GPU: a NumPy array (or anything np.asarray takes) is uploaded to `device` (the default device when
    None), in its own axis order; a DeviceArray on that device is returned as it is. The dtype is x's (bool
    included: one byte per element), never converted; a non-native byte order is made native (same values)."""
    where = "gpuops.asarray"
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"{where}: device {shown(device)} is a {type(device).__name__}, not a gpuops.Device; pass a "
                        "gpuops.Device, or None for the default device")
    if isinstance(x, DeviceArray):
        if device is None or device is x.device:
            return x
        raise ValidationError(f"{where}: x is on {x.device.adapter_name!r} (another gpuops.Device than device=); "
                              "gpuops does not copy between devices: pass x.numpy() to move it through the host")
    refuse_subclass(where, "x", x)
    try:
        array = np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"{where}: x {shown(x)} is not an array NumPy can make: {exc}") from None
    if storage_type(array.dtype) is None:
        raise ValidationError(f"{where}: x has dtype {array.dtype}; allowed: {_DTYPES}")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))  # the same values in the machine's byte order
    if device is None:
        from . import default_device  # where the package exports it

        device = default_device()
    itemsize = array.itemsize
    dense = all(s >= 0 and s % itemsize == 0 for s in array.strides) and \
        _span(array.shape, tuple(s // itemsize for s in array.strides), itemsize) == array.nbytes
    if not dense:  # gaps, negative or zero strides: a packed copy in the same axis order
        array = array.copy(order="K")
    strides = tuple(s // itemsize for s in array.strides)
    pool = pool_of(device)
    with device._lock, device.explained(where, "uploading an array"):
        if array.size == 0:
            buffer = pool.acquire(device, STORAGE, 16)
        else:
            encoder = device.wgpu_device.create_command_encoder()
            buffer, staging = upload(device, pool, host_bytes(array), encoder, what=where)
            if staging is not None:  # a large array: its copy from the mapped upload buffer runs now
                device.submit(encoder, where)
                pool.release(staging)
    return DeviceArray._wrap(device, buffer, array.dtype, array.shape, strides, 0, True)
