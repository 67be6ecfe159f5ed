"""Layouts as users make them, and odd ones: hypothesis strategies for the planner's CPU properties and the
GPU canary tests (layout_cases: any layout; transposed_cases: layout conversions, where the TILES grid runs).

A drawn case is an operator (and mode) with a supported type pair, tensor sizes, each operand's strides and
binding offset (multiples of 16, DirectML's rule, or at times any whole element, as the NumPy-level functions bind
views of device arrays), the slack after each tensor in its buffer, whether the output aliases an input (in place) or
shares the inputs' buffer at another offset, and a DispatchPolicy small enough that every grid runs on little data.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from gpuops import DataType, DispatchPolicy
from gpuops.layout import span_in_bytes
from gpuops.operators import spec_by_name

from .reference import op_cases

ALL_CASES = [c for c, _ in op_cases()]
ROUND_SIZES = [4, 8, 16, 32, 32, 64, 64, 128, 256]
OUTER_SIZES = [1, 2, 3, 4, 5, 8, 16]
# Row pads in elements: none most often (packed rows), round ones (aligned pitches), and every other count up to 17
# (pitches at every remainder mod 16 bytes).
PADS = [0] * 12 + [8, 16, 32] * 3 + list(range(1, 18))
ODD_SIZES = [1, 2, 3, 5, 7, 9, 13, 17]


@dataclass(frozen=True)
class LayoutCase:
    operator: str
    mode: object
    in_type: DataType
    out_type: DataType
    sizes: tuple[int, ...]
    strides: dict  # tensor field -> element strides (None: packed)
    offsets: dict  # tensor field -> binding offset in bytes
    slack: dict  # tensor field -> bytes after the tensor in its buffer
    layout: str  # "separate", "in_place" or "shared_buffer"
    policy: DispatchPolicy

    @property
    def names(self) -> tuple[str, ...]:
        return spec_by_name(self.operator).tensor_fields


def _padded(draw, sizes, order, step) -> list[int]:
    """Strides for dimensions laid out in `order` (outermost first), innermost stride `step`, each outer pitch the
    inner extent plus a pad: 0 often (packed rows), else any count of elements, so that pitches in bytes take every
    remainder mod 16."""
    strides = [0] * len(sizes)
    pitch = step
    for d in reversed(order):
        strides[d] = pitch
        pad = draw(st.sampled_from(PADS))
        pitch = pitch * sizes[d] + pad
    return strides


@st.composite
def layout_cases(draw, rows: bool = False, max_elements: int = 2048) -> LayoutCase:
    """Any layout; with `rows`, the row layouts users make most (2-3 dimensions, round rows, broadcast rows,
    padded and stepped outputs), where the ROWS grids and their stores run."""
    operator, mode, in_type, out_type = draw(st.sampled_from(ALL_CASES))
    spec = spec_by_name(operator)
    rank = draw(st.sampled_from([2, 2, 3] if rows else [1, 1, 2, 2, 2, 3, 3, 4, 5, 8]))
    # Rows of round lengths mostly (whole units: the ROWS grids), the outer dimensions small, odd ones among both.
    sizes = [draw(st.sampled_from(OUTER_SIZES)) for _ in range(rank - 1)]
    sizes.append(draw(st.sampled_from(ROUND_SIZES[2:] if rows else ROUND_SIZES + ODD_SIZES)))
    while len(sizes) > 1 and _product(sizes) > max_elements:
        sizes[sizes.index(max(sizes))] = draw(st.sampled_from([1, 2, 3, 4]))
    sizes = tuple(sizes)
    identity = list(range(rank))

    # The output: packed, or permuted and/or padded, innermost stride 1 to 3 (stepped outputs).
    out_kind = draw(st.sampled_from(["packed", "padded", "stepped", "stepped"] + ([] if rows else ["permuted"])))
    if out_kind == "packed":
        out_strides = None
    else:
        order = draw(st.permutations(identity)) if out_kind == "permuted" else identity
        step = draw(st.sampled_from([2, 2, 3])) if out_kind == "stepped" else 1
        out_strides = tuple(_padded(draw, sizes, order, step))

    strides = {spec.output: out_strides}
    for name in spec.inputs:
        kind = draw(st.sampled_from(["packed", "padded", "broadcast_rows", "broadcast_rows"] if rows else
                                    ["packed", "padded", "permuted", "broadcast_rows", "broadcast_rows",
                                     "broadcast_columns", "broadcast_some", "scalar"]))
        if kind == "packed":
            strides[name] = None
            continue
        order = draw(st.permutations(identity)) if kind == "permuted" else identity
        layout = _padded(draw, sizes, order, draw(st.sampled_from([1, 1, 2])))
        if kind == "broadcast_rows":  # the same innermost row everywhere
            layout = [0] * (rank - 1) + [1]
        elif kind == "broadcast_columns":  # one value per row
            layout[-1] = 0
        elif kind == "broadcast_some":
            zeros = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
            layout = [0 if z else s for z, s in zip(zeros, layout)]
        elif kind == "scalar":
            layout = [0] * rank
        strides[name] = tuple(layout)

    layout_kind = "separate"
    if in_type == out_type and spec.in_place and draw(st.integers(0, 4)) == 0:
        layout_kind = "in_place"
        strides[spec.inputs[0]] = strides[spec.output] = out_strides or _packed(sizes)
    elif draw(st.integers(0, 5)) == 0:
        layout_kind = "shared_buffer"  # inputs and output in one buffer, disjoint regions

    fields = spec.tensor_fields
    offsets = _offsets(draw, spec, in_type, out_type)
    if layout_kind == "in_place":
        offsets[spec.output] = offsets[spec.inputs[0]]
    slack = {name: draw(st.sampled_from([0, 0, 4, 12, 16, 48])) for name in fields}
    policy = DispatchPolicy(
        workgroup_size=draw(st.sampled_from([1, 2, 4, 8])),
        units_per_invocation=draw(st.sampled_from([None, None, 1, 2, 4])),
        max_workgroups_per_dimension=draw(st.sampled_from([None, 3, 8])),
        binding_size_limit=draw(st.sampled_from([None] * 6 + [256, 1024])),
        pack_rounds_to_nearest=draw(st.booleans()))
    return LayoutCase(operator, mode, in_type, out_type, sizes, strides, offsets, slack, layout_kind, policy)


def _offsets(draw, spec, in_type: DataType, out_type: DataType) -> dict:
    """Each tensor field's binding offset: a multiple of 16, plus in one case of four a whole number of elements
    below 16 bytes (a view of a device array starts at any element: d[1:])."""
    elements = draw(st.integers(0, 3)) == 0
    offsets = {}
    for name in spec.tensor_fields:
        size = (out_type if name == spec.output else in_type).size
        within = size * draw(st.integers(0, 16 // size - 1)) if elements else 0
        offsets[name] = 16 * draw(st.integers(0, 6)) + within
    return offsets


# Sizes of layout conversions: round ones (whole tiles at every workgroup size) and odd ones (tiles cut at the
# tensor's edge, dimensions of one element).
TRANSPOSED_SIZES = [2, 4, 8, 16, 16, 32, 32, 64, 64, 128] + ODD_SIZES + [33, 70]


def _memory_order(draw, rank: int) -> list[int]:
    """An input's dimensions, outermost in memory first, with another innermost one than the output's: reversed
    (a 2-D transpose), channels first read into channels last (NCHW as NHWC), the converse, or any such
    permutation."""
    kind = draw(st.sampled_from(["reversed", "channels_first", "channels_last", "any"]))
    if kind == "reversed" or rank == 2:
        return list(reversed(range(rank)))
    if kind == "channels_first":  # memory N C H W, the output's dimensions N H W C
        return [0, rank - 1, *range(1, rank - 1)]
    if kind == "channels_last":  # memory N H W C, the output's dimensions N C H W
        return [0, *range(2, rank), 1]
    order = draw(st.permutations(list(range(rank))))
    return order if order[-1] != rank - 1 else order[-1:] + order[:-1]


@st.composite
def transposed_cases(draw, max_elements: int = 4096) -> LayoutCase:
    """Layout conversions: the first input in another dimension order than the output (padded or not), the other
    input (two-input operators) in the same order, along the output, broadcast or a scalar; the output packed, in
    padded rows (pitches at every remainder mod 16 bytes: rows on words or not), at times stepped or permuted;
    sizes round or odd; small workgroups, so that the tiles are small and many."""
    operator, mode, in_type, out_type = draw(st.sampled_from(ALL_CASES))
    spec = spec_by_name(operator)
    rank = draw(st.sampled_from([2, 2, 2, 3, 4, 4, 5, 6, 8]))
    sizes = [draw(st.sampled_from(TRANSPOSED_SIZES)) for _ in range(rank)]
    while _product(sizes) > max_elements:
        sizes[sizes.index(max(sizes))] = draw(st.sampled_from([2, 3, 4, 8]))
    sizes = tuple(sizes)
    identity = list(range(rank))

    out_kind = draw(st.sampled_from(["packed"] * 3 + ["padded"] * 3 + ["stepped", "permuted"]))
    if out_kind == "packed":
        out_strides = None
    else:
        order = draw(st.permutations(identity)) if out_kind == "permuted" else identity
        out_strides = tuple(_padded(draw, sizes, order, 2 if out_kind == "stepped" else 1))

    first, *others = spec.inputs
    order = _memory_order(draw, rank)
    strides = {spec.output: out_strides, first: tuple(_padded(draw, sizes, order, 1))}
    for name in others:
        kind = draw(st.sampled_from(["alike", "alike", "alike_padded", "packed", "broadcast_rows",
                                     "broadcast_columns", "scalar", "permuted"]))
        if kind == "alike":
            strides[name] = strides[first]
        elif kind == "alike_padded":
            strides[name] = tuple(_padded(draw, sizes, order, 1))
        elif kind == "packed":
            strides[name] = None
        elif kind == "broadcast_rows":
            strides[name] = tuple([0] * (rank - 1) + [1])
        elif kind == "broadcast_columns":  # the first input's layout, one value along the output's rows
            strides[name] = strides[first][:-1] + (0,)
        elif kind == "scalar":
            strides[name] = tuple([0] * rank)
        else:
            strides[name] = tuple(_padded(draw, sizes, draw(st.permutations(identity)), 1))

    fields = spec.tensor_fields
    layout_kind = "shared_buffer" if draw(st.integers(0, 15)) == 0 else "separate"
    offsets = _offsets(draw, spec, in_type, out_type)
    slack = {name: draw(st.sampled_from([0, 0, 4, 12, 16, 48])) for name in fields}
    policy = DispatchPolicy(
        workgroup_size=draw(st.sampled_from([1, 2, 4, 4, 8, 8, 8, 32])),
        units_per_invocation=draw(st.sampled_from([None, 1, 4])),
        max_workgroups_per_dimension=draw(st.sampled_from([None, None, None, 8, 3])),
        binding_size_limit=draw(st.sampled_from([None] * 14 + [256, 1024])),
        pack_rounds_to_nearest=draw(st.booleans()))
    return LayoutCase(operator, mode, in_type, out_type, sizes, strides, offsets, slack, layout_kind, policy)


@dataclass(frozen=True)
class Arrangement:
    """Where a case's tensors lie: each field's buffer (an index), its binding offset, and each buffer's size."""

    buffer_of: dict  # field -> buffer index
    offset_of: dict  # field -> binding offset in bytes
    buffer_sizes: tuple[int, ...]


