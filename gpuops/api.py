"""NumPy-level functions: arrays in, arrays out, through the DirectML-level layer.

Types follow NumPy's rules (NEP 50, see numpy_types.py): the result has the dtype NumPy's ufunc would give
(np.sign, np.isnan, np.isinf, np.remainder, np.fmod), operands of another dtype are converted as NumPy converts them,
and where NumPy would compute in a type DirectML does not support for the operator (float64, bool, complex, ...) the
call is refused rather than computed in another type. is_nan and is_infinity return bool arrays (computed as
DirectML's UINT8 and viewed as bool: the values are exactly 0 and 1). 0-d and all-scalar inputs give NumPy scalars,
as ufuncs do; empty results need no GPU work.

Arrays run in their own memory layout: a non-contiguous view becomes a strided tensor (its bytes are uploaded as
they lie, from its first element to its last) and NumPy broadcasting becomes zero strides. A sparse view, whose
memory span is more than twice its elements' bytes plus 64 KiB (GATHER_SLACK_BYTES), is first gathered on the host
into a packed copy of just its elements (keeping its axis order), so that its cost follows its element count
rather than the span (M[:, 0] of a large matrix, x[::1000]). Up to that threshold uploading the span costs at most
about twice the packed bytes and saves the host copy, and small arrays are dominated by fixed costs anyway.
"""

from __future__ import annotations

import ctypes
import math
import operator

import numpy as np

from .device import Binding, Device, default_device
from .enums import DataType, FeatureLevel, IsInfinityMode
from .errors import DeviceError, ValidationError
from .layout import coalesce
from .numpy_types import refuse_subclass, resolve
from .operators import OperatorSpec, spec_by_name
from .support import support_row
from .tensor import TensorDesc

GATHER_SLACK_BYTES = 64 * 1024  # see the module docstring: spans up to 2 x the elements' bytes + this run as they lie

# What the functions return: an array, or a NumPy scalar where NumPy's ufunc gives one (0-d results without out=).
Result = np.ndarray | np.generic

