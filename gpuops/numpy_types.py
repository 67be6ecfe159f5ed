"""NumPy's type rules for the NumPy-level functions: the dtype NumPy would compute in, and the operands in it.

The rules are NumPy's own (NEP 50), asked of the matching ufunc with `ufunc.resolve_dtypes`: arrays, NumPy scalars
and lists have strong types, Python int/float/complex scalars are weak (they take an array's type when it can hold
them). A call's dtype= or signature= and casting= go to resolve_dtypes too, so that they choose the loop and refuse
input conversions exactly as in the ufunc (a casting refusal is a CastingError, NumPy's UFuncTypeError). The
operands are then converted exactly as NumPy converts them (`astype` for arrays, NumPy's own conversion for Python
scalars, which refuses an int that does not fit). gpuops computes in that dtype when DirectML supports it for the
operator at the feature level, and refuses otherwise: it never computes in another type than NumPy.

Booleans are refused outright: DirectML has no boolean tensors, NumPy has no sign of a bool, and NumPy's remainder
of booleans in int8 is rarely what a caller meant.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import fperrors
from .enums import DataType, FeatureLevel, in_listing_order
from .errors import CastingError, ValidationError
from .operators import OperatorSpec

_WEAK = (int, float, complex)  # NumPy's weak Python scalars (bool is not one: it is refused below)


class UfuncLoop(NamedTuple):
    """NumPy's ufunc loop for one combination of operand types (not kernel.Loop, the shader's walk over memory):
    the dtype NumPy computes in (and its DataType) and the dtype NumPy returns."""

    compute: np.dtype
    data_type: DataType
    result: np.dtype


def refuse_subclass(where: str, name: str, value: object) -> None:
    """Array subclasses carry meaning a plain ndarray result would drop (a mask, matrix products); np.memmap is a
    plain array in a file and is kept."""
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray and not isinstance(value, np.memmap):
        if isinstance(value, np.ma.MaskedArray):
            lost = "its mask would be lost"
        elif isinstance(value, np.matrix):
            lost = "its matrix semantics would be lost"
        else:
            lost = "what the subclass adds would be lost"
        raise ValidationError(f"{where}: {name} is a {type(value).__module__}.{type(value).__name__}; gpuops "
                              f"computes on plain arrays and {lost}; pass np.asarray({name}) if that is meant")


def describe(name: str, value: object, array: np.ndarray | None) -> str:
    """An operand as the caller wrote it: 'a (int8)', 'b=2.9 (Python float)', 'a (a list, int64 to NumPy)'."""
    if type(value) in _WEAK or type(value) is bool:
        return f"{name}={value!r} (Python {type(value).__name__})"
    if _own_dtype(value) is not None:
        return f"{name} ({value.dtype})"
    kind = type(value).__name__
    return f"{name} (a {kind}, {array.dtype} to NumPy)" if array is not None else f"{name} (a {kind})"


def _own_dtype(value) -> np.dtype | None:
    """The dtype a value carries (arrays, NumPy scalars, gpuops device arrays), None for others (lists, Python
    scalars): what describes it without converting it."""
    dtype = getattr(value, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else None


def resolve(where: str, spec: OperatorSpec, level: FeatureLevel, names: tuple[str, ...], values: tuple,
            signature=None, casting: str = "same_kind",
            given: str = "") -> tuple[UfuncLoop, tuple[np.ndarray | None, ...]]:
    """NumPy's loop for the operands' types (the row's numpy_ufunc gives the type rules; `signature` and `casting`
    as the ufunc takes them, `given` the keyword as the caller wrote it, for messages), checked against the
    operator's support row at `level`, and each operand as NumPy sees it (np.asarray; None for a Python scalar),
    for `convert` to start from; ValidationError where an operand is refused or the loop is not one gpuops
    computes in, CastingError where `casting` refuses an operand's conversion. (The NumPy-level functions keep the
    loop per combination of operand types, layouts and keywords.)"""
    if spec.numpy_ufunc is None:
        raise ValidationError(f"{where}: DML_OPERATOR_{spec.name}: OperatorSpec.numpy_ufunc: None; the row names no "
                              "NumPy ufunc whose type rules to follow")
    arrays: list[np.ndarray | None] = []
    for name, value in zip(names, values):
        refuse_subclass(where, name, value)
        if type(value) in _WEAK:
            arrays.append(None)
            continue
        array = _as_array(where, name, value)
        if array.dtype == np.bool_:
            if type(value) is bool:
                advice = f"int({name}) (a Python int takes the other operands' type)"
            elif hasattr(value, "astype"):
                advice = f"{name}.astype(np.int8) (or another number type)"
            else:
                advice = f"np.asarray({name}, np.int8) (or another number type)"
            raise ValidationError(f"{where}: {describe(name, value, array)}: DirectML has no boolean tensors and "
                                  f"gpuops does not pick a number type for it; pass {advice}")
        arrays.append(array)
    descriptors = tuple(type(v) if a is None else a.dtype for v, a in zip(values, arrays))
    return _supported_loop(where, spec, level, names, values, arrays, descriptors, signature, casting, given), \
        tuple(arrays)


def convert(where: str, names: tuple[str, ...], values: tuple, index: int, compute: np.dtype,
            array: np.ndarray | None = None) -> np.ndarray:
    """Operand `index` in `compute`, converted as NumPy converts it: NumPy's own conversion for a Python scalar
    (which refuses an int that does not fit), `astype` for anything else (exact where resolve chose the loop safe;
    as the ufunc's own cast where casting= allowed more). `array`: the operand as resolve saw it, where at hand (a
    list is then not made into an array twice). A conversion that may raise NumPy's floating-point errors (a float
    to an integer or a narrower float, an integer to float16) reports them as the ufunc reports its input casts,
    "... encountered in cast", at the caller's line (fperrors)."""
    name, value = names[index], values[index]
    if type(value) in _WEAK:
        try:
            if not _may_raise(np.dtype(type(value)), compute):
                return np.asarray(value, dtype=compute)
            with fperrors.captured() as raised:
                converted = np.asarray(value, dtype=compute)
            fperrors.report("cast", _flags(raised))
            return converted
        except (OverflowError, ValueError) as exc:
            arrays = [None if type(v) in _WEAK or _own_dtype(v) is not None else np.asarray(v) for v in values]
            raise ValidationError(f"{where}: {name}={value!r} does not fit {compute}, the type NumPy computes in for "
                                  f"{_operands(names, values, arrays)}: {exc}") from None
    if array is None:
        array = _as_array(where, name, value)
    if array.dtype == compute:
        return array
    if not _may_raise(array.dtype, compute):
        return array.astype(compute)
    with fperrors.captured() as raised:
        converted = array.astype(compute)
    fperrors.report("cast", _flags(raised))
    return converted


