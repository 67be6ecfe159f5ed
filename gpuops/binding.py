"""Binding: a region of a caller's wgpu buffer bound to one tensor of an operator (DML_BUFFER_BINDING)."""

from __future__ import annotations

from dataclasses import dataclass

import wgpu


@dataclass(frozen=True)
class Binding:
    """DML_BUFFER_BINDING: a region of a wgpu buffer. `size` None means the rest of the buffer."""

    buffer: wgpu.GPUBuffer
    offset: int = 0
    size: int | None = None

    @property
    def resolved_size(self) -> int:
        return self.buffer.size - self.offset if self.size is None else self.size