def arrangement(case: LayoutCase, tensors: dict) -> Arrangement:
    """`tensors`: field -> TensorDesc. Separate buffers each hold one tensor at its offset with its slack after it;
    in place, the output shares its input's buffer and region; a shared buffer holds every tensor, one after
    another (each region starting on 16 bytes past the previous one's end). A tensor's bytes end at its elements'
    end rounded up to 4 bytes (the tensor's total size from an offset that is a multiple of 16; from a view's
    offset, possibly the buffer's last bytes: buffers are whole 4-byte words)."""
    spec = spec_by_name(case.operator)
    buffer_of, offset_of, sizes = {}, {}, []

    def end_of(name: str, start: int) -> int:
        tensor = tensors[name]
        span = span_in_bytes(tensor.sizes, tensor.element_strides, tensor.data_type.size)
        return -(-(start + span) // 4) * 4 + case.slack[name]

    if case.layout == "shared_buffer":
        end = 0
        for name in spec.tensor_fields:
            start = -(-end // 16) * 16 + case.offsets[name]
            buffer_of[name], offset_of[name] = 0, start
            end = end_of(name, start)
        return Arrangement(buffer_of, offset_of, (end,))
    for name in spec.tensor_fields:
        if case.layout == "in_place" and name == spec.output:
            buffer_of[name] = buffer_of[spec.inputs[0]]
            offset_of[name] = offset_of[spec.inputs[0]]
            continue
        buffer_of[name], offset_of[name] = len(sizes), case.offsets[name]
        sizes.append(end_of(name, case.offsets[name]))
    return Arrangement(buffer_of, offset_of, tuple(sizes))


def _product(values) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def _packed(sizes) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))
