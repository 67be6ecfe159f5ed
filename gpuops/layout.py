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


def units_own_their_words(it: Iteration, operand: int, base_element: int, element_size: int, unit: int,
                          word_bytes: int = 4) -> bool:
    """No word of `word_bytes` bytes (4: a u32 word, 16: a 16-byte chunk) of the operand holds elements of two
    different units (runs of `unit` consecutive elements in iteration order), so one invocation may change a
    word's lanes without atomics. True when every element has a word of its own (all byte strides multiples of
    the word; elements of an output never overlap), or for one dimension when every unit starts on a word boundary
    (its elements then end before the next unit's first word)."""
    strides = it.strides[operand]
    if all(stride * element_size % word_bytes == 0 for stride in strides):
        return True
    return (it.rank == 1 and base_element * element_size % word_bytes == 0
            and unit * strides[0] * element_size % word_bytes == 0)


def units_aligned(it: Iteration, operand: int, base_element: int, unit: int, alignment: int) -> bool:
    """Every row of the operand starts on a multiple of `alignment` elements (its first element and its outer
    strides), and beyond one dimension its rows hold whole units of `unit` elements, so no unit crosses a row.
    (How units step along a row is the innermost stride's business: the caller checks that.)"""
    return (base_element % alignment == 0 and (it.rank == 1 or it.sizes[-1] % unit == 0)
            and all(stride % alignment == 0 for stride in it.strides[operand][:-1]))


def coalesce(sizes: tuple[int, ...], operand_strides: list[tuple[int, ...]]) -> Iteration:
    """Drop size-1 dimensions, order the rest by the last operand's (the output's) strides, largest first, and
    merge neighbours that every operand walks contiguously (like NumPy's nditer). Element-wise results do not
    depend on the order elements are visited in.

    A packed tensor becomes one dimension, and so does a transposed one whose output is transposed alike; an
    operand laid out differently keeps the dimensions it needs.
    """
    kept = [d for d, size in enumerate(sizes) if size != 1]
    kept.sort(key=lambda d: tuple(-s[d] for s in reversed(operand_strides)))  # stable: ties keep their order
    dims = [(sizes[d], [s[d] for s in operand_strides]) for d in kept]
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


@dataclass(frozen=True)
class Box:
    """A part of the iteration space dispatched on its own: its sizes, and per operand the element offset of its
    first element (from the tensor's first element) and its strides."""

    sizes: tuple[int, ...]
    starts: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]


def span_in_bytes(sizes: tuple[int, ...], strides: tuple[int, ...], element_size: int) -> int:
    """Bytes from the first element to the end of the last one."""
    return (sum((n - 1) * s for n, s in zip(sizes, strides)) + 1) * element_size


def split_boxes(it: Iteration, element_sizes: list[int], limit: int) -> list[Box]:
    """Cut the iteration space into boxes in which every operand spans at most `limit` bytes, so each box fits
    the adapter's storage binding size. Cuts go along the outermost dimension, in pieces of a multiple of 16
    elements where possible (linear operands stay 16-byte aligned); when even one index of it is too large,
    each index is cut along the next dimension."""
    boxes: list[Box] = []

    def fits(sizes, strides_list) -> bool:
        return all(span_in_bytes(sizes, st, es) <= limit for st, es in zip(strides_list, element_sizes))

    def cut(sizes, starts, strides_list):
        if fits(sizes, strides_list):
            boxes.append(Box(sizes, starts, strides_list))
            return
        inner_sizes = sizes[1:]
        piece = sizes[0]
        for st, es in zip(strides_list, element_sizes):
            if st[0] == 0:
                continue
            room = limit - (span_in_bytes(inner_sizes, st[1:], es) if inner_sizes else es)
            piece = min(piece, room // (st[0] * es) + 1 if room >= 0 else 0)
        if piece >= 16:
            piece -= piece % 16
        if piece >= 1:
            for i in range(0, sizes[0], piece):
                boxes.append(Box((min(piece, sizes[0] - i),) + inner_sizes,
                                 tuple(s + i * st[0] for s, st in zip(starts, strides_list)), strides_list))
            return
        for i in range(sizes[0]):
            cut(inner_sizes, tuple(s + i * st[0] for s, st in zip(starts, strides_list)),
                tuple(st[1:] for st in strides_list))

    cut(it.sizes, tuple(0 for _ in it.strides), it.strides)
    return boxes