def sign(x, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """-1, 0 or 1 in x's dtype (NaN and -0 give +0), with np.sign's types."""
    return _run("ELEMENT_WISE_SIGN", ("x",), (x,), {}, out, device, feature_level)


def is_nan(x, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """bool: True where x is NaN (np.isnan); out= may be a bool or a uint8 array."""
    return _run("ELEMENT_WISE_IS_NAN", ("x",), (x,), {}, out, device, feature_level, predicate=True)


def is_infinity(x, mode: IsInfinityMode | str | int = "either", *, out=None, device: Device | None = None,
                feature_level=None) -> Result:
    """bool: True where x is an infinity of the sign `mode` selects ("either": np.isinf, "positive": np.isposinf,
    "negative": np.isneginf); out= may be a bool or a uint8 array."""
    infinity_mode = _infinity_mode(mode)
    return _run("ELEMENT_WISE_IS_INFINITY", ("x",), (x,), {"infinity_mode": infinity_mode}, out, device,
                feature_level, predicate=True)


def modulus_floor(a, b, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """Python's modulus: np.remainder bit for bit, with its types."""
    return _run("ELEMENT_WISE_MODULUS_FLOOR", ("a", "b"), (a, b), {}, out, device, feature_level)


def modulus_truncate(a, b, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """C's remainder: np.fmod bit for bit, with its types."""
    return _run("ELEMENT_WISE_MODULUS_TRUNCATE", ("a", "b"), (a, b), {}, out, device, feature_level)


def gathers(array: np.ndarray) -> bool:
    """True when `array` is gathered on the host before upload: its memory span (first element to last) is more
    than twice its elements' bytes plus GATHER_SLACK_BYTES. Broadcast (zero-stride) views span little and are
    never gathered."""
    if array.size == 0:
        return False
    span = sum((n - 1) * abs(s) for n, s in zip(array.shape, array.strides)) + array.itemsize
    return span > 2 * array.size * array.itemsize + GATHER_SLACK_BYTES


_MODES = "'either', 'positive', 'negative' (or gpuops.IsInfinityMode, 0, 1, 2)"


def _infinity_mode(mode) -> IsInfinityMode:
    # bools and floats are not modes, though IntEnum lookup would take True and 1.0 as POSITIVE
    if isinstance(mode, (bool, np.bool_)) or not isinstance(mode, (str, int, np.integer)):
        raise ValidationError(f"gpuops.is_infinity: mode {mode!r} is not a mode; allowed: {_MODES}")
    try:
        return IsInfinityMode.parse(mode if isinstance(mode, str) else operator.index(mode))
    except (ValueError, TypeError):
        raise ValidationError(f"gpuops.is_infinity: mode {mode!r}; allowed: {_MODES}") from None


def _feature_level(where: str, feature_level, device: Device | None) -> FeatureLevel:
    if feature_level is None:
        return (device if device is not None else default_device()).feature_level
    allowed = (", ".join(level.label for level in FeatureLevel)
               + " (as '6.4', '6_4', 'DML_FEATURE_LEVEL_6_4', 0x6400 or gpuops.FeatureLevel)")
    # bools and floats are not levels, though int() would make 24576.0 one
    if isinstance(feature_level, (bool, np.bool_)) or \
            not isinstance(feature_level, (str, int, np.integer, FeatureLevel)):
        raise ValidationError(f"{where}: feature_level {feature_level!r} is not a feature level; allowed: {allowed}")
    try:
        return FeatureLevel.parse(feature_level if isinstance(feature_level, str) else operator.index(feature_level))
    except (ValueError, TypeError):  # FeatureLevel.parse reports '9.9' by its number: quote it as written instead
        raise ValidationError(f"{where}: feature_level {feature_level!r} is not a DirectML feature level; "
                              f"allowed: {allowed}") from None


def _run(operator_name: str, names: tuple[str, ...], values: tuple, extra: dict, out, device: Device | None,
         feature_level, predicate: bool = False) -> Result:
    spec = spec_by_name(operator_name)
    where = f"gpuops.{spec.numpy_name}"
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"{where}: device {device!r} is a {type(device).__name__}, not a gpuops.Device; pass a "
                        "gpuops.Device, or None for the default device")
    level = _feature_level(where, feature_level, device)
    operands = resolve(where, spec.numpy_name, names, values, support_row(spec.name, level), spec.inputs[0],
                       level.label)
    arrays = operands.arrays
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = " and ".join(f"{n} {a.shape}" for n, a in zip(names, arrays))
        raise ValidationError(f"{where}: shapes {shapes} cannot be broadcast together") from None
    if out is not None:
        _check_out(where, out, shape, operands.result, predicate)
    if math.prod(shape) == 0:
        result = np.empty(shape, operands.result)
    else:
        device = device if device is not None else default_device()
        data_type = DataType.from_numpy(operands.compute)
        output_type = DataType.UINT8 if predicate else data_type
        gathered: dict[int, np.ndarray] = {}
        for a in arrays:  # the same array given twice is gathered (and uploaded) once
            if id(a) not in gathered:
                gathered[id(a)] = a.copy(order="K") if gathers(a) else a
        result = _execute(spec, device, level, [gathered[id(a)] for a in arrays], shape, data_type, output_type,
                          extra)
        if predicate:
            result = result.view(np.bool_)  # DirectML's UINT8 holds exactly 0 and 1
    if out is not None:
        np.copyto(out, result.view(out.dtype))  # for predicates out may be uint8: the same bytes
        return out
    return result[()] if result.ndim == 0 else result  # a NumPy scalar for 0-d, as ufuncs give


def _check_out(where: str, out, shape: tuple[int, ...], dtype: np.dtype, predicate: bool) -> None:
    if not isinstance(out, np.ndarray):
        raise ValidationError(f"{where}: out is {type(out).__name__}, not a numpy.ndarray")
    refuse_subclass(where, "out", out)
    allowed = (dtype, np.dtype(np.uint8)) if predicate else (dtype,)
    if out.dtype not in allowed or out.shape != shape:
        wanted = " or ".join(str(d) for d in allowed)
        raise ValidationError(f"{where}: out has dtype {out.dtype} and shape {out.shape}; "
                              f"the result has dtype {wanted} and shape {shape}")
    if not out.flags.writeable:
        raise ValidationError(f"{where}: out is read-only")


def _positive_strides(views: list[np.ndarray]) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """Walk dimensions that the inputs step through backwards in reverse instead (DirectML strides are unsigned).

    Returns the views and the flipped axes. An input whose direction disagrees with the others along an axis,
    or whose byte strides are not whole elements, is copied (a documented fallback for such views only).
    """
    ndim = views[0].ndim
    flips = []
    for axis in range(ndim):
        signs = {np.sign(v.strides[axis]) for v in views if v.strides[axis] != 0}
        if signs == {-1}:
            flips.append(axis)
    views = [np.flip(v, flips) if flips else v for v in views]
    fixed = []
    for v in views:
        if any(s < 0 or s % v.itemsize for s in v.strides):
            v = np.ascontiguousarray(v)
        fixed.append(v)
    return fixed, tuple(flips)


def _output_strides(views: list[np.ndarray], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Packed element strides in the inputs' memory order, as NumPy's order='K' (np.sign(x.T) is F-ordered): a
    transposed input then runs as one contiguous stream instead of a gather. The order is NumPy's (nditer's axis
    ordering): an axis moves outward past another only when every input that steps through both has the larger
    stride there; an input broadcast along either axis (stride 0) has no say, and disagreement keeps C order. (A
    broadcast row then gives a C-ordered result whose rows stream, not a column-major one that splats.)"""
    order: list[int] = []  # outermost first
    for axis in range(len(shape)):
        position = len(order)
        for j in range(len(order) - 1, -1, -1):
            deciding = [(abs(v.strides[axis]), abs(v.strides[order[j]])) for v in views
                        if v.strides[axis] != 0 and v.strides[order[j]] != 0]
            if not deciding:
                continue  # ambiguous: look further out
            if all(this > other for this, other in deciding):
                position = j
            else:
                break
        order.insert(position, axis)
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def _host_bytes(view: np.ndarray) -> np.ndarray:
    """The bytes from a view's first element to its last, as they lie in memory (strides all >= 0)."""
    span = sum((n - 1) * s for n, s in zip(view.shape, view.strides)) + view.itemsize
    pointer = view.__array_interface__["data"][0]
    return np.ctypeslib.as_array((ctypes.c_ubyte * span).from_address(pointer))


def _execute(spec: OperatorSpec, device: Device, level: FeatureLevel, arrays: list[np.ndarray],
             shape: tuple[int, ...], data_type: DataType, output_type: DataType, extra: dict) -> np.ndarray:
    work_shape = shape or (1,)
    views = [np.broadcast_to(a, shape).reshape(work_shape) if a.ndim == 0 or shape == () else
             np.broadcast_to(a, shape) for a in arrays]
    views, flips = _positive_strides(views)
    out_strides = _output_strides(views, work_shape)
    iteration = coalesce(work_shape, [tuple(s // v.itemsize for s in v.strides) for v in views] + [out_strides])
    sizes, strides = iteration.sizes, iteration.strides
    if iteration.rank > 8:
        raise ValidationError(f"gpuops.{spec.numpy_name}: this layout needs {iteration.rank} dimensions after "
                              "merging contiguous ones; DirectML allows 8")
    if level < FeatureLevel.LEVEL_3_0 and iteration.rank < 4:  # 4-D only before 3_0: pad with leading ones
        pad = 4 - iteration.rank
        sizes = (1,) * pad + sizes
        strides = tuple((0,) * pad + s for s in strides)
    types = [data_type] * len(views) + [output_type]
    tensors = [TensorDesc(t, sizes, s) for t, s in zip(types, strides)]
    desc = spec.desc_type(**dict(zip(spec.tensor_fields, tensors)), **extra)
    compiled = device.compile(desc, feature_level=level)

    out_size = -(-tensors[-1].total_tensor_size_in_bytes // 16) * 16
    spans = [_host_bytes(view) for view in views]
    largest = max([out_size] + [raw.size for raw in spans])
    if largest > device.max_buffer_size:
        raise DeviceError(f"gpuops.{spec.numpy_name}: a buffer of {largest} bytes is needed; the adapter "
                          f"{device.adapter_name} holds at most {device.max_buffer_size} bytes in one buffer")
    with device._lock:  # one device's wgpu calls are never made from two threads at once
        data = _upload_run_read(spec, device, compiled, views, spans, out_size)
    count = math.prod(work_shape)
    itemsize = output_type.size
    result = np.lib.stride_tricks.as_strided(np.frombuffer(data, output_type.numpy_dtype, count), work_shape,
                                             tuple(s * itemsize for s in out_strides))
    if flips:
        result = np.flip(result, flips)
    return result.reshape(shape)


def _upload_run_read(spec: OperatorSpec, device: Device, compiled, views: list[np.ndarray],
                     spans: list[np.ndarray], out_size: int):
    """Upload the inputs' bytes, run, and return the output buffer's bytes; every buffer is freed after."""
    wgpu_device = device.wgpu_device
    usage = device.wgpu.BufferUsage
    buffers: dict[tuple[int, int], object] = {}
    bindings = {}
    try:
        with device.explained(spec.name, "allocating and filling buffers"):
            for name, view, raw in zip(spec.inputs, views, spans):
                key = (view.__array_interface__["data"][0], raw.size)
                if key not in buffers:  # the same memory given twice is uploaded once
                    padded = np.zeros(-(-raw.size // 16) * 16, np.uint8)
                    padded[: raw.size] = raw
                    buffers[key] = wgpu_device.create_buffer_with_data(data=padded, usage=usage.STORAGE)
                bindings[name] = Binding(buffers[key])
            out_buffer = wgpu_device.create_buffer(size=out_size, usage=usage.STORAGE | usage.COPY_SRC)
            buffers[(0, -1)] = out_buffer
        bindings[spec.output] = Binding(out_buffer)
        compiled.execute(bindings)
        with device.explained(spec.name, "reading the result back"):
            data = wgpu_device.queue.read_buffer(out_buffer)
    finally:
        for buffer in buffers.values():
            buffer.destroy()
    return data
