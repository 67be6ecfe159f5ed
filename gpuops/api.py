"""NumPy-level functions: arrays in, arrays out, through the DirectML-level layer.

Types follow NumPy's rules (NEP 50, see numpy_types.py): the result has the dtype NumPy's ufunc would give
(np.sign, np.isnan, np.isinf, np.remainder, np.fmod), operands of another dtype are converted as NumPy converts them,
and where NumPy would compute in a type DirectML does not support for the operator (float64, bool, complex, ...) the
call is refused rather than computed in another type. is_nan and is_infinity return bool arrays (computed as
DirectML's UINT8 and viewed as bool: the values are exactly 0 and 1). 0-d and all-scalar inputs give NumPy scalars,
as ufuncs do; empty results need no GPU work. The ufunc keywords are NumPy's (docs/semantics.md): dtype= and
signature= choose the loop and casting= the conversions allowed (numpy_types.resolve); out= takes any dtype casting=
allows and a shape the inputs broadcast to, the result converted into it on the host where its bytes do not hold it
as it is; order= lays out a new result. Floating-point errors are reported as the ufunc reports them (fperrors): the
modulus kernels of a host result set a flag word (kernel.Operation.error_flags) read back with the result, and the
host's conversions are captured.

Arrays run in their own memory layout: a non-contiguous view becomes a strided tensor (its bytes are uploaded as
they lie, from its first element to its last) and NumPy broadcasting becomes zero strides. A sparse view, whose
memory span is more than twice its elements' bytes plus 64 KiB (GATHER_SLACK_BYTES), is first gathered on the host
into a packed copy of just its elements (keeping its axis order), so that its cost follows its element count
rather than the span (M[:, 0] of a large matrix, x[::1000]). Up to that threshold uploading the span costs at most
about twice the packed bytes and saves the host copy, and small arrays are dominated by fixed costs anyway.

A call is one submission: the host inputs' bytes go into pooled device buffers (gpuops/pool.py), the kernels run,
the output is copied into a pooled staging buffer, which is mapped and copied once into the result (or straight
into out=). What a call's operand types and layouts decide (NumPy's loop, the broadcast shape, which operands are
converted or gathered, the prepared operator, the output's strides) is kept per device as a _Call for the next call
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
import threading
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass

import numpy as np

from . import fperrors
from .arrays import UFUNC_FUNCTIONS, DeviceArray, empty_in_order, host_bytes, layout_stand_in
from .device import Device, PreparedOperator, default_device
from .enums import DataType, FeatureLevel, IsInfinityMode
from .errors import CastingError, DeviceError, ValidationError, shown
from .layout import coalesce
from .numpy_types import UfuncLoop, convert, refuse_subclass, resolve
from .operators import OperatorSpec, spec_by_name
from .pool import FLAG_BYTES, STORAGE, ReadBack, fill_upload, pool_of, start_read_back, upload, uploads_mapped
from .tensor import TensorDesc, packed_strides

MAX_CALLS = 1024  # operand combinations whose _Call a device keeps (LRU): each holds a prepared operator and tuples
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


# Every function takes the ufunc keywords out, where, casting, order, dtype, subok and signature as NumPy's ufunc
# does (docs/semantics.md, "The NumPy-level functions"), and device= and feature_level=.


def sign(x, *, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True, signature=None,
         device: Device | None = None, feature_level=None) -> Result:
    """-1, 0 or 1 in x's dtype (NaN and -0 give +0), with np.sign's types and keywords."""
    return _run(_SIGN, (x,), (), out, device, feature_level,
                _options(_SIGN, where, casting, order, dtype, subok, signature))


def is_nan(x, *, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True, signature=None,
           device: Device | None = None, feature_level=None) -> Result:
    """bool: True where x is NaN, with np.isnan's types and keywords."""
    return _run(_IS_NAN, (x,), (), out, device, feature_level,
                _options(_IS_NAN, where, casting, order, dtype, subok, signature))


