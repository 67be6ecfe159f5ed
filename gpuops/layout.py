"""Host-side layout arithmetic: merging dimensions, classifying operands, binding windows."""

from __future__ import annotations

from dataclasses import dataclass

from .tensor import packed_strides


@dataclass(frozen=True)
class Iteration:
    """The element-wise iteration space after coalescing: sizes, and each operand's element strides."""

    sizes: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]  # one tuple per operand, in the order given to coalesce()

    @property
    def rank(self) -> int:
        return len(self.sizes)

    def is_linear(self, operand: int) -> bool:
        """Element k of the iteration lies at base + k: the operand is packed in iteration order."""
        return self.strides[operand] == packed_strides(self.sizes)


def coalesce(sizes: tuple[int, ...], operand_strides: list[tuple[int, ...]]) -> Iteration:
    """Drop size-1 dimensions and merge neighbours that every operand walks contiguously (like NumPy's nditer).

    A packed tensor becomes one dimension; a transposed or broadcast operand keeps the dimensions it needs.
    """
    dims = [(size, [s[d] for s in operand_strides]) for d, size in enumerate(sizes) if size != 1]
    if not dims:
        return Iteration((1,), tuple((0,) for _ in operand_strides))
    merged = [dims[0]]
    for size, strides in dims[1:]:
        outer_size, outer_strides = merged[-1]
        if all(outer == inner * size for outer, inner in zip(outer_strides, strides)):
            merged[-1] = (outer_size * size, strides)
        else:
            merged.append((size, strides))
    return Iteration(tuple(size for size, _ in merged),
                     tuple(tuple(strides[i] for _, strides in merged) for i in range(len(operand_strides))))


@dataclass(frozen=True)
class Window:
    """The part of a caller's buffer bound for one operand: the adapter wants aligned binding offsets, DirectML
    allows any multiple of 16, so we bind from the aligned-down offset and pass the rest as an element offset."""

    offset: int  # bytes, a multiple of the adapter's storage offset alignment
    size: int  # bytes
    base_element: int  # the tensor's first element, counted from `offset`


def window_for(offset: int, needed_bytes: int, element_size: int, alignment: int, buffer_size: int) -> Window:
    start = offset - offset % alignment
    size = min(buffer_size - start, -(-(offset - start + needed_bytes) // 4) * 4)
    return Window(start, size, (offset - start) // element_size)
