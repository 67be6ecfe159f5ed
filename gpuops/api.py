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

A call is one submission: the host inputs' bytes go into pooled device buffers (gpuops/pool.py), the kernels run,
the output is copied into a pooled staging buffer, which is mapped and copied once into the result (or straight
into out=). What a call's operand types and layouts decide (NumPy's loop, the broadcast shape, which operands are
converted or gathered, the compiled operator, the output's strides) is kept per device as a _Call for the next call
with the same ones, so that a repeated call checks only what its values decide; the binding tables of pooled buffers
are kept too, so a repeated call allocates nothing on the device.

Device arrays (gpuops.DeviceArray, gpuops/arrays.py) stay on the GPU: given one (or a device array as out=), a
function returns a device array and reads nothing back, so chained calls move no data to the host. Host arrays and
Python scalars beside them are converted as above and uploaded. The type rules are the same, with one refusal more:
NumPy converts an operand whose dtype is not the computation's (int16 % float32 computes in float32), and gpuops
does that on the host for host arrays but never on the GPU: such a device array is refused with a ValidationError
(pass it in the computation's dtype). A 0-d result is a 0-d device array, and a predicate's result a bool device
array (one byte per element, 0 or 1). All device arrays of a call must be on one Device (device= too, if given).
"""

from __future__ import annotations

import ctypes
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .arrays import DeviceArray, empty_in_order, host_bytes, layout_stand_in
from .device import CompiledOperator, Device, default_device
from .enums import DataType, FeatureLevel, IsInfinityMode
from .errors import DeviceError, ValidationError
from .layout import coalesce
from .numpy_types import Loop, convert, refuse_subclass, resolve
from .operators import OperatorSpec, spec_by_name
from .pool import STORAGE, ReadBack, fill_upload, pool_of, start_read_back, upload, uploads_mapped
from .tensor import TensorDesc, packed_strides

MAX_CALLS = 1024  # operand combinations whose _Call a device keeps (LRU): each holds a compiled operator and tuples
GATHER_SLACK_BYTES = 64 * 1024  # see the module docstring: spans up to 2 x the elements' bytes + this run as they lie
# Host calls whose elements take more than this many bytes in their widest type run in pieces of at most this size
# (DispatchPolicy.stream_bytes overrides it), STREAM_DEPTH of them under way at once (see _stream).
STREAM_BYTES = 64 << 20
STREAM_DEPTH = 2
_BOOL = np.dtype(np.bool_)
_PYTHON_SCALARS = (int, float, complex, bool)  # their type stands for them in a call's key (bool is refused)

# What the functions return: an array, or a NumPy scalar where NumPy's ufunc gives one (0-d results without out=);
# a DeviceArray where an operand or out is one.
Result = np.ndarray | np.generic | DeviceArray


@dataclass(frozen=True, eq=False)
class _Function:
    """One NumPy-level function: its operator's row and its operands' names as the function's parameters. Equal
    to itself only (hashed by identity: it heads every call's key)."""

    spec: OperatorSpec
    names: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"gpuops.{self.spec.numpy_name}"


_SIGN = _Function(spec_by_name("ELEMENT_WISE_SIGN"), ("x",))
_IS_NAN = _Function(spec_by_name("ELEMENT_WISE_IS_NAN"), ("x",))
_IS_INFINITY = _Function(spec_by_name("ELEMENT_WISE_IS_INFINITY"), ("x",))
_MODULUS_FLOOR = _Function(spec_by_name("ELEMENT_WISE_MODULUS_FLOOR"), ("a", "b"))
_MODULUS_TRUNCATE = _Function(spec_by_name("ELEMENT_WISE_MODULUS_TRUNCATE"), ("a", "b"))


def sign(x, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """-1, 0 or 1 in x's dtype (NaN and -0 give +0), with np.sign's types."""
    return _run(_SIGN, (x,), (), out, device, feature_level)


def is_nan(x, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """bool: True where x is NaN (np.isnan); out= may be a bool or a uint8 array."""
    return _run(_IS_NAN, (x,), (), out, device, feature_level)


def is_infinity(x, mode: IsInfinityMode | str | int = "either", *, out=None, device: Device | None = None,
                feature_level=None) -> Result:
    """bool: True where x is an infinity of the sign `mode` selects ("either": np.isinf, "positive": np.isposinf,
    "negative": np.isneginf); out= may be a bool or a uint8 array."""
    return _run(_IS_INFINITY, (x,), (("infinity_mode", _infinity_mode(mode)),), out, device, feature_level)


def modulus_floor(a, b, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """Python's modulus: np.remainder bit for bit, with its types."""
    return _run(_MODULUS_FLOOR, (a, b), (), out, device, feature_level)


def modulus_truncate(a, b, *, out=None, device: Device | None = None, feature_level=None) -> Result:
    """C's remainder: np.fmod bit for bit, with its types."""
    return _run(_MODULUS_TRUNCATE, (a, b), (), out, device, feature_level)


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
    try:  # (bools and floats are not modes: IsInfinityMode.parse refuses them)
        return IsInfinityMode.parse(mode)
    except ValidationError:
        raise ValidationError(f"gpuops.is_infinity: mode {mode!r}; allowed: {_MODES}") from None


def _feature_level(where: str, feature_level, device: Device | None) -> FeatureLevel:
    if feature_level is None:
        return (device if device is not None else default_device()).feature_level
    try:  # (bools and floats are not levels: FeatureLevel.parse refuses them)
        return FeatureLevel.parse(feature_level)
    except ValidationError:
        allowed = (", ".join(level.label for level in FeatureLevel)
                   + " (as '6.4', '6_4', 'DML_FEATURE_LEVEL_6_4', 0x6400 or gpuops.FeatureLevel)")
        raise ValidationError(f"{where}: feature_level {feature_level!r} is not a DirectML feature level; "
                              f"allowed: {allowed}") from None


# How an operand reaches the GPU, decided once per combination of operand types and layouts (_Call.kinds).
_KEEP = "keep"  # a host array of the computation's dtype: its bytes are uploaded as they lie
_GATHER = "gather"  # the same, but sparse (gathers()): packed on the host first
_CONVERT = "convert"  # anything else of the host's (a scalar, another dtype, a list): converted as NumPy converts
_DEVICE = "device"  # a device array of the computation's dtype: bound where it is


@dataclass(frozen=True)
class _Call:
    """What one combination of operand types and layouts decides, kept per device (BufferPool.calls) for the
    next call with the same combination: NumPy's loop, the broadcast shape, how each operand reaches the GPU,
    whether the result stays on the device, and the kernel plan (None where the result is empty). The key
    (_call_key) holds everything these depend on; what a call's values decide (whether a Python int fits) is
    checked on every call."""

    loop: Loop
    shape: tuple[int, ...]
    kinds: tuple[str, ...]
    to_device: bool
    plan: _CallPlan | None
    streamed: bool = False  # a host call larger than a piece: run by _stream, in pieces (plan None)


def _run(function: _Function, values: tuple, extra: tuple, out, device: Device | None, feature_level) -> Result:
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"{function.where}: device {device!r} is a {type(device).__name__}, not a gpuops.Device; "
                        "pass a gpuops.Device, or None for the default device")
    if type(out) is DeviceArray or DeviceArray in map(type, values):
        device = _common_device(function, values, out, device)
    elif device is None:
        device = default_device()
    call, arrays, copies = _call_of(function, device, values, extra, out, feature_level)
    if call.streamed:
        result = _stream(function, device, call, arrays, extra, out, feature_level)
    elif call.plan is None:  # an empty result: no GPU work
        if out is not None:
            return out
        if call.to_device:
            return _empty_device_array(device, call.shape, call.loop.result)
        return np.empty(call.shape, call.loop.result)
    else:
        result = _start(function.spec, device, call, arrays, copies, out).finish()
    if out is not None:
        return out
    return result[()] if type(result) is np.ndarray and result.ndim == 0 else result  # a NumPy scalar, as ufuncs give


def _call_of(function: _Function, device: Device, values: tuple, extra: tuple, out, feature_level
             ) -> tuple[_Call, list, dict[int, np.ndarray]]:
    """The call's _Call (kept per device, or prepared and kept), its operands as they run and the inputs copied to
    run (by position: see _make_plan)."""
    calls = device.pool.calls
    key = _call_key(function, extra, device.feature_level if feature_level is None else feature_level, values, out)
    with device._lock:
        try:
            call = calls.get(key) if key is not None else None
        except TypeError:  # an unhashable feature_level: _prepare says what is wrong with it
            call = key = None
        if call is not None:
            calls.move_to_end(key)
    if call is not None:
        return call, _operands(function, call, values), {}
    call, arrays, copies = _prepare(function, device, values, dict(extra), out, feature_level)
    if key is not None and not copies:  # inputs copied to run have no plan worth keeping (see _make_plan)
        with device._lock:
            calls[key] = call
            while len(calls) > MAX_CALLS:
                calls.popitem(last=False)
    return call, arrays, copies


def _piece_bytes(device: Device) -> int:
    """The most bytes a piece of a streamed call takes in its widest type: the policy's stream_bytes (STREAM_BYTES
    by default), and at most half of the device's largest buffer less the gather slack, so that a piece's span
    (up to twice its bytes plus GATHER_SLACK_BYTES before it is gathered) fits one buffer."""
    limit = (device.max_buffer_size - GATHER_SLACK_BYTES) // 2
    return max(16, min(device.policy.stream_bytes or STREAM_BYTES, limit))


def _stream(function: _Function, device: Device, call: _Call, arrays: list[np.ndarray], extra: tuple, out,
            feature_level) -> np.ndarray | None:
    """A host call larger than a piece (_piece_bytes), run as ordinary calls on pieces of its result, each into
    its own part of the result array (or out=): so any size runs through buffers no larger than a piece, and
    STREAM_DEPTH pieces are under way at once, one's upload and read-back copies on the host while the GPU runs
    the next. The pieces follow the result's memory order (_pieces), so each piece of a packed operand is one
    contiguous run. An input that shares memory with out= in another layout is copied first: a piece's result
    must not overwrite what a later piece still reads (NumPy's own rule for overlapping operands)."""
    shape = call.shape
    views = [np.broadcast_to(array, shape) for array in arrays]
    if out is None:
        target = empty_in_order(shape, _output_strides(views, shape), call.loop.result)
    else:
        target = out
        views = [v if not np.may_share_memory(v, out) or _same_layout(v, out) else v.copy() for v in views]
    itemsize = max(a.itemsize for a in (*arrays, call.loop.result))
    pieces = _pieces(shape, target.strides, max(1, _piece_bytes(device) // itemsize))
    running: deque[_Running] = deque()
    try:
        for index in pieces:
            part = target[index]
            piece, piece_arrays, copies = _call_of(function, device, tuple(v[index] for v in views), extra, part,
                                                   feature_level)
            running.append(_start(function.spec, device, piece, piece_arrays, copies, part))
            if len(running) >= STREAM_DEPTH:
                running.popleft().finish()
        while running:
            running.popleft().finish()
    except BaseException:
        for rest in running:
            rest.abandon()
        raise
    return target if out is None else None


def _same_layout(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays are the same elements in the same places (an element-wise result may overwrite its input
    there)."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.strides == b.strides
            and a.itemsize == b.itemsize)


def _pieces(shape: tuple[int, ...], strides: tuple[int, ...], budget: int):
    """Index tuples that cut `shape` into parts of at most `budget` elements (at least one each), along the axes in
    the memory order of `strides` (outermost first): the innermost axes whole while they fit together, the next one
    cut into runs, and each index of the axes outside it a part of its own."""
    order = sorted(range(len(shape)), key=lambda axis: -abs(strides[axis]))
    rest, cut = 1, len(order) - 1
    while cut > 0 and rest * shape[order[cut]] <= budget:
        rest *= shape[order[cut]]
        cut -= 1
    axis = order[cut]
    step = max(1, budget // rest)
    outer = order[:cut]
    for fixed in np.ndindex(*(shape[a] for a in outer)):
        index = [slice(None)] * len(shape)
        for a, i in zip(outer, fixed):
            index[a] = slice(i, i + 1)
        for start in range(0, shape[axis], step):
            index[axis] = slice(start, min(start + step, shape[axis]))
            yield tuple(index)


def _call_key(function: _Function, extra: tuple, feature_level, values: tuple, out) -> tuple | None:
    """The key of a call's _Call: everything _prepare decides from (the operands' types and layouts, out's, the
    level as given or the device's), not the data. None where an operand has no such summary (a list, a
    subclass): such calls are prepared each time."""
    key = [function, extra, type(feature_level), feature_level]
    for value in (out, *values):
        kind = type(value)
        if kind is np.ndarray:
            key.append((kind, value.dtype, value.shape, value.strides, value.flags.writeable))
        elif kind is DeviceArray:
            key.append((kind, value._dtype, value._shape, value._strides))
        elif kind in _PYTHON_SCALARS or value is None:
            key.append(kind)
        elif isinstance(value, np.generic):
            key.append((kind, value.dtype))
        else:
            return None
    return tuple(key)


def _prepare(function: _Function, device: Device, values: tuple, extra: dict, out, feature_level
             ) -> tuple[_Call, list, dict[int, np.ndarray]]:
    """A call's _Call from its arguments, every rule checked; also the operands as they run and the inputs copied
    to run (by position: see _make_plan)."""
    spec, names, where = function.spec, function.names, function.where
    level = _feature_level(where, feature_level, device)
    stand_ins = tuple(_type_stand_in(where, n, v) for n, v in zip(names, values))
    loop, seen = resolve(where, spec, level, names, stand_ins)
    kinds: list[str] = []
    arrays: list[np.ndarray | DeviceArray] = []
    for index, (name, value) in enumerate(zip(names, values)):
        if type(value) is DeviceArray:
            if value.dtype != loop.compute:
                raise ValidationError(f"{where}: {name} is a device array of {value.dtype} and NumPy computes in "
                                      f"{loop.compute} here; gpuops does not convert device arrays on the GPU: "
                                      f"pass {name} in {loop.compute} (or as a host array, converted on the host)")
            kinds.append(_DEVICE)
            arrays.append(value)
            continue
        array = convert(where, names, values, index, loop.compute, seen[index])
        kinds.append(_GATHER if gathers(array) else _KEEP if array is value else _CONVERT)
        arrays.append(array)
    shape = _broadcast_shape(where, names, arrays)
    predicate = loop.result == _BOOL
    if out is not None:
        _check_out(where, out, shape, loop.result, predicate)
    to_device = type(out) is DeviceArray or (out is None and _DEVICE in kinds)
    widest = math.prod(shape) * max(a.itemsize for a in (*arrays, loop.result))
    if widest > 16 and not to_device and _DEVICE not in kinds and widest > _piece_bytes(device):  # (at least 16)
        return _Call(loop, shape, tuple(kinds), to_device, None, streamed=True), arrays, {}
    plan, copies = None, {}
    if math.prod(shape) != 0:
        arrays = _gathered(arrays, kinds)
        output_type = DataType.UINT8 if predicate else loop.data_type
        plan, copies = _make_plan(spec, device, level, arrays, shape, loop.data_type, output_type, extra, out,
                                  to_device)
    return _Call(loop, shape, tuple(kinds), to_device, plan), arrays, copies


def _operands(function: _Function, call: _Call, values: tuple) -> list:
    """The operands as they run, by the kinds a _Call decided for their types and layouts."""
    arrays = [convert(function.where, function.names, values, index, call.loop.compute) if kind is _CONVERT
              else value for index, (value, kind) in enumerate(zip(values, call.kinds))]
    return _gathered(arrays, call.kinds) if _GATHER in call.kinds and not call.streamed else arrays


def _gathered(arrays: list, kinds: tuple[str, ...] | list[str]) -> list:
    """The arrays with each sparse one packed on the host (the same array given twice is gathered once)."""
    copies: dict[int, np.ndarray] = {}
    for index, (array, kind) in enumerate(zip(arrays, kinds)):
        if kind is _GATHER:
            if id(array) not in copies:
                copies[id(array)] = array.copy(order="K")
            arrays[index] = copies[id(array)]
    return arrays


def _broadcast_shape(where: str, names: tuple[str, ...], arrays: list) -> tuple[int, ...]:
    """The operands' broadcast shape (NumPy's rules), or ValidationError naming their shapes."""
    shapes = [a.shape for a in arrays]
    if shapes.count(shapes[0]) == len(shapes):  # one shape: nothing to broadcast
        return shapes[0]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        given = " and ".join(f"{n} {shape}" for n, shape in zip(names, shapes))
        raise ValidationError(f"{where}: shapes {given} cannot be broadcast together") from None


def _common_device(function: _Function, values: tuple, out, device: Device | None) -> Device:
    """The one Device every device array of the call (out included) is on, and device= if given."""
    found = [(n, v.device) for n, v in zip(function.names, values) if type(v) is DeviceArray]
    if type(out) is DeviceArray:
        found.append(("out", out.device))
    if device is not None:
        found.insert(0, ("device=", device))
    first_name, first = found[0]
    for name, other in found[1:]:
        if other is not first:
            raise ValidationError(f"{function.where}: {name} is on another gpuops.Device than {first_name} "
                                  f"({other.adapter_name!r}, {first.adapter_name!r}); gpuops does not move device "
                                  "arrays between devices")
    return first


def _type_stand_in(where: str, name: str, value):
    """For NumPy's type rules, a device array counts as an array of its dtype (its data stays on the device)."""
    if type(value) is not DeviceArray:
        return value
    if value.dtype == np.bool_:
        raise ValidationError(f"{where}: {name} is a bool device array; DirectML has no boolean tensors and gpuops "
                              f"does not pick a number type for it; upload {name} as a number type (for instance "
                              f"gpuops.asarray(host.astype(np.int8)))")
    return np.empty(0, value.dtype)


def _empty_device_array(device: Device, shape: tuple[int, ...], dtype: np.dtype) -> DeviceArray:
    pool = pool_of(device)
    with device._lock:
        buffer = pool.acquire(device, STORAGE, 16)
    return DeviceArray._wrap(device, buffer, dtype, shape, packed_strides(shape), 0, True)


def _check_out(where: str, out, shape: tuple[int, ...], dtype: np.dtype, predicate: bool) -> None:
    on_device = type(out) is DeviceArray
    if not on_device:
        if not isinstance(out, np.ndarray):
            raise ValidationError(f"{where}: out is {type(out).__name__}, not a numpy.ndarray or a "
                                  "gpuops.DeviceArray")
        refuse_subclass(where, "out", out)
    allowed = (dtype, np.dtype(np.uint8)) if predicate else (dtype,)
    if out.dtype not in allowed or out.shape != shape:
        wanted = " or ".join(str(d) for d in allowed)
        raise ValidationError(f"{where}: out has dtype {out.dtype} and shape {out.shape}; "
                              f"the result has dtype {wanted} and shape {shape}")
    if not on_device and not out.flags.writeable:
        raise ValidationError(f"{where}: out is read-only")


def _positive_strides(views: list[np.ndarray], allow_flips: bool = True
                      ) -> tuple[list[np.ndarray], tuple[int, ...], tuple[int, ...]]:
    """Walk dimensions that the inputs step through backwards in reverse instead (DirectML strides are unsigned).

    Returns the views, the flipped axes and the positions of the copied views. An input whose direction disagrees
    with the others along an axis, or whose byte strides are not whole elements, is copied (a documented fallback
    for such views only), as is every input that steps backwards when `allow_flips` is False.
    """
    ndim = views[0].ndim
    flips = []
    for axis in range(ndim if allow_flips else 0):
        signs = {np.sign(v.strides[axis]) for v in views if v.strides[axis] != 0}
        if signs == {-1}:
            flips.append(axis)
    views = [np.flip(v, flips) if flips else v for v in views]
    fixed, copied = [], []
    for index, v in enumerate(views):
        if any(s < 0 or s % v.itemsize for s in v.strides):
            v = np.ascontiguousarray(v)
            copied.append(index)
        fixed.append(v)
    return fixed, tuple(flips), tuple(copied)


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


@dataclass(frozen=True)
class _CallPlan:
    """What a call's layout decides on the GPU side (part of its _Call): the compiled operator, the output's
    element strides over the work shape and the flipped axes, per input where its uploaded bytes start from its
    data pointer and how many there are (None for a device array), and how the output buffer is read back."""

    compiled: CompiledOperator
    out_strides: tuple[int, ...]
    flips: tuple[int, ...]
    starts: tuple[int | None, ...]
    spans: tuple[int | None, ...]
    whole: tuple[bool, ...]  # per input: its upload is the array itself (all its bytes, in C order)
    out_size: int
    out_packed: bool  # the output is in C order (its read-back needs no strided view)
    work_shape: tuple[int, ...]  # the output's shape, (1,) for a 0-d one
    out_dtype: np.dtype  # the output buffer's elements (uint8 for a predicate)
    out_byte_strides: tuple[int, ...]


def _make_plan(spec: OperatorSpec, device: Device, level: FeatureLevel, arrays: list, shape: tuple[int, ...],
               data_type: DataType, output_type: DataType, extra: dict, out, to_device: bool
               ) -> tuple[_CallPlan, dict[int, np.ndarray]]:
    """The call's plan, and the inputs that had to be copied to run (by position): a plan with copies is not
    kept, as the copies are made again each call."""
    where = f"gpuops.{spec.numpy_name}"
    work_shape = shape or (1,)
    on_device = [type(a) is DeviceArray for a in arrays]
    views = [np.broadcast_to(layout_stand_in(a) if device_array else a, shape) for a, device_array in
             zip(arrays, on_device)]
    views = [v.reshape(work_shape) if shape == () else v for v in views]
    # Device arrays and device results have strides >= 0 in their axes' own direction: host inputs that step
    # backwards are then copied rather than run reversed.
    views, flips, copied = _positive_strides(views, allow_flips=not (to_device or any(on_device)))
    if type(out) is DeviceArray:
        out_strides = out.strides if shape else (1,)
    else:
        out_strides = _output_strides(views, work_shape)
    iteration = coalesce(work_shape, [tuple(s // v.itemsize for s in v.strides) for v in views] + [out_strides])
    sizes, strides = iteration.sizes, iteration.strides
    if iteration.rank > 8:
        raise ValidationError(f"{where}: this layout needs {iteration.rank} dimensions after merging contiguous "
                              "ones; DirectML allows 8")
    if level < FeatureLevel.LEVEL_3_0 and iteration.rank < 4:  # 4-D only before 3_0: pad with leading ones
        pad = 4 - iteration.rank
        sizes = (1,) * pad + sizes
        strides = tuple((0,) * pad + s for s in strides)
    types = [data_type] * len(views) + [output_type]
    tensors = [TensorDesc(t, sizes, s) for t, s in zip(types, strides)]
    desc = spec.desc_type(**dict(zip(spec.tensor_fields, tensors)), **extra)
    compiled = device.compile(desc, feature_level=level)
    out_size = -(-tensors[-1].total_tensor_size_in_bytes // 16) * 16
    starts, spans = [], []
    for index, (array, view, device_array) in enumerate(zip(arrays, views, on_device)):
        if device_array:
            starts.append(None)
            spans.append(None)
            continue
        pointer = view.__array_interface__["data"][0]
        starts.append(0 if index in copied else pointer - array.__array_interface__["data"][0])
        spans.append(sum((n - 1) * s for n, s in zip(view.shape, view.strides)) + view.itemsize)
    largest = max([out_size] + [span for span in spans if span is not None])
    if largest > device.max_buffer_size:
        raise DeviceError(f"{where}: a buffer of {largest} bytes is needed; the adapter {device.adapter_name} holds "
                          f"at most {device.max_buffer_size} bytes in one buffer")
    whole = tuple(start == 0 and index not in copied and span == array.nbytes and array.flags.c_contiguous
                  for index, (array, start, span) in enumerate(zip(arrays, starts, spans)))
    plan = _CallPlan(compiled, tuple(out_strides), flips, tuple(starts), tuple(spans), whole, out_size,
                     tuple(out_strides) == packed_strides(work_shape), work_shape, output_type.numpy_dtype,
                     tuple(s * output_type.size for s in out_strides))
    return plan, {index: views[index] for index in copied}


def _start(spec: OperatorSpec, device: Device, call: _Call, arrays: list[np.ndarray | DeviceArray],
           copies: dict[int, np.ndarray], out) -> _Running:
    """Submit `call`'s plan on `device`: a device result is ready at once, a host result once the _Running's
    read-back is finished. `copies`: the inputs copied to run, by position (see _make_plan).

    One submission: the host inputs' bytes put into pooled buffers (large ones first copied into mapped upload
    buffers, outside the device's lock), the kernels, and for a host result the copy into a pooled staging buffer,
    whose mapping is begun."""
    pool = device.pool
    plan, shape, to_device = call.plan, call.shape, call.to_device
    compiled = plan.compiled
    # The caller's buffers (device arrays, out=), checked before recording and again at the submit: destroyed or
    # mapped since they were bound. This call's pooled buffers are gpuops' alone: nothing else can have destroyed
    # or mapped them.
    uses = [(compiled.refused_as, name, value.buffer) for name, value in zip(spec.tensor_fields, (*arrays, out))
            if type(value) is DeviceArray] if to_device or _DEVICE in call.kinds else []
    temporaries: list = []  # the pool's buffers this call gives back when done
    try:
        staged = _stage_uploads(spec, device, plan, arrays, copies, temporaries)
        with device._lock:  # one device's wgpu calls are never made from two threads at once
            encoder = device.wgpu_device.create_command_encoder()
            regions, cached = _input_regions(spec, device, plan, arrays, copies, staged, encoder, temporaries)
            result = None
            if type(out) is DeviceArray:
                regions.append(out._region())
                cached = cached and out.owned
            else:
                with device.explained(spec.name, "allocating buffers"):
                    buffer = pool.acquire(device, STORAGE, plan.out_size)
                if to_device:
                    result = DeviceArray._wrap(device, buffer, call.loop.result, shape,
                                               plan.out_strides if shape else (), 0, True)
                else:
                    temporaries.append(buffer)
                regions.append((buffer, 0, plan.out_size))
            try:
                table = pool.table(compiled, tuple(regions), cached)
            except ValidationError as exc:  # device arrays bound as the operator refuses (out overlapping an input)
                raise ValidationError(f"gpuops.{spec.numpy_name}: {exc}") from None
            device.check_uses(uses)
            with device.explained(spec.name, "recording"):
                table._record_locked(encoder)
            if to_device:
                device.submit(encoder, spec.name, uses)
                return _Running(device, None, result, temporaries)
        reading = start_read_back(device, pool, encoder, regions[-1][0], 0, plan.out_size, spec.name, uses)
    except BaseException:
        if temporaries:
            with device._lock:
                pool.release(*temporaries)
        raise
    return _Running(device, reading, _HostResult(plan, shape, out, call.loop.result == _BOOL), temporaries)


@dataclass(frozen=True)
class _HostResult:
    """Where a host call's result lands: a new array laid out as the output buffer, or out= (_host_target)."""

    plan: _CallPlan
    shape: tuple[int, ...]
    out: np.ndarray | None
    predicate: bool


class _Running:
    """A call submitted (_start): `finish` returns its result, waiting for a host result's read-back and copying it
    into place; the call's pooled buffers go back to the pool then (a device result's at once: the GPU orders their
    next use after this work)."""

    __slots__ = ("device", "reading", "result", "temporaries")

    def __init__(self, device: Device, reading: ReadBack | None, result, temporaries: list):
        self.device, self.reading, self.result, self.temporaries = device, reading, result, temporaries
        if reading is None and temporaries:
            with device._lock:
                device.pool.release(*temporaries)

    def finish(self) -> np.ndarray | DeviceArray | None:
        """The result: a device array, a new host array, or None where it went to out=."""
        if self.reading is None:
            return self.result
        host: _HostResult = self.result
        plan, shape = host.plan, host.shape
        target = _host_target(host.out, shape, plan)
        device = self.device

        def fill(mapped: memoryview) -> None:
            elements = np.frombuffer(mapped, plan.out_dtype, math.prod(plan.work_shape))
            if plan.out_packed:
                got = elements.reshape(plan.work_shape)
            else:
                got = np.lib.stride_tricks.as_strided(elements, plan.work_shape, plan.out_byte_strides,
                                                      writeable=False)
            device.host_copies.copy(target, np.flip(got, plan.flips).reshape(shape) if plan.flips
                                    else got.reshape(shape))

        temporaries = self.temporaries
        try:
            self.reading.finish(fill, temporaries)
        finally:
            if temporaries:
                with device._lock:
                    device.pool.release(*temporaries)
        if host.out is not None:
            return None
        return target.view(np.bool_) if host.predicate else target

    def abandon(self) -> None:
        """Wait for the call's read-back and give its buffers back, its result and any error dropped (a call
        beside it failed)."""
        try:
            self.finish()
        except Exception:
            pass


def _stage_uploads(spec: OperatorSpec, device: Device, plan: _CallPlan, arrays: list, copies: dict[int, np.ndarray],
                   temporaries: list) -> dict[int, object]:
    """The large host inputs (pool.uploads_mapped) copied into pooled mapped upload buffers, by position, before
    the call takes the device's lock: the host copy is the longest part of a large call, and other threads use the
    device meanwhile. An array given twice is staged once (at its first position, as _input_regions uploads it)."""
    staged: dict[int, object] = {}
    seen: set[int] = set()
    for index, array in enumerate(arrays):
        if plan.starts[index] is None:
            continue
        if index not in copies:
            if id(array) in seen:
                continue
            seen.add(id(array))
        raw = _upload_bytes(plan, arrays, copies, index)
        if uploads_mapped(raw.nbytes):
            staged[index] = fill_upload(device, device.pool, raw, spec.name)
            temporaries.append(staged[index])
    return staged


def _upload_bytes(plan: _CallPlan, arrays: list, copies: dict[int, np.ndarray], index: int) -> np.ndarray:
    """The bytes a host input is uploaded as, as its plan says: the array itself, the part of its memory it spans, or
    its copy."""
    if index in copies:
        return host_bytes(copies[index])
    array = arrays[index]
    return array if plan.whole[index] else _bytes_at(array, plan.starts[index], plan.spans[index])


def _bytes_at(array: np.ndarray, start: int, span: int) -> np.ndarray:
    """`span` bytes of `array`'s memory from `start` bytes past its data pointer (its plan says they are its)."""
    pointer = array.__array_interface__["data"][0] + start
    return np.ctypeslib.as_array((ctypes.c_ubyte * span).from_address(pointer))


def _input_regions(spec: OperatorSpec, device: Device, plan: _CallPlan, arrays: list, copies: dict[int, np.ndarray],
                   staged: dict[int, object], encoder, temporaries: list) -> tuple[list[tuple[object, int, int]], bool]:
    """Each input's (buffer, offset, size): a device array's own region, or a host array's bytes (_upload_bytes)
    uploaded into a pooled buffer, from its staged upload buffer where _stage_uploads made one, an array given twice
    uploaded once. Also whether every buffer is pool-made (the binding table may then be kept)."""
    regions: list[tuple[object, int, int]] = []
    uploaded: dict[int, tuple[object, int, int]] = {}  # id(array) -> region: one array, one layout, one upload
    cached = True
    with device.explained(spec.name, "uploading the inputs"):
        for index, array in enumerate(arrays):
            if plan.starts[index] is None:  # a device array
                regions.append(array._region())
                cached = cached and array.owned
                continue
            region = uploaded.get(id(array)) if index not in copies else None
            if region is None:
                raw = _upload_bytes(plan, arrays, copies, index)
                buffer, staging = upload(device, device.pool, raw, encoder, staged.get(index), spec.name)
                temporaries.append(buffer)
                if staging is not None:
                    temporaries.append(staging)
                region = uploaded[id(array)] = (buffer, 0, -(-raw.nbytes // 16) * 16)
            regions.append(region)
    return regions, cached


def _host_target(out, shape: tuple[int, ...], plan: _CallPlan) -> np.ndarray:
    """Where the read-back lands: out (a predicate's bool out as its bytes), or a new array laid out as the output
    buffer (packed in the inputs' memory order: the copy is then one linear pass)."""
    if out is not None:
        return out.view(np.uint8) if out.dtype == _BOOL else out
    if plan.out_packed and not plan.flips:
        return np.empty(shape, plan.out_dtype)
    target = empty_in_order(plan.work_shape, plan.out_strides, plan.out_dtype)
    if plan.flips:
        target = np.flip(target, plan.flips)
    return target.reshape(shape)