def is_infinity(x, mode: IsInfinityMode | str | int = "either", *, out=None, where=True, casting="same_kind",
                order="K", dtype=None, subok=True, signature=None, device: Device | None = None,
                feature_level=None) -> Result:
    """bool: True where x is an infinity of the sign `mode` selects ("either": np.isinf, "positive": np.isposinf,
    "negative": np.isneginf), with np.isinf's types and keywords."""
    return _run(_IS_INFINITY, (x,), (("infinity_mode", _infinity_mode(mode)),), out, device, feature_level,
                _options(_IS_INFINITY, where, casting, order, dtype, subok, signature))


def modulus_floor(a, b, *, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True,
                  signature=None, device: Device | None = None, feature_level=None) -> Result:
    """Python's modulus: np.remainder bit for bit, with its types, keywords and floating-point errors."""
    return _run(_MODULUS_FLOOR, (a, b), (), out, device, feature_level,
                _options(_MODULUS_FLOOR, where, casting, order, dtype, subok, signature))


def modulus_truncate(a, b, *, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True,
                     signature=None, device: Device | None = None, feature_level=None) -> Result:
    """C's remainder: np.fmod bit for bit, with its types, keywords and floating-point errors."""
    return _run(_MODULUS_TRUNCATE, (a, b), (), out, device, feature_level,
                _options(_MODULUS_TRUNCATE, where, casting, order, dtype, subok, signature))


UFUNC_FUNCTIONS.update({np.sign: sign, np.isnan: is_nan, np.isinf: is_infinity, np.remainder: modulus_floor,
                        np.fmod: modulus_truncate})  # what device arrays' __array_ufunc__ runs


def gathers(array: np.ndarray) -> bool:
    """True when `array` is gathered on the host before upload: its memory span (first element to last) is more
    than twice its elements' bytes plus GATHER_SLACK_BYTES. Broadcast (zero-stride) views span little and are
    never gathered."""
    if array.size == 0:
        return False
    span = sum((n - 1) * abs(s) for n, s in zip(array.shape, array.strides)) + array.itemsize
    return span > 2 * array.size * array.itemsize + GATHER_SLACK_BYTES


@dataclass(frozen=True)
class _Options:
    """A call's ufunc keywords that decide its _Call (part of its key): NumPy's casting rule, the new result's
    memory order ('K', 'C', 'F' or 'A'), the signature given (dtype= as NumPy reads it: the outputs' DType), and
    how the caller wrote it, for messages."""

    casting: str = "same_kind"
    order: str = "K"
    signature: object = None
    given: str = ""


_DEFAULT_OPTIONS = _Options()
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _options(function: _Function, where, casting, order, dtype, subok, signature) -> _Options:
    """The ufunc keywords checked: `where` True (every element: gpuops computes each one) and `subok` a bool (gpuops
    refuses array subclasses, so both give a plain ndarray, as NumPy gives for plain arrays); the others as _Options.
    NumPy's signature and dtype are checked with the loop (numpy_types.resolve)."""
    if where is not True:
        raise ValidationError(f"{function.where}: where={_shown(where)}; gpuops computes every element: only "
                              "where=True (the default) is taken")
    if subok is not True and subok is not False:
        raise ValidationError(f"{function.where}: subok={_shown(subok)}; allowed: True or False (a bool, as NumPy "
                              "asks)")
    if casting == "same_kind" and order == "K" and dtype is None and signature is None:
        return _DEFAULT_OPTIONS
    if type(casting) is not str or casting not in _CASTINGS:
        raise ValidationError(f"{function.where}: casting={_shown(casting)}; allowed: "
                              f"{', '.join(map(repr, _CASTINGS))}")
    if order is None:
        order = "K"
    if type(order) is not str or order.upper() not in ("K", "C", "F", "A"):
        raise ValidationError(f"{function.where}: order={_shown(order)}; allowed: 'K', 'C', 'F', 'A' or None")
    if dtype is not None and signature is not None:
        raise ValidationError(f"{function.where}: dtype={_shown(dtype)} and signature={_shown(signature)}; give "
                              "one of them (NumPy refuses both)")
    given = ""
    if dtype is not None:
        signature, given = (None,) * len(function.names) + (dtype,), f"dtype={_shown(dtype)}"
    elif signature is not None:
        given = f"signature={_shown(signature)}"
    return _Options(casting, order.upper(), signature, given)


