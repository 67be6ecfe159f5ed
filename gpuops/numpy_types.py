"""NumPy's type rules for the NumPy-level functions: the dtype NumPy would compute in, and the operands in it.

The rules are NumPy's own (NEP 50), asked of the matching ufunc with `ufunc.resolve_dtypes`: arrays, NumPy scalars
and lists have strong types, Python int/float/complex scalars are weak (they take an array's type when it can hold
them). The operands are then converted exactly as NumPy converts them (`astype` for arrays, NumPy's own conversion
for Python scalars, which refuses an int that does not fit). gpuops computes in that dtype when DirectML supports
it for the operator at the feature level, and refuses otherwise: it never computes in another type than NumPy.

Booleans are refused outright: DirectML has no boolean tensors, NumPy has no sign of a bool, and NumPy's remainder
of booleans in int8 is rarely what a caller meant.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .enums import DataType, FeatureLevel
from .errors import ValidationError
from .operators import OperatorSpec

_WEAK = (int, float, complex)  # NumPy's weak Python scalars (bool is not one: it is refused below)


class Loop(NamedTuple):
    """The dtype NumPy computes in (and its DataType) and the dtype NumPy returns, for one combination of operand
    types."""

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
    """An operand as the caller wrote it: 'a int8', 'b=2.9 (Python float)', 'a (a list, int64 to NumPy)'."""
    if type(value) in _WEAK or type(value) is bool:
        return f"{name}={value!r} (Python {type(value).__name__})"
    if _own_dtype(value) is not None:
        return f"{name} {value.dtype}"
    kind = type(value).__name__
    return f"{name} (a {kind}, {array.dtype} to NumPy)" if array is not None else f"{name} (a {kind})"


def _own_dtype(value) -> np.dtype | None:
    """The dtype a value carries (arrays, NumPy scalars, gpuops device arrays), None for others (lists, Python
    scalars): what describes it without converting it."""
    dtype = getattr(value, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else None


def resolve(where: str, spec: OperatorSpec, level: FeatureLevel, names: tuple[str, ...], values: tuple
            ) -> tuple[Loop, tuple[np.ndarray | None, ...]]:
    """NumPy's loop for the operands' types (the row's numpy_ufunc gives the type rules), checked against the
    operator's support row at `level`, and each operand as NumPy sees it (np.asarray; None for a Python scalar),
    for `convert` to start from; ValidationError where an operand is refused or the loop is not one gpuops
    computes in. (The NumPy-level functions keep the loop per combination of operand types and layouts.)"""
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
            raise ValidationError(f"{where}: {describe(name, value, array)} is boolean; DirectML has no boolean "
                                  f"tensors and gpuops does not pick a number type for it; pass "
                                  f"{name}.astype(np.int8) (or another number type)")
        arrays.append(array)
    descriptors = tuple(type(v) if a is None else a.dtype for v, a in zip(values, arrays))
    return _supported_loop(where, spec, level, names, values, arrays, descriptors), tuple(arrays)


def convert(where: str, names: tuple[str, ...], values: tuple, index: int, compute: np.dtype,
            array: np.ndarray | None = None) -> np.ndarray:
    """Operand `index` in `compute`, converted as NumPy converts it: NumPy's own conversion for a Python scalar
    (which refuses an int that does not fit), `astype` for anything else (exact: resolve chose the loop safe).
    `array`: the operand as resolve saw it, where at hand (a list is then not made into an array twice)."""
    name, value = names[index], values[index]
    if type(value) in _WEAK:
        try:
            return np.asarray(value, dtype=compute)
        except (OverflowError, ValueError) as exc:
            arrays = [None if type(v) in _WEAK or _own_dtype(v) is not None else np.asarray(v) for v in values]
            raise ValidationError(f"{where}: {name}={value!r} does not fit {compute}, the type NumPy computes in for "
                                  f"{_operands(names, values, arrays)}: {exc}") from None
    if array is None:
        array = _as_array(where, name, value)
    return array if array.dtype == compute else array.astype(compute)


def _as_array(where: str, name: str, value) -> np.ndarray:
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"{where}: {name} {value!r:.80} is not an array NumPy can make: {exc}") from None


def _supported_loop(where: str, spec: OperatorSpec, level: FeatureLevel, names: tuple[str, ...], values: tuple,
                    arrays: list, descriptors: tuple) -> Loop:
    """NumPy's Loop for the operand types, or ValidationError where NumPy has no loop or DirectML does not
    support the compute type for the operator at `level`."""
    ufunc = spec.numpy_ufunc
    try:
        loop = ufunc.resolve_dtypes(descriptors + (None,))
    except TypeError:  # NumPy has no loop for these types (strings, complex remainders, ...)
        raise ValidationError(f"{where}: NumPy has no {ufunc.__name__} for {_operands(names, values, arrays)}") \
            from None
    compute, result = loop[0], loop[-1]
    data_type = DataType.from_numpy(compute)
    row = spec.support_row(level)
    allowed = row.input_types if row else frozenset()
    if data_type is None or data_type not in allowed:
        names_allowed = ", ".join(sorted(t.numpy_dtype.name for t in allowed)) or \
            "none (the operator does not exist at that level)"
        raise ValidationError(f"{where}: {_operands(names, values, arrays)}: NumPy computes in {compute}; gpuops "
                              f"computes {spec.numpy_name} at feature level {level.label} in {names_allowed} and "
                              "does not cast (convert the operands with astype if a narrower type is meant)")
    return Loop(compute, data_type, result)


def _operands(names: tuple[str, ...], values: tuple, arrays: list) -> str:
    """The operands as refusals name them: 'a int8, b=2.9 (Python float)'."""
    return ", ".join(describe(n, v, a) for n, v, a in zip(names, values, arrays))
