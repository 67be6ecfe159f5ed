"""NumPy-level functions: arrays in, arrays out, through the DirectML-level layer.

Arrays run in their own memory layout: a non-contiguous view becomes a strided tensor (its bytes are uploaded as
they lie, never packed on the host first) and NumPy broadcasting becomes zero strides.
"""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from .device import Binding, Device
from .enums import DataType, FeatureLevel, IsInfinityMode
from .errors import DeviceError, ValidationError
from .layout import coalesce
from .operators import OperatorSpec, spec_by_name
from .support import support_row
from .tensor import TensorDesc

_default_device: Device | None = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """The device the functions use when none is given: created on first use, then reused."""
    global _default_device
    with _default_lock:
        if _default_device is None:
            _default_device = Device()
        return _default_device


def sign(x, *, out=None, device: Device | None = None, feature_level=None) -> np.ndarray:
    """-1, 0 or 1 in x's dtype (NaN and -0 give +0)."""
    return _run("ELEMENT_WISE_SIGN", (x,), {}, out, device, feature_level)


def is_nan(x, *, out=None, device: Device | None = None, feature_level=None) -> np.ndarray:
    """uint8 1 where x is NaN, else 0."""
    return _run("ELEMENT_WISE_IS_NAN", (x,), {}, out, device, feature_level, output_type=DataType.UINT8)


def is_infinity(x, mode: IsInfinityMode | str | int = "either", *, out=None, device: Device | None = None,
                feature_level=None) -> np.ndarray:
    """uint8 1 where x is an infinity of the sign `mode` selects ("either", "positive", "negative")."""
    try:
        infinity_mode = IsInfinityMode.parse(mode)
    except (ValueError, TypeError):
        raise ValidationError(f"gpuops.is_infinity: mode {mode!r}; allowed: 'either', 'positive', 'negative'") \
            from None
    return _run("ELEMENT_WISE_IS_INFINITY", (x,), {"infinity_mode": infinity_mode}, out, device, feature_level,
                output_type=DataType.UINT8)


def modulus_floor(a, b, *, out=None, device: Device | None = None, feature_level=None) -> np.ndarray:
    """Python's modulus, bit for bit np.remainder on the same dtype."""
    return _run("ELEMENT_WISE_MODULUS_FLOOR", (a, b), {}, out, device, feature_level)


def modulus_truncate(a, b, *, out=None, device: Device | None = None, feature_level=None) -> np.ndarray:
    """C's remainder, bit for bit np.fmod on the same dtype."""
    return _run("ELEMENT_WISE_MODULUS_TRUNCATE", (a, b), {}, out, device, feature_level)


def _run(operator: str, values: tuple, extra: dict, out, device: Device | None, feature_level,
         output_type: DataType | None = None) -> np.ndarray:
    spec = spec_by_name(operator)
    where = f"gpuops.{spec.numpy_name}"
    device = device if device is not None else default_device()
    try:
        level = device.feature_level if feature_level is None else FeatureLevel.parse(feature_level)
    except ValueError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    arrays = _as_arrays(where, spec, values, level)
    data_type = DataType.from_numpy(arrays[0].dtype)
    output_type = output_type or data_type
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = " and ".join(str(a.shape) for a in arrays)
        raise ValidationError(f"{where}: shapes {shapes} cannot be broadcast together") from None
    result_dtype = output_type.numpy_dtype
    if out is not None:
        _check_out(where, out, shape, result_dtype)
    if math.prod(shape) == 0:
        result = np.empty(shape, result_dtype)
    else:
        result = _execute(spec, device, level, arrays, shape, data_type, output_type, extra)
    if out is not None:
        np.copyto(out, result)
        return out
    return result


def _as_arrays(where: str, spec: OperatorSpec, values: tuple, level: FeatureLevel) -> list[np.ndarray]:
    # A Python number beside an array takes the array's dtype (NumPy's weak scalars); gpuops never promotes.
    anchor = next((v for v in values if isinstance(v, (np.ndarray, np.generic))), None)
    arrays = []
    for name, value in zip(spec.inputs, values):
        if anchor is not None and not isinstance(value, (np.ndarray, np.generic)) and \
                isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                value = np.asarray(value, dtype=anchor.dtype)
            except (OverflowError, ValueError) as exc:
                raise ValidationError(f"{where}: {name} {value!r} does not fit {anchor.dtype}: {exc}") from None
        arrays.append(np.asarray(value))
    row = support_row(spec.name, level)
    for name, array in zip(spec.inputs, arrays):
        data_type = DataType.from_numpy(array.dtype)
        allowed = row.types[name] if row else frozenset()
        if data_type is None or data_type not in allowed:
            names = ", ".join(sorted(t.numpy_dtype.name for t in allowed)) or "none (the operator does not exist)"
            raise ValidationError(f"{where}: {name} has dtype {array.dtype}; allowed at feature level "
                                  f"{level.label}: {names}")
    if len({a.dtype for a in arrays}) > 1:
        kinds = " and ".join(f"{n} {a.dtype}" for n, a in zip(spec.inputs, arrays))
        raise ValidationError(f"{where}: {kinds} differ; DirectML needs one data type (gpuops does not promote)")
    return arrays


def _check_out(where: str, out, shape: tuple[int, ...], dtype: np.dtype) -> None:
    if not isinstance(out, np.ndarray):
        raise ValidationError(f"{where}: out is {type(out).__name__}, not a numpy.ndarray")
    if out.dtype != dtype or out.shape != shape:
        raise ValidationError(f"{where}: out has dtype {out.dtype} and shape {out.shape}; "
                              f"the result has dtype {dtype} and shape {shape}")
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