def _shown(value) -> str:
    """A keyword's value as the caller wrote it, on one line and cut short."""
    return " ".join(shown(value).split())


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
    """What one combination of operand types and layouts (and out's, and the keywords) decides, kept per device
    (_calls_of) for the next call with the same combination: NumPy's loop, the result's shape (out's, where
    given), how each operand reaches the GPU, whether the result stays on the device, whether out takes it through
    a conversion on the host, whether the kernel reports floating-point errors, and the kernel plan (None where the
    result is empty). The key (_call_key) holds everything these depend on; what a call's values decide (whether a
    Python int fits) is checked on every call."""

    loop: UfuncLoop
    shape: tuple[int, ...]
    kinds: tuple[str, ...]
    to_device: bool
    converts_out: bool  # a host out of a dtype whose bytes are not the kernel's: the result is cast into it
    reports: bool  # the kernel sets NumPy's error flags (kernel.Operation.error_flags): a host result's
    plan: _CallPlan | None
    streamed: bool = False  # a host call larger than a piece: run by _stream, in pieces (plan None)


def _run(function: _Function, values: tuple, extra: tuple, out, device: Device | None, feature_level,
         options: _Options) -> Result:
    if type(out) is tuple:  # NumPy's form for every ufunc: one entry per output
        if len(out) != 1:
            raise ValidationError(f"{function.where}: out is a tuple of {len(out)}; the 'out' tuple must have "
                                  "exactly one entry per ufunc output, and these functions have one")
        out = out[0]
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"{function.where}: device {device!r} is a {type(device).__name__}, not a gpuops.Device; "
                        "pass a gpuops.Device, or None for the default device")
    if type(out) is DeviceArray or DeviceArray in map(type, values):
        device = _common_device(function, values, out, device)
    elif device is None:
        device = default_device()
    call, arrays, copies = _call_of(function, device, values, extra, out, feature_level, options)
    if call.streamed:
        result, error_flags = _stream(function, device, call, arrays, extra, out, feature_level, options)
    elif call.plan is None:  # an empty result: no GPU work
        if out is not None:
            return out
        if call.to_device:
            return _empty_device_array(device, call.shape, call.loop.result)
        return np.empty(call.shape, call.loop.result)
    else:
        running = _start(function.spec, device, call, arrays, copies, out)
        result = running.finish()
        error_flags = running.error_flags
    # A host result's floating-point errors (the kernel's flag word, the conversion into out), once per call, as
    # NumPy's ufunc reports them.
    fperrors.report(function.spec.numpy_ufunc.__name__, error_flags)
    if out is not None:
        return out
    return result[()] if type(result) is np.ndarray and result.ndim == 0 else result  # a NumPy scalar, as ufuncs give


# Each device's _Calls by key (_call_key), the least recently used dropped past MAX_CALLS; read and changed under the
# device's lock. Held weakly by device: a dropped Device takes its table with it.
_CALLS: weakref.WeakKeyDictionary[Device, OrderedDict[tuple, _Call]] = weakref.WeakKeyDictionary()
_CALLS_LOCK = threading.Lock()  # (making a device's table: devices with their own locks add them side by side)


def _calls_of(device: Device) -> OrderedDict[tuple, _Call]:
    """`device`'s table of _Calls, made on its first call."""
    calls = _CALLS.get(device)
    if calls is None:
        with _CALLS_LOCK:
            calls = _CALLS.setdefault(device, OrderedDict())
    return calls