def _may_raise(source: np.dtype, target: np.dtype) -> bool:
    """Whether converting `source` values to `target` can raise a floating-point error (NaN or inf to an integer,
    overflow to a narrower float): where it cannot, no capture is set up (it costs more than a small conversion)."""
    if source.kind in "fc":
        return target.kind in "iu" or (target.kind == "f" and target.itemsize < source.itemsize)
    return target == np.float16 and source.kind in "iu"


def _flags(raised: list[int]) -> int:
    flags = 0
    for status in raised:
        flags |= status
    return flags


def _as_array(where: str, name: str, value) -> np.ndarray:
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"{where}: {name} {value!r:.80} is not an array NumPy can make: {exc}") from None


def _supported_loop(where: str, spec: OperatorSpec, level: FeatureLevel, names: tuple[str, ...], values: tuple,
                    arrays: list, descriptors: tuple, signature, casting: str, given: str) -> UfuncLoop:
    """NumPy's ufunc loop for the operand types, or ValidationError where NumPy has no loop or DirectML does not
    support the compute type for the operator at `level`, CastingError where `casting` refuses an input."""
    ufunc = spec.numpy_ufunc
    try:
        # (resolve_dtypes takes no signature=None)
        loop = ufunc.resolve_dtypes(descriptors + (None,), casting=casting,
                                    **({} if signature is None else {"signature": signature}))
    except (TypeError, ValueError) as exc:
        if hasattr(exc, "casting") and hasattr(exc, "from_"):  # NumPy's _UFuncCastingError
            raise CastingError(f"{where}: {exc}", ufunc, exc.casting, exc.from_, exc.to) from None
        if given:  # a signature or dtype NumPy refuses, or finds no loop for
            raise ValidationError(f"{where}: {given}: {exc} (NumPy's {ufunc.__name__} for "
                                  f"{_operands(names, values, arrays)})") from None
        # NumPy has no loop for these types (strings, complex remainders, ...)
        raise ValidationError(f"{where}: NumPy has no {ufunc.__name__} for {_operands(names, values, arrays)}") \
            from None
    compute, result = loop[0], loop[-1]
    data_type = DataType.from_numpy(compute)
    row = spec.support_row(level)
    allowed = row.input_types if row else frozenset()
    if data_type is None or data_type not in allowed:
        names_allowed = ", ".join(t.numpy_dtype.name for t in in_listing_order(allowed)) or \
            "none (the operator does not exist at that level)"
        # astype helps only where a narrower type of the same kind is allowed (float64 -> float32, not int8 -> a float)
        narrower = any(t.numpy_dtype.kind == compute.kind and t.size < compute.itemsize for t in allowed)
        advice = " (convert the operands with astype if a narrower type is meant)" if narrower else ""
        raise ValidationError(f"{where}: {_operands(names, values, arrays)}: NumPy computes in {compute}; gpuops "
                              f"computes {spec.numpy_name} at feature level {level.label} in {names_allowed} and "
                              f"does not cast{advice}")
    return UfuncLoop(compute, data_type, result)


def _operands(names: tuple[str, ...], values: tuple, arrays: list) -> str:
    """The operands as refusals name them: 'a (int8), b=2.9 (Python float)'."""
    return ", ".join(describe(n, v, a) for n, v, a in zip(names, values, arrays))
