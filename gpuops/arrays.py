"""Arrays that stay on the GPU: gpuops.DeviceArray, made by gpuops.asarray or DeviceArray.from_buffer.

The NumPy-level functions take device arrays and give device arrays (see gpuops/api.py): chained calls then move
no data between host and device until `.numpy()` reads a result back. A device array is a tensor in a wgpu buffer
(its dtype, shape, element strides and byte offset) on one gpuops.Device; `.binding` and `.desc` hand it to the
DirectML-level API as a gpuops.Binding and a gpuops.TensorDesc.

NumPy code can use them as far as gpuops runs them, and no further; nothing is read back unasked:
- The five ufuncs gpuops runs (np.sign, np.isnan, np.isinf, np.remainder / np.mod and its `%`, np.fmod) run on the
  GPU through `__array_ufunc__` when a device array is among their operands or out=, and give device arrays; any
  other ufunc, and any ufunc method (reduce, accumulate, outer, at, ...), is a TypeError naming those five.
- Basic indexing (integers, slices with positive steps, None, ...), `.T`, `.transpose()` and `.reshape()` give
  views of the same buffer, never copies: DirectML's strides are unsigned, so a negative step is refused, and so
  is a reshape that only a copy could give. A view starts at any whole element of the buffer (the NumPy-level
  functions run it there); its `.binding`, for the DirectML-level API, needs DirectML's 16-byte offset alignment.
- `np.asarray(d)`, `==` and (beyond one element) `bool()` are refused with errors that point at `.numpy()`, the
  one explicit read-back; pickling reads the values back and rebuilds the array on the default device of the
  process that unpickles it.
"""

from __future__ import annotations

from collections.abc import Callable
import ctypes
import math

import numpy as np