def _call_of(function: _Function, device: Device, values: tuple, extra: tuple, out, feature_level,
             options: _Options) -> tuple[_Call, list, dict[int, np.ndarray]]:
    """The call's _Call (kept per device, or prepared and kept), its operands as they run and the inputs copied to
    run (by position: see _make_plan)."""
    calls = _calls_of(device)
    key = _call_key(function, extra, device.feature_level if feature_level is None else feature_level, values, out,
                    options)
    with device.lock:
        try:
            call = calls.get(key) if key is not None else None
        except TypeError:  # an unhashable feature_level or signature: _prepare says what is wrong with it
            call = key = None
        if call is not None:
            calls.move_to_end(key)
    if call is not None:
        return call, _operands(function, call, values), {}
    call, arrays, copies = _prepare(function, device, values, dict(extra), out, feature_level, options)
    if key is not None and not copies:  # inputs copied to run have no plan worth keeping (see _make_plan)
        with device.lock:
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
            feature_level, options: _Options) -> tuple[np.ndarray | None, int]:
    """A host call larger than a piece (_piece_bytes), run as ordinary calls on pieces of its result, each into
    its own part of the result array (or out=): so any size runs through buffers no larger than a piece, and
    STREAM_DEPTH pieces are under way at once, one's upload and read-back copies on the host while the GPU runs
    the next. The pieces follow the result's memory order (_pieces), so each piece of a packed operand is one
    contiguous run. An input that shares memory with out= in another layout is copied first: a piece's result
    must not overwrite what a later piece still reads (NumPy's own rule for overlapping operands). Returns the
    new result (None where it went to out=) and the floating-point error flags the pieces raised, for the call to
    report once."""
    shape = call.shape
    views = [np.broadcast_to(array, shape) for array in arrays]
    if out is None:
        order = options.order
        if order == "A":  # NumPy's: Fortran order where every input is F-contiguous, else C
            order = "F" if all(a.flags.f_contiguous for a in arrays) else "C"
        target = (empty_in_order(shape, _output_strides(views, shape), call.loop.result) if order == "K"
                  else np.empty(shape, call.loop.result, order=order))
    else:
        target = out
        views = [v if not np.may_share_memory(v, out) or _same_layout(v, out) else v.copy() for v in views]
    itemsize = max(a.itemsize for a in (*arrays, call.loop.result))
    pieces = _pieces(shape, target.strides, max(1, _piece_bytes(device) // itemsize))
    running: deque[_Running] = deque()
    error_flags = 0
    try:
        for index in pieces:
            part = target[index]
            piece, piece_arrays, copies = _call_of(function, device, tuple(v[index] for v in views), extra, part,
                                                   feature_level, options)
            running.append(_start(function.spec, device, piece, piece_arrays, copies, part))
            if len(running) >= STREAM_DEPTH:
                finished = running.popleft()
                finished.finish()
                error_flags |= finished.error_flags
        while running:
            finished = running.popleft()
            finished.finish()
            error_flags |= finished.error_flags
    except BaseException:
        for rest in running:
            rest.abandon()
        raise
    return (target if out is None else None), error_flags


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


def _call_key(function: _Function, extra: tuple, feature_level, values: tuple, out, options: _Options
              ) -> tuple | None:
    """The key of a call's _Call: everything _prepare decides from (the operands' types and layouts, out's, the
    level as given or the device's, the keywords), not the data. None where an operand has no such summary (a
    list, a subclass): such calls are prepared each time."""
    key = [function, extra, type(feature_level), feature_level, options]
    for value in (out, *values):
        kind = type(value)
        if kind is np.ndarray:
            key.append((kind, value.dtype, value.shape, value.strides, value.flags.writeable))
        elif kind is DeviceArray:
            key.append((kind, value.dtype, value.shape, value.strides))
        elif kind in _PYTHON_SCALARS or value is None:
            key.append(kind)
        elif isinstance(value, np.generic):
            key.append((kind, value.dtype))
        else:
            return None
    return tuple(key)


def _prepare(function: _Function, device: Device, values: tuple, extra: dict, out, feature_level,
             options: _Options) -> tuple[_Call, list, dict[int, np.ndarray]]:
    """A call's _Call from its arguments, every rule checked; also the operands as they run and the inputs copied
    to run (by position: see _make_plan)."""
    spec, names, where = function.spec, function.names, function.where
    level = _feature_level(where, feature_level, device)
    stand_ins = tuple(_type_stand_in(where, n, v) for n, v in zip(names, values))
    loop, seen = resolve(where, spec, level, names, stand_ins, options.signature, options.casting, options.given)
    written = None  # the DataType the kernel writes where out's bytes take it as it is
    if out is not None:
        written = _check_out(function, level, out, loop, options.casting)
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
    if out is not None:
        shape = _out_shape(where, out, shape)
    to_device = type(out) is DeviceArray or (out is None and _DEVICE in kinds)
    reports = spec.error_flags and not to_device  # device results report no errors (docs/semantics.md)
    converts_out = out is not None and written is None
    widest = math.prod(shape) * max(a.itemsize for a in (*arrays, loop.result))
    if widest > 16 and not to_device and _DEVICE not in kinds and widest > _piece_bytes(device):  # (at least 16)
        return _Call(loop, shape, tuple(kinds), to_device, converts_out, reports, None, streamed=True), arrays, {}
    plan, copies = None, {}
    if math.prod(shape) != 0:
        arrays = _gathered(arrays, kinds)
        output_type = written or (DataType.UINT8 if loop.result == _BOOL else loop.data_type)
        plan, copies = _make_plan(spec, device, level, arrays, shape, loop.data_type, output_type, extra, out,
                                  to_device, options.order)
    return _Call(loop, shape, tuple(kinds), to_device, converts_out, reports, plan), arrays, copies


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
    with device.lock:
        buffer = pool.acquire(device, STORAGE, 16)
    return DeviceArray.of_pooled_buffer(device, buffer, dtype, shape, packed_strides(shape))


def _check_out(function: _Function, level: FeatureLevel, out, loop: UfuncLoop, casting: str) -> DataType | None:
    """out's type and dtype checked: NumPy's casting rule from the result's dtype to out's (CastingError, NumPy's
    words), and a device out only where the GPU writes its dtype exactly. Returns the DataType the kernel writes
    where out's bytes take the kernel's output as it is (written_type), None where the result is converted into
    out on the host."""
    where = function.where
    on_device = type(out) is DeviceArray
    if not on_device:
        if not isinstance(out, np.ndarray):
            raise ValidationError(f"{where}: out is {type(out).__name__}, not a numpy.ndarray or a "
                                  "gpuops.DeviceArray (or a tuple of one)")
        refuse_subclass(where, "out", out)
        if not out.flags.writeable:
            raise ValidationError(f"{where}: out is read-only")
    ufunc = function.spec.numpy_ufunc
    if not np.can_cast(loop.result, out.dtype, casting):
        raise CastingError(f"{where}: Cannot cast ufunc {ufunc.__name__!r} output from {loop.result!r} to "
                           f"{out.dtype!r} with casting rule {casting!r}", ufunc, casting, loop.result, out.dtype)
    written = written_type(function.spec, level, loop, out.dtype)
    if not on_device and written is DataType.UINT32:
        written = None  # a host out: a byte a result to read back, converted on the host, moves a quarter as much
    if on_device and written is None:
        raise ValidationError(f"{where}: out is a device array of {out.dtype} and the result is {loop.result}; the "
                              f"GPU does not write {out.dtype} exactly, and gpuops converts only on the host: pass "
                              f"out of dtype {loop.result} (or a host array)")
    return written


def written_type(spec: OperatorSpec, level: FeatureLevel, loop: UfuncLoop, dtype: np.dtype) -> DataType | None:
    """The DataType the kernel writes so that memory of `dtype` holds NumPy's results as they are: the result's own
    type, or an integer type of the same size (the same bits: NumPy converts integers of one size by their bits);
    for a predicate (bool results, 0 or 1) any integer or bool dtype of the size of an output type the operator
    has at `level` (UINT8, or IS_NAN's UINT32 from 3_0). None where only a conversion gives them."""
    if not dtype.isnative:
        return None
    if loop.result == _BOOL:
        if dtype.kind not in "biu":
            return None
        row = spec.support_row(level)
        outputs = row.output_types if row else frozenset()
        return next((t for t in (DataType.UINT8, DataType.UINT32) if t.size == dtype.itemsize and t in outputs),
                    None)
    if dtype == loop.result or (dtype.kind in "iu" and loop.result.kind in "iu"
                                and dtype.itemsize == loop.result.itemsize):
        return loop.data_type
    return None


def _out_shape(where: str, out, shape: tuple[int, ...]) -> tuple[int, ...]:
    """out's shape, where the inputs' broadcast `shape` broadcasts to it (NumPy broadcasts the inputs to out)."""
    try:
        fits = np.broadcast_shapes(shape, out.shape) == out.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValidationError(f"{where}: non-broadcastable output operand with shape {out.shape} doesn't match the "
                              f"broadcast shape {shape}")
    return out.shape


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


def _ordered_strides(shape: tuple[int, ...], fortran: bool) -> tuple[int, ...]:
    """Packed element strides in C order, or Fortran order (the first dimension fastest)."""
    if not fortran:
        return packed_strides(shape)
    return packed_strides(shape[::-1])[::-1]


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
    """What a call's layout decides on the GPU side (part of its _Call): the prepared operator, the output's
    element strides over the work shape and the flipped axes, per input where its uploaded bytes start from its
    data pointer and how many there are (None for a device array), and how the output buffer is read back."""

    operator: PreparedOperator  # (the call holds its Device: see PreparedOperator)
    out_strides: tuple[int, ...]
    flips: tuple[int, ...]
    starts: tuple[int | None, ...]
    spans: tuple[int | None, ...]
    whole: tuple[bool, ...]  # per input: its upload is the array itself (all its bytes, in C order)
    out_size: int
    out_packed: bool  # the output is in C order (its read-back needs no strided view)
    order: str  # a new host result's memory order: 'K' (the output buffer's), 'C' or 'F'

    work_shape: tuple[int, ...]  # the output's shape, (1,) for a 0-d one
    out_dtype: np.dtype  # the output buffer's elements (uint8 for a predicate)
    out_byte_strides: tuple[int, ...]


def _make_plan(spec: OperatorSpec, device: Device, level: FeatureLevel, arrays: list, shape: tuple[int, ...],
               data_type: DataType, output_type: DataType, extra: dict, out, to_device: bool, order: str
               ) -> tuple[_CallPlan, dict[int, np.ndarray]]:
    """The call's plan, and the inputs that had to be copied to run (by position): a plan with copies is not
    kept, as the copies are made again each call. `order`: NumPy's order= for a new result ('K', 'C', 'F', 'A')."""
    where = f"gpuops.{spec.numpy_name}"
    work_shape = shape or (1,)
    on_device = [type(a) is DeviceArray for a in arrays]
    originals = [layout_stand_in(a) if device_array else a for a, device_array in zip(arrays, on_device)]
    if order == "A":  # NumPy's: Fortran order where every input is F-contiguous (a 1-D or 0-d one is), else C
        order = "F" if all(a.flags.f_contiguous for a in originals) else "C"
    views = [np.broadcast_to(a, shape) for a in originals]
    views = [v.reshape(work_shape) if shape == () else v for v in views]
    # Device arrays and device results have strides >= 0 in their axes' own direction: host inputs that step
    # backwards are then copied rather than run reversed.
    views, flips, copied = _positive_strides(views, allow_flips=not (to_device or any(on_device)))
    if type(out) is DeviceArray:
        out_strides = out.strides if shape else (1,)
    elif order == "K":
        out_strides = _output_strides(views, work_shape)
    else:  # the order asked for, in the work's own direction (a flipped axis is flipped back on the host)
        out_strides = _ordered_strides(work_shape, fortran=order == "F")
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
    operator = device.prepare(desc, feature_level=level)
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
    plan = _CallPlan(operator, tuple(out_strides), flips, tuple(starts), tuple(spans), whole, out_size,
                     tuple(out_strides) == packed_strides(work_shape), order, work_shape, output_type.numpy_dtype,
                     tuple(s * output_type.size for s in out_strides))
    return plan, {index: views[index] for index in copied}


def _start(spec: OperatorSpec, device: Device, call: _Call, arrays: list[np.ndarray | DeviceArray],
           copies: dict[int, np.ndarray], out) -> _Running:
    """Submit `call`'s plan on `device`: a device result is ready at once, a host result once the _Running's
    read-back is finished. `copies`: the inputs copied to run, by position (see _make_plan).

    One submission: the host inputs' bytes put into pooled buffers (large ones first copied into mapped upload
    buffers, outside the device's lock), the kernels, and for a host result the copy into a pooled staging buffer
    (and the kernel's error flag word after it), whose mapping is begun."""
    pool = device.pool
    plan, shape, to_device = call.plan, call.shape, call.to_device
    operator = plan.operator
    # The caller's buffers (device arrays, out=), checked before recording and again at the submit: destroyed or
    # mapped since they were bound. This call's pooled buffers are gpuops' alone: nothing else can have destroyed
    # or mapped them.
    uses = [(operator.refused_as, name, value.buffer) for name, value in zip(spec.tensor_fields, (*arrays, out))
            if type(value) is DeviceArray] if to_device or _DEVICE in call.kinds else []
    temporaries: list = []  # the pool's buffers this call gives back when done
    try:
        staged = _stage_uploads(spec, device, plan, arrays, copies, temporaries)
        with device.lock:  # one device's wgpu calls are never made from two threads at once
            with device.explained(spec.name, "recording"):  # (Dawn raises here on a lost device)
                encoder = device.wgpu_device.create_command_encoder()
            regions, cached = _input_regions(spec, device, plan, arrays, copies, staged, encoder, temporaries)
            result = None
            if type(out) is DeviceArray:
                regions.append(out.region())
                cached = cached and out.owned
            else:
                with device.explained(spec.name, "allocating buffers"):
                    buffer = pool.acquire(device, STORAGE, plan.out_size)
                if to_device:
                    result = DeviceArray.of_pooled_buffer(device, buffer, call.loop.result, shape,
                                                          plan.out_strides if shape else ())
                else:
                    temporaries.append(buffer)
                regions.append((buffer, 0, plan.out_size))
            flags = None  # the kernel's error flag word (kernel.Operation.error_flags): cleared in this submission
            if call.reports:
                with device.explained(spec.name, "allocating buffers"):
                    flags = pool.flag_word(device)
                encoder.clear_buffer(flags, 0, FLAG_BYTES)
            try:
                table = pool.table(operator, tuple(regions), cached, flags)
            except ValidationError as exc:  # device arrays bound as the operator refuses (out overlapping an input)
                raise ValidationError(f"gpuops.{spec.numpy_name}: {exc}") from None
            device.check_uses(uses)
            with device.explained(spec.name, "recording"):
                table.record_unchecked(encoder)
            if to_device:
                device.submit(encoder, spec.name, uses)
                return _Running(device, None, result, temporaries)
        tail = (flags, 0, FLAG_BYTES) if flags is not None else None
        reading = start_read_back(device, pool, encoder, regions[-1][0], 0, plan.out_size, spec.name, uses, tail)
    except BaseException:
        if temporaries:
            with device.lock:
                pool.release(*temporaries)
        raise
    return _Running(device, reading, _HostResult(plan, shape, out, call.loop.result == _BOOL, call.converts_out,
                                                 flags is not None), temporaries)


@dataclass(frozen=True)
class _HostResult:
    """Where a host call's result lands: a new array laid out as the output buffer, or out= (_host_target), as
    its bytes take it or through NumPy's own cast (`converts_out`); `flagged`: the error flag word follows the
    output in the read-back."""

    plan: _CallPlan
    shape: tuple[int, ...]
    out: np.ndarray | None
    predicate: bool
    converts_out: bool
    flagged: bool


class _Running:
    """A call submitted (_start): `finish` returns its result, waiting for a host result's read-back and copying it
    into place; the call's pooled buffers go back to the pool then (a device result's at once: the GPU orders their
    next use after this work). `error_flags`: NumPy's floating-point error flags the call raised (the kernel's flag
    word and the conversion into out's), known once it is finished; the caller reports them (fperrors)."""

    __slots__ = ("device", "reading", "result", "temporaries", "error_flags")

    def __init__(self, device: Device, reading: ReadBack | None, result, temporaries: list):
        self.device, self.reading, self.result, self.temporaries = device, reading, result, temporaries
        self.error_flags = 0
        if reading is None and temporaries:
            with device.lock:
                device.pool.release(*temporaries)

    def finish(self) -> np.ndarray | DeviceArray | None:
        """The result: a device array, a new host array, or None where it went to out=."""
        if self.reading is None:
            return self.result
        host: _HostResult = self.result
        plan, shape, out = host.plan, host.shape, host.out
        target = _host_target(out, shape, plan, host.converts_out)
        device = self.device
        raised: list[int] = []  # NumPy's error flags: the kernel's, and the conversion into out's

        def fill(mapped: memoryview) -> None:
            elements = np.frombuffer(mapped, plan.out_dtype, math.prod(plan.work_shape))
            if plan.out_packed:
                got = elements.reshape(plan.work_shape)
            else:
                got = np.lib.stride_tricks.as_strided(elements, plan.work_shape, plan.out_byte_strides,
                                                      writeable=False)
            got = np.flip(got, plan.flips).reshape(shape) if plan.flips else got.reshape(shape)
            if host.flagged:
                raised.append(int(np.frombuffer(mapped, np.uint32, 1, plan.out_size)[0]))
            if target is not None:
                device.host_copies.copy(target, got)
                return
            # NumPy's own cast into out, on this thread: its errors are the ufunc's (np.remainder into a float16
            # out reports "overflow encountered in remainder")
            with fperrors.captured() as cast_raised:
                np.copyto(out, got.view(np.bool_) if host.predicate else got, casting="unsafe")
            raised.extend(cast_raised)

        temporaries = self.temporaries
        try:
            self.reading.finish(fill, temporaries)
        finally:
            if temporaries:
                with device.lock:
                    device.pool.release(*temporaries)
        for status in raised:
            self.error_flags |= status
        if out is not None:
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
                regions.append(array.region())
                cached = cached and array.owned
                continue
            region = uploaded.get(id(array)) if index not in copies else None
            if region is None:
                raw = _upload_bytes(plan, arrays, copies, index)
                buffer = upload(device, device.pool, raw, encoder, staged.get(index), spec.name)
                temporaries.append(buffer)
                region = uploaded[id(array)] = (buffer, 0, -(-raw.nbytes // 16) * 16)
            regions.append(region)
    return regions, cached


def _host_target(out, shape: tuple[int, ...], plan: _CallPlan, converts_out: bool) -> np.ndarray | None:
    """Where the read-back lands: out, as the kernel's output type (its bytes take it as it is: a predicate's bool
    out as uint8, an int8 result's uint8 out as int8); None where it is converted into out; or a new array, in the
    order asked for or else laid out as the output buffer (packed in the inputs' memory order: the copy is then one
    linear pass)."""
    if out is not None:
        return None if converts_out else out if out.dtype == plan.out_dtype else out.view(plan.out_dtype)
    if plan.order != "K":
        return np.empty(shape, plan.out_dtype, order=plan.order)
    if plan.out_packed:
        return np.empty(shape, plan.out_dtype)
    # (with strides >= 0, as NumPy's order='K' gives them for inputs that step backwards)
    return empty_in_order(plan.work_shape, plan.out_strides, plan.out_dtype).reshape(shape)
