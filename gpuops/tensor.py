"""DML_BUFFER_TENSOR_DESC as a frozen, hashable value, and DirectML's size arithmetic."""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from .enums import DataType, TensorFlags, integer_value
from .errors import FrozenDescriptionError, ValidationError, shown

MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16  # DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT: every binding offset is a multiple of it


def packed_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides in elements: the last dimension has stride 1."""
    strides = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    return tuple(strides)


def implied_size_in_bytes(data_type: DataType, sizes: tuple[int, ...], strides: tuple[int, ...] | None) -> int:
    """DMLCalcBufferTensorSize: bytes up to the last element's end, rounded up to a multiple of 4."""
    if strides is None:
        element_count = math.prod(sizes)
        used = element_count * data_type.size
    else:
        last_index = sum((size - 1) * stride for size, stride in zip(sizes, strides))
        used = (last_index + 1) * data_type.size
    return (used + 3) & ~3


def frozen_description(cls):
    """A frozen dataclass whose attempted mutation raises FrozenDescriptionError, saying what to do instead."""
    cls = dataclass(frozen=True)(cls)

    def refuse(self, name, *value):
        raise FrozenDescriptionError(f"{type(self).__name__}.{name}: descriptions are immutable (compiled "
                                     "operators are cached by them); make a changed copy with "
                                     "dataclasses.replace()")

    cls.__setattr__ = refuse
    cls.__delattr__ = refuse
    return cls


@frozen_description
class TensorDesc:
    """A buffer tensor: DataType, Sizes, Strides (elements; None = packed), total size, alignment, flags."""

    data_type: DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    total_tensor_size_in_bytes: int | None = None
    guaranteed_base_offset_alignment: int = 0
    flags: TensorFlags = TensorFlags.NONE
    # Not part of DirectML's desc: True when the caller left the total size to us (kept so repr stays honest).
    total_size_was_implied: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Coerce into canonical, hashable forms; the rules themselves are checked by validate().
        set_ = object.__setattr__
        try:
            set_(self, "data_type", DataType.parse(self.data_type))
        except ValidationError as exc:
            raise ValidationError(f"TensorDesc.data_type: {exc}") from None
        set_(self, "sizes", _int_tuple(self.sizes, "sizes"))
        if self.strides is not None:
            set_(self, "strides", _int_tuple(self.strides, "strides"))
        flags = _integer(self.flags, "flags")
        if flags < 0:
            raise ValidationError(f"TensorDesc.flags: {shown(self.flags)}; allowed: NONE (0), OWNED_BY_DML (1)")
        set_(self, "flags", TensorFlags(flags))  # unknown bits are kept, and refused by validate()
        # Integers only here; validate() checks their ranges and names the operator's field.
        set_(self, "guaranteed_base_offset_alignment",
             _integer(self.guaranteed_base_offset_alignment, "guaranteed_base_offset_alignment"))
        if self.total_tensor_size_in_bytes is not None:
            set_(self, "total_tensor_size_in_bytes",
                 _integer(self.total_tensor_size_in_bytes, "total_tensor_size_in_bytes"))
        if self.total_tensor_size_in_bytes is None or self.total_tensor_size_in_bytes == 0:
            implied = None
            if self.strides is None or len(self.strides) == len(self.sizes):
                implied = implied_size_in_bytes(self.data_type, self.sizes, self.strides)
            set_(self, "total_tensor_size_in_bytes", implied)
            set_(self, "total_size_was_implied", True)

    @property
    def dimension_count(self) -> int:
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    @property
    def element_strides(self) -> tuple[int, ...]:
        """The strides in elements, packed ones filled in."""
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    @property
    def implied_size_in_bytes(self) -> int:
        return implied_size_in_bytes(self.data_type, self.sizes, self.strides)


def _integer(value, name: str) -> int:
    number = integer_value(value)
    if number is None:
        raise ValidationError(f"TensorDesc.{name}: {shown(value)} is not an integer (int or NumPy integer)")
    return number


def _int_tuple(values, name: str) -> tuple[int, ...]:
    # Strings, mappings and sets iterate, but as characters, keys or in no fixed order: never dimensions.
    items = None
    if not isinstance(values, (str, bytes, Mapping, Set)):
        try:
            items = tuple(values)
        except TypeError:
            pass
    if items is None:
        raise ValidationError(f"TensorDesc.{name}: {shown(values)} is not a sequence of integers")
    numbers = tuple(integer_value(v) for v in items)
    for i, number in enumerate(numbers):
        if number is None:
            raise ValidationError(f"TensorDesc.{name}[{i}]: {shown(items[i])} in {shown(values)} is not an "
                                  "integer (int or NumPy integer; bools and floats are refused)")
    return numbers
