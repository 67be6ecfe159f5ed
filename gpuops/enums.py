"""DirectML's enumerations, with DirectML's numeric values."""

from __future__ import annotations

import enum
import re

import numpy as np

from .errors import ValidationError, shown


def integer_value(value: object) -> int | None:
    """`value` as a Python int when it is an integer (int or NumPy integer); None for anything else, bools and
    floats included (True is not a size, and 2.0 would hide a computation gone wrong)."""
    if type(value) is int:  # the common case, without the checks below
        return value
    if isinstance(value, bool):
        return None
    try:
        return value.__index__()  # int subclasses (IntEnum), NumPy integers and 0-d integer arrays
    except (AttributeError, TypeError, ValueError):
        return None


class DataType(enum.IntEnum):
    """DML_TENSOR_DATA_TYPE."""

    UNKNOWN = 0
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11
    UINT4 = 12
    INT4 = 13

    @property
    def size(self) -> int:
        """Element size in bytes (the 4-bit types round up to 1: DirectML packs them, gpuops refuses them)."""
        return _SIZES[self]

    @property
    def numpy_dtype(self) -> np.dtype | None:
        return _NUMPY.get(self)

    @classmethod
    def from_numpy(cls, dtype: np.dtype) -> DataType | None:
        """The DataType of a NumPy dtype, or None when DirectML has no such type (bool, complex, ...)."""
        return _FROM_NUMPY.get(np.dtype(dtype))

    @classmethod
    def parse(cls, value: str | int | DataType) -> DataType:
        """'FLOAT32', 'DML_TENSOR_DATA_TYPE_FLOAT32', 'float32' or the numeric value; anything else raises
        ValidationError."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            member = cls.__members__.get(value.strip().upper().removeprefix("DML_TENSOR_DATA_TYPE_"))
        else:
            number = integer_value(value)
            member = cls._value2member_map_.get(number) if number is not None else None
        if member is None:
            allowed = ", ".join(f"{t.name} ({t.value})" for t in cls)
            raise ValidationError(f"unknown data type {shown(value)}; allowed: a DataType, its name or its "
                                  f"number: {allowed}")
        return member


def in_listing_order(types) -> list[DataType]:
    """`types` in the order messages list them: floating-point types, then signed, then unsigned integer types,
    each narrowest first (float16, float32, int8, int16, ..., uint64)."""
    kinds = ("FLOAT", "INT", "UINT")
    return sorted(types, key=lambda t: (next((i for i, kind in enumerate(kinds) if t.name.startswith(kind)),
                                             len(kinds)), t.size, t.name))


_SIZES = {
    DataType.UNKNOWN: 0, DataType.FLOAT32: 4, DataType.FLOAT16: 2, DataType.UINT32: 4, DataType.UINT16: 2,
    DataType.UINT8: 1, DataType.INT32: 4, DataType.INT16: 2, DataType.INT8: 1, DataType.FLOAT64: 8,
    DataType.UINT64: 8, DataType.INT64: 8, DataType.UINT4: 1, DataType.INT4: 1,
}
_NUMPY = {
    DataType.FLOAT32: np.dtype(np.float32), DataType.FLOAT16: np.dtype(np.float16),
    DataType.UINT32: np.dtype(np.uint32), DataType.UINT16: np.dtype(np.uint16), DataType.UINT8: np.dtype(np.uint8),
    DataType.INT32: np.dtype(np.int32), DataType.INT16: np.dtype(np.int16), DataType.INT8: np.dtype(np.int8),
    DataType.FLOAT64: np.dtype(np.float64), DataType.UINT64: np.dtype(np.uint64), DataType.INT64: np.dtype(np.int64),
}
# Native byte order only: a byte-swapped array is not DirectML's layout.
_FROM_NUMPY = {dtype: data_type for data_type, dtype in _NUMPY.items()}


class FeatureLevel(enum.IntEnum):
    """DML_FEATURE_LEVEL, oldest first."""

    LEVEL_1_0 = 0x1000
    LEVEL_2_0 = 0x2000
    LEVEL_2_1 = 0x2100
    LEVEL_3_0 = 0x3000
    LEVEL_3_1 = 0x3100
    LEVEL_4_0 = 0x4000
    LEVEL_4_1 = 0x4100
    LEVEL_5_0 = 0x5000
    LEVEL_5_1 = 0x5100
    LEVEL_5_2 = 0x5200
    LEVEL_6_0 = 0x6000
    LEVEL_6_1 = 0x6100
    LEVEL_6_2 = 0x6200
    LEVEL_6_3 = 0x6300
    LEVEL_6_4 = 0x6400

    @classmethod
    def parse(cls, value: str | int | FeatureLevel) -> FeatureLevel:
        """'6.4', '6_4', 'LEVEL_6_4', 'DML_FEATURE_LEVEL_6_4', '0x6400' or 0x6400; anything else raises
        ValidationError quoting `value` as given."""
        if isinstance(value, cls):
            return value
        number = None
        if isinstance(value, str):
            text = value.strip().upper().removeprefix("DML_FEATURE_LEVEL_").removeprefix("LEVEL_")
            if match := _LEVEL_TEXT.fullmatch(text):
                number = int(match[1]) << 12 | int(match[2]) << 8
            elif _HEX_TEXT.fullmatch(text):
                number = int(text, 16)
        else:
            number = integer_value(value)
        member = cls._value2member_map_.get(number) if number is not None else None
        if member is None:
            allowed = ", ".join(level.label for level in cls)
            written = f" ({hex(number)})" if number is not None and not isinstance(value, str) else ""
            raise ValidationError(f"unknown feature level {shown(value)}{written}; allowed: {allowed} (written "
                                  "e.g. '6.4', '6_4', 'DML_FEATURE_LEVEL_6_4' or 0x6400)")
        return member

    @property
    def label(self) -> str:
        return f"{self.value >> 12}_{(self.value >> 8) & 0xF}"


# One-digit major and minor only: 0x6400 has a nibble for each, so '2.16' is not 0x3000 in disguise.
_LEVEL_TEXT = re.compile(r"([0-9])[._]([0-9])")
_HEX_TEXT = re.compile(r"0X[0-9A-F]{1,8}")


class TensorFlags(enum.IntFlag):
    """DML_TENSOR_FLAGS."""

    NONE = 0
    OWNED_BY_DML = 1


class IsInfinityMode(enum.IntEnum):
    """DML_IS_INFINITY_MODE."""

    EITHER = 0
    POSITIVE = 1
    NEGATIVE = 2

    @classmethod
    def parse(cls, value: str | int | IsInfinityMode) -> IsInfinityMode:
        """'EITHER', 'DML_IS_INFINITY_MODE_POSITIVE', 'negative' or the numeric value; anything else (bools and
        floats included) raises ValidationError."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            member = cls.__members__.get(value.strip().upper().removeprefix("DML_IS_INFINITY_MODE_"))
        else:
            number = integer_value(value)
            member = cls._value2member_map_.get(number) if number is not None else None
        if member is None:
            raise ValidationError(f"unknown infinity mode {shown(value)}; allowed: EITHER (0), POSITIVE (1), "
                                  "NEGATIVE (2)")
        return member
