"""Binding: a region of a caller's wgpu buffer bound to one tensor of an operator (DML_BUFFER_BINDING)."""

from __future__ import annotations

from dataclasses import dataclass

import wgpu

from .adapters import wgpu_module_of
from .backends import BACKENDS
from .enums import integer_value
from .errors import ValidationError, shown


@dataclass(frozen=True)
class Binding:
    """DML_BUFFER_BINDING: a region of a wgpu buffer. `size` None means the rest of the buffer.

    The types are checked here, where the caller made the value; whether the region fits the buffer and the
    tensor (alignment, size) is checked when an operator is bound to it."""

    buffer: wgpu.GPUBuffer
    offset: int = 0
    size: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, wgpu.GPUBuffer) and wgpu_module_of(self.buffer, "GPUBuffer") is None:
            raise ValidationError(f"Binding.buffer: {shown(self.buffer)} ({type(self.buffer).__name__}) is not a "
                                  f"GPUBuffer of {' or '.join(BACKENDS.values())}")
        # Normalised to Python ints: NumPy integers are welcome, and the values stay exact and hashable alike.
        offset = integer_value(self.offset)
        if offset is None or offset < 0:
            raise ValidationError(f"Binding.offset: {shown(self.offset)}; allowed: an integer (int or NumPy "
                                  "integer) of at least 0")
        if type(self.offset) is not int:
            object.__setattr__(self, "offset", offset)
        if self.size is not None:
            size = integer_value(self.size)
            if size is None or size < 0:
                raise ValidationError(f"Binding.size: {shown(self.size)}; allowed: None (the rest of the buffer) "
                                      "or an integer (int or NumPy integer) of at least 0")
            if type(self.size) is not int:
                object.__setattr__(self, "size", size)

    @property
    def resolved_size(self) -> int:
        return self.buffer.size - self.offset if self.size is None else self.size