from .binding import Binding
from .device import Device, default_device
from .enums import DataType, integer_value
from .errors import ValidationError, shown
from .layout import span_in_bytes
from .numpy_types import refuse_subclass
from .pool import STORAGE, fill_upload, pool_of, read_back, upload, uploads_mapped
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
    `strides` in elements, as DirectML's (all >= 0; zero strides broadcast); `offset` in bytes (a multiple of 16,
    or for a view any whole number of elements). Immutable: the functions write into one only when it is passed as
    out= (a view passed as out= writes its elements in its base's buffer, and nothing between them).

    A device array made by gpuops owns its buffer: the buffer is reused by gpuops (returned to the device's pool)
    once the array and every view of it are garbage-collected, so keep the array alive while you use its `.buffer`
    or `.binding` elsewhere. One made by `from_buffer` is a view of the caller's buffer, never destroyed or reused
    by gpuops.

    With NumPy (see the module docstring): `np.sign(d)`, `np.isnan(d)`, `np.isinf(d)`, `np.remainder(d, 3)` (or
    `d % 3`) and `np.fmod(d, 3)` run the gpuops functions (np.sign follows gpuops' SIGN: NaN and -0 give +0);
    `d[1:, ::2]`, `d.T`, `d.reshape(-1)` are views; `len`, `size`, `ndim`, `nbytes`, `itemsize` are NumPy's. `repr`
    shows the layout, never the values: print `d.numpy()` for those.
    """

    __slots__ = ("_device", "_buffer", "_dtype", "_shape", "_strides", "_offset", "_owned", "_base", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("gpuops.DeviceArray is made by gpuops.asarray(array, device=...), by "
                        "gpuops.DeviceArray.from_buffer(device, buffer, dtype, shape, ...) or by the functions")

    @classmethod
    def _wrap(cls, device: Device, buffer, dtype: np.dtype, shape: tuple[int, ...], strides: tuple[int, ...],
              offset: int, owned: bool, base: DeviceArray | None = None) -> DeviceArray:
        """A device array over checked values; `owned`: `buffer` is from the device's pool, and goes back to it
        when the array that holds it (`base`, or this array where `base` is None) is collected."""
        self = object.__new__(cls)
        for name, value in (("_device", device), ("_buffer", buffer), ("_dtype", dtype), ("_shape", shape),
                            ("_strides", strides), ("_offset", offset), ("_owned", owned), ("_base", base)):
            object.__setattr__(self, name, value)
        return self

    @classmethod
    def of_pooled_buffer(cls, device: Device, buffer, dtype: np.dtype, shape: tuple[int, ...],
                         strides: tuple[int, ...]) -> DeviceArray:
        """A device array at the start of `buffer`, taken from `device.pool`, which it gives back when collected:
        the NumPy-level functions' results and uploads."""
        return cls._wrap(device, buffer, dtype, shape, strides, 0, True)

    def __del__(self) -> None:
        # Unlike weakref.finalize, nothing to set up per array. It may run in any thread, inside the garbage
        # collector: give_back only queues the buffer. (An instance whose __init__ refused has no slots set.) A view
        # keeps its base alive, so the base is collected last.
        if getattr(self, "_owned", False) and self._base is None:
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
        """The first element's byte offset in the buffer: a multiple of 16, or for a view any whole number of
        elements."""
        return self._offset

    @property
    def owned(self) -> bool:
        """True when gpuops made the buffer (it reuses it once the array and its views are collected); False for
        from_buffer and its views."""
        return self._owned

    @property
    def base(self) -> DeviceArray | None:
        """The array this one is a view of (the one made by asarray, from_buffer or a function), as NumPy's: None
        when the array is not a view."""
        return self._base

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
    def nbytes(self) -> int:
        """The elements' bytes (size x itemsize), as NumPy's: not the span of a strided view."""
        return self.size * self._dtype.itemsize

    @property
    def data_type(self) -> DataType:
        """DirectML's type of the elements (UINT8 for bool)."""
        return storage_type(self._dtype)

    @property
    def desc(self) -> TensorDesc:
        """The array as a DirectML tensor (a 0-d array as one element of one dimension), its first element bound
        at `.binding`'s offset."""
        return TensorDesc(self.data_type, self._shape or (1,), self._strides or (1,))

    @property
    def binding(self) -> Binding:
        """The array's region of its buffer, for the DirectML-level API with `.desc`: from its offset to its last
        element's end (rounded up to 16 bytes where the array's own buffer has them, else to 4). DirectML binds
        at multiples of 16 bytes: a view that starts elsewhere (d[1:] of float32 starts 4 bytes in) is refused
        (the NumPy-level functions run it where it lies)."""
        if self._offset % MINIMUM_BUFFER_TENSOR_ALIGNMENT:
            raise ValidationError(f"gpuops.DeviceArray.binding: this view starts at byte {self._offset} of its "
                                  f"buffer, not a multiple of {MINIMUM_BUFFER_TENSOR_ALIGNMENT} (DirectML's binding "
                                  "alignment); bind its base (.base.binding, with a TensorDesc whose strides reach "
                                  "the view's elements), or a copy: gpuops.asarray(view.numpy())")
        return Binding(*self.region())

    def region(self) -> tuple[object, int, int]:
        """(buffer, offset, size) of the array's elements, as `.binding` without its alignment rule: the NumPy-level
        functions bind views at any whole element."""
        return self._buffer, self._offset, self._binding_size()

    def _binding_size(self) -> int:
        span = _span(self._shape, self._strides, self.itemsize)
        # The pool's buffers were made at least this large; up to the buffer's end for a view that ends near it.
        rounded = -(-span // 16) * 16 if self._owned else -(-span // 4) * 4
        return min(rounded, self._buffer.size - self._offset)

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
        lead = self._offset % 4  # buffer copies move whole words: a view may start inside one

        def fill(mapped: memoryview) -> None:
            elements = np.frombuffer(mapped, source_type, span // itemsize, offset=lead)
            device.host_copies.copy(target, np.lib.stride_tricks.as_strided(elements, self._shape, byte_strides,
                                                                           writeable=False))

        read_back(device, pool_of(device), None, self._buffer, self._offset - lead, lead + span, fill, where,
                  uses=[(where, None, self._buffer)])
        return result

    def __array__(self, dtype=None, copy=None):
        raise TypeError("gpuops.DeviceArray is on the GPU: read it back with .numpy() (NumPy does not convert it "
                        "implicitly, so that no read-back happens unasked)")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """np.sign, np.isnan, np.isinf, np.remainder (np.mod) and np.fmod with a device array among the operands or
        out=: the gpuops function, on the GPU, with every keyword passed on as given (out= as an array, from
        NumPy's 1-tuple). Another type that overrides ufuncs among them decides instead (NEP 13)."""
        function = UFUNC_FUNCTIONS.get(ufunc) if method == "__call__" else None
        if function is None:
            called = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
            raise TypeError(f"{called} on a gpuops.DeviceArray: gpuops runs np.sign, np.isnan, np.isinf, "
                            "np.remainder (np.mod) and np.fmod, called as functions, on device arrays; for the rest "
                            "of NumPy read the arrays back with .numpy()")
        out = kwargs.get("out", ())
        for value in (*inputs, *out):
            kind = type(value)
            if kind is not DeviceArray and getattr(kind, "__array_ufunc__", None) not in (None, _NDARRAY_UFUNC):
                return NotImplemented
        if out:
            (kwargs["out"],) = out  # NumPy passes out= as a tuple: these ufuncs have one output
        return function(*inputs, **kwargs)

    def __mod__(self, other):
        return np.remainder(self, other)

    def __rmod__(self, other):
        return np.remainder(other, self)

    def __imod__(self, other):
        return np.remainder(self, other, out=self)

    def __getitem__(self, key) -> DeviceArray:
        """NumPy's basic indexing (integers, slices, None, ...) as a view of the same buffer: d[0] is a 0-d device
        array where NumPy gives a scalar (read it back with .numpy()). Steps must be positive (DirectML's strides
        are unsigned); integer and boolean arrays (NumPy's copying, advanced indexing) are refused."""
        items = key if type(key) is tuple else (key,)
        where = f"gpuops.DeviceArray[{', '.join(map(_index_text, items))}]"
        for item in items:
            if not (item is None or item is Ellipsis or type(item) is slice or integer_value(item) is not None):
                raise ValidationError(f"{where}: device arrays take basic indexing only (integers, slices, None, "
                                      f"...), which gives views, and {shown(item)} is none of these; NumPy's "
                                      "indexing by arrays or bools copies: read the array back with .numpy() for it")
        if not any(item is Ellipsis for item in items):
            items += (Ellipsis,)  # a view even where every axis takes an integer (NumPy then gives a scalar)
        stand_in = layout_stand_in(self)
        try:
            view = stand_in[items]
        except (IndexError, TypeError, ValueError) as exc:  # NumPy's own refusals, as NumPy words them
            raise type(exc)(f"{where}: {exc}") from None
        return self._view(where, stand_in, view)

    @property
    def T(self) -> DeviceArray:
        """The axes reversed, as a view (NumPy's .T)."""
        return self.transpose()

    def transpose(self, *axes) -> DeviceArray:
        """The axes permuted as NumPy's transpose (reversed when none are given), as a view."""
        where = "gpuops.DeviceArray.transpose"
        stand_in = layout_stand_in(self)
        try:
            view = stand_in.transpose(*axes)
        except (TypeError, ValueError) as exc:  # (NumPy's AxisError is a ValueError)
            raise type(exc)(f"{where}: {exc}") from None
        return self._view(where, stand_in, view)

    def reshape(self, *shape, order: str = "C") -> DeviceArray:
        """NumPy's reshape (a shape or its sizes, one of them -1 at most; order 'C', 'F' or 'A') as a view, where
        the layout allows one; a reshape that only a copy could give (d.T.reshape(-1)) is refused, as gpuops does
        not copy on the GPU."""
        where = "gpuops.DeviceArray.reshape"
        new_shape = shape[0] if len(shape) == 1 else shape
        try:
            # NumPy's checks and the -1 filled in, on an array of this shape that any shape views (zero strides)
            checked = np.broadcast_to(np.empty((), self._dtype), self._shape).reshape(new_shape, order=order).shape
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{where}: {exc}") from None
        stand_in = layout_stand_in(self)
        view = _reshaped_view(stand_in, checked, order)
        if view is None:
            raise ValidationError(f"{where}: shape {self._shape} with strides {self._strides} (elements) cannot "
                                  f"be viewed as shape {checked} in order {order!r}: that takes a copy, and gpuops "
                                  "makes views only; read it back (.numpy().reshape(...)) and upload that "
                                  "(gpuops.asarray)")
        return self._view(where, stand_in, view)

    def _view(self, where: str, stand_in: np.ndarray, view: np.ndarray) -> DeviceArray:
        """The device array that `view`, a view of `stand_in` (layout_stand_in(self)), describes: the same
        buffer, the view's shape, strides and first element."""
        itemsize = self.itemsize
        strides = []
        for axis, (size, stride) in enumerate(zip(view.shape, view.strides)):
            if stride < 0 and size > 1:
                raise ValidationError(f"{where}: the view steps backwards along its axis {axis}; DirectML's strides "
                                      "are unsigned, so device arrays step forwards only (index with positive "
                                      "steps, or read back with .numpy() and flip on the host)")
            strides.append(max(stride, 0) // itemsize)  # (along one element, a step backwards moves nowhere)
        offset = self._offset
        if view.size:
            offset += view.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
        base = self if self._base is None else self._base
        return DeviceArray._wrap(self._device, self._buffer, self._dtype, view.shape, tuple(strides), offset,
                                 self._owned, base)

    def __bool__(self) -> bool:
        """NumPy's truth value: one element is read back; more than one is ambiguous (ValueError, as NumPy's)."""
        if self.size > 1:
            raise ValueError("The truth value of a gpuops.DeviceArray with more than one element is ambiguous (as "
                             "NumPy's); read it back with .numpy() and use .any() or .all()")
        return bool(self.numpy())

    def __eq__(self, other):
        raise TypeError("gpuops.DeviceArray: == and != would compare values, which are on the GPU (gpuops has no "
                        "comparison): read the arrays back with .numpy() and compare those")

    __ne__ = __eq__
    __hash__ = None  # unhashable, as NumPy's arrays: its values may change (out=), and == compares none

    def __reduce__(self):
        """Pickling reads the values back; unpickling uploads them to that process's default device (how Dask
        moves chunks between processes)."""
        return _from_pickle, (self.numpy(),)

    def __setattr__(self, name, value):
        raise AttributeError(f"gpuops.DeviceArray is immutable: {name} cannot be set")

    def __delattr__(self, name):
        raise AttributeError(f"gpuops.DeviceArray is immutable: {name} cannot be deleted")

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d gpuops.DeviceArray")
        return self._shape[0]

    def __iter__(self):
        """The views along the first axis, as NumPy's iteration (a 0-d array is not iterable)."""
        if not self._shape:
            raise TypeError("iteration over a 0-d gpuops.DeviceArray")
        return (self[index] for index in range(self._shape[0]))

    def __repr__(self) -> str:
        """The layout, not the values (reading them back is always asked for: print(d.numpy()))."""
        layout = "" if self._strides == packed_strides(self._shape) else f", strides={self._strides}"
        if self._offset:
            layout += f", offset={self._offset}"
        return (f"gpuops.DeviceArray(shape={self._shape}, dtype={self._dtype}{layout}, "
                f"device={self._device.adapter_name!r})")


# The ufuncs that run on device arrays and the gpuops functions that run them, put here by gpuops/api.py when it is
# imported (it imports this module, which so never imports it): the package imports both.
UFUNC_FUNCTIONS: dict[np.ufunc, Callable] = {}
_NDARRAY_UFUNC = np.ndarray.__array_ufunc__
_RESHAPE_TAKES_COPY = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def layout_stand_in(array: DeviceArray) -> np.ndarray:
    """A read-only NumPy view with a device array's dtype, shape and strides, for code that reads only its layout
    (the NumPy-level functions' layout rules, NumPy's own indexing rules for views): its memory (one element,
    strided over) is never read."""
    itemsize = array.itemsize
    return np.lib.stride_tricks.as_strided(np.empty(1, array.dtype), array.shape,
                                           tuple(s * itemsize for s in array.strides), writeable=False)


def _reshaped_view(stand_in: np.ndarray, shape: tuple[int, ...], order: str) -> np.ndarray | None:
    """NumPy's view of `stand_in` in a checked `shape`, or None where NumPy would copy (never copying: the stand-in's
    memory must not be read)."""
    if _RESHAPE_TAKES_COPY:
        try:
            return stand_in.reshape(shape, order=order, copy=False)
        except ValueError:  # "Unable to avoid creating a copy while reshaping."
            return None
    # NumPy < 2.1: setting .shape views or refuses; 'F' order is C order on the reversed axes
    fortran = order == "F" or (order == "A" and stand_in.flags.f_contiguous and not stand_in.flags.c_contiguous)
    view = stand_in.T.view() if fortran else stand_in.view()
    try:
        view.shape = shape[::-1] if fortran else shape
    except AttributeError:
        return None
    return view.T if fortran else view


def _index_text(item) -> str:
    """One index as written between brackets (1:4:2, ..., None)."""
    if type(item) is slice:
        text = ":".join("" if part is None else shown(part) for part in (item.start, item.stop, item.step))
        return text[:-1] if item.step is None else text
    return "..." if item is Ellipsis else shown(item)


def _from_pickle(values: np.ndarray) -> DeviceArray:
    return asarray(values)


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
        device = default_device()
    itemsize = array.itemsize
    dense = all(s >= 0 and s % itemsize == 0 for s in array.strides) and \
        _span(array.shape, tuple(s // itemsize for s in array.strides), itemsize) == array.nbytes
    if not dense:  # gaps, negative or zero strides: a packed copy in the same axis order
        array = array.copy(order="K")
    strides = tuple(s // itemsize for s in array.strides)
    pool = pool_of(device)
    data = host_bytes(array) if array.size else None
    # A large array is copied into a mapped upload buffer first, without the lock (fill_upload waits for the GPU).
    staged = fill_upload(device, pool, data, where) if data is not None and uploads_mapped(data.nbytes) else None
    try:
        with device.lock, device.explained(where, "uploading an array"):
            if data is None:
                buffer = pool.acquire(device, STORAGE, 16)
            else:
                encoder = device.wgpu_device.create_command_encoder()
                buffer = upload(device, pool, data, encoder, staged, where)
                if staged is not None:  # its copy from the upload buffer runs now
                    device.submit(encoder, where)
    finally:
        if staged is not None:
            with device.lock:
                pool.release(staged)
    return DeviceArray.of_pooled_buffer(device, buffer, array.dtype, array.shape, strides)
