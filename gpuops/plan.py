"""Planning: from an operator's description and where its tensors are bound to the kernels that run it.

`plan_dispatches` is one pure step (no wgpu object is touched): the iteration space is cut into boxes that fit
the adapter's binding limit, and for each box, in this order and each decided once:

1. windows: the part of each buffer bound for each operand, and where each input is read (`Placement`);
2. operand forms: `LINEAR` (element k at base + k, 16-byte aligned), `CHUNK_ROWS` (rows of whole aligned units)
   or `STRIDED` (`Form`);
3. the grid (`Grid`) and the output store (`OutputStore`), chosen together: each grid candidate, in order of
   preference, gets the store that suits it and the unit (elements per unit of work) that grid and store give;
   the first candidate whose conditions hold with that final unit is taken (TILES, for an input read across the
   output's rows, also orders the dimensions its own way: `TilePlane`);
4. the KernelKey, built once from those values.

Operands are numbered as the shaders number them everywhere: A = 0, B = 1, OUT = 2 (a one-input operator has
no B). `gpuops.footprint` models, from a plan alone, which bytes its kernels read and write.
"""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .enums import DataType
from .layout import Iteration, Window, coalesce, span_in_bytes, split_boxes, units_aligned, units_own_their_words, \
    window_for
from .tensor import TensorDesc

if TYPE_CHECKING:
    from .operators import OperatorSpec


class Operand(enum.IntEnum):
    """An operand's index in every per-operand tuple and in the shaders (OPERAND_A, OPERAND_B, OPERAND_OUT)."""

    A = 0
    B = 1
    OUT = 2


class Placement(enum.Enum):
    """Where an input is bound."""

    SEPARATE = "separate"  # its own buffer region: read-only views as 16-byte chunks and as u32 words
    CHUNKS = "chunks"  # its own region of whole chunks, read in chunks: one read-only chunk view
    VIA_OUTPUT = "via_output"  # the output's buffer, near it (or in place): read through the output's one binding
    SHARED = "shared"  # the output's buffer, too far to share its binding: its own read-write u32 view


class Form(enum.Enum):
    """How an operand's units lie in memory."""

    LINEAR = "linear"  # element k of the iteration at base + k, base 16-byte aligned: units are whole chunks
    CHUNK_ROWS = "chunk_rows"  # innermost stride 1, rows of whole units, every row's start aligned to the unit
    STRIDED = "strided"  # anything else: a unit is moved whole where it happens to be, else element by element
    TILED = "tiled"  # (TILES grid) an input read across the output's rows: through a tile in workgroup memory


class OutputBinding(enum.Enum):
    """How the output's one binding is declared."""

    CHUNKS = "chunks"  # vec4<u32>: the bound window is whole 16-byte chunks inside the buffer
    WORDS = "words"  # u32 (atomic<u32> for OutputStore.SCATTER_ATOMIC)


class Grid(enum.Enum):
    """How workgroups are laid over the iteration space (wgsl/common.wgsl)."""

    FLAT = "flat"  # consecutive units, found by dividing their index by the sizes
    ROWS = "rows"  # x: blocks of one innermost row, y/z: rows; a unit's offsets are its row's plus a step
    REPLICATED_ROWS = "replicated_rows"  # ROWS where every input is the same on every row: computed once, stored
    # to REPLICATED_ROW_GROUP rows
    DIVISOR_ROWS = "divisor_rows"  # ROWS where b alone is the same on every row: b loaded once for a group of rows,
    # whose dividends are all loaded before any is divided (wgsl/binary.wgsl)
    DIVISOR_ROWS_LOOPED = "divisor_rows_looped"  # DIVISOR_ROWS with the group's rows divided in a loop
    TILES = "tiles"  # an input whose fastest dimension is not the output's: workgroups take tiles of the plane of
    # the two, read along the input's rows into workgroup memory and written along the output's (wgsl/tiles.wgsl)

    @property
    def rows(self) -> bool:
        return self not in (Grid.FLAT, Grid.TILES)


class OutputStore(enum.Enum):
    """How a unit's results reach the output (wgsl/narrow.wgsl: store_unit; wgsl/wide.wgsl)."""

    UNITS = "units"  # every unit is whole chunks (or one word) of its own: plain stores
    STEPPED = "stepped"  # innermost stride 2, every unit's span one aligned chunk or two words of its own: the span
    # read and written once, the elements between keeping their values
    SCATTER_WORDS = "scatter_words"  # element by element into words no other unit writes (32/64-bit elements, or
    # 8/16-bit ones whose words each hold one unit's elements): plain read-modify-write
    SCATTER_CHUNKS = "scatter_chunks"  # as SCATTER_WORDS, and no other unit has elements in the unit's chunks:
    # each chunk read and written once
    SCATTER_ATOMIC = "scatter_atomic"  # 8/16-bit elements whose words other units write too: atomic lane updates


REPLICATED_ROW_GROUP = 4  # rows a REPLICATED_ROWS invocation stores its unit to
DIVISOR_ROW_GROUP = 4  # rows of a DIVISOR_ROWS group (wgsl/binary.wgsl's run_divisor_rows is written for four)
DEFAULT_WORKGROUP_SIZE = 256
MANY_UNITS_PER_INVOCATION = 4

# Output width / input width -> (file in wgsl/units/, a unit's output bytes, in REPLICATED_ROWS). A unit is one
# 16-byte chunk of output, so that a warp's stores are contiguous; for float32 -> uint8 it is one input chunk (one
# output word) so that its loads are, except in replicated rows, where its results are stored to several rows and
# a whole output chunk per store pays.
UNIT_SHAPES: dict[float, tuple[str, int, int]] = {
    1: ("same_width.wgsl", 16, 16),
    0.5: ("half_width_out.wgsl", 16, 16),
    0.25: ("quarter_width_out.wgsl", 4, 16),
    2: ("double_width_out.wgsl", 16, 16),
}


# A TILES tile holds about this many u32 words of each tiled input (4 KiB): two tiles and the 8-bit division table
# stay well under 16 KiB of workgroup memory.
TILE_WORDS = 1024


@dataclass(frozen=True)
class TileShape:
    """The tile of a TILES kernel: `groups` groups of `unit` consecutive elements along the output's rows (each
    group whole output words) by `column_slots` slots (u32 words; 64-bit: elements) along the tiled input's rows."""

    unit: int  # elements per group: whole input words and whole output words
    groups: int  # groups across a tile: one invocation each, consecutive invocations consecutive groups
    column_slots: int  # slots a tile column holds, read by consecutive invocations
    slot_elements: int  # elements per slot

    @property
    def width(self) -> int:
        """Elements along the output's rows."""
        return self.groups * self.unit

    @property
    def depth(self) -> int:
        """Elements along the tiled input's rows."""
        return self.column_slots * self.slot_elements

    @property
    def slots(self) -> int:
        """Workgroup memory slots per tiled input: every column has one slot more (wgsl/tiles.wgsl)."""
        return self.width * (self.column_slots + 1)


def tile_shape(input_type: DataType, output_type: DataType, workgroup_size: int) -> TileShape:
    """About TILE_WORDS words of input per tile: 32-bit elements 32 x 32 (128-byte reads and writes), others 64 or
    128 bytes of each input column, then as many output columns as fill the tile (8-bit: 64 x 64). With workgroups
    smaller than a warp (tests), as many groups and slots as invocations."""
    if input_type.size == 8:
        unit, slot_elements, slot_words = 1, 1, 2
    else:
        slot_elements, slot_words = 4 // input_type.size, 1
        unit = max(slot_elements, 4 // output_type.size)
    column_slots = 32 if unit == 1 and slot_words == 1 else 16
    groups = TILE_WORDS // (column_slots * slot_words) // unit
    return TileShape(unit, min(groups, workgroup_size), min(column_slots, workgroup_size), slot_elements)


@dataclass(frozen=True)
class TilePlane:
    """Where a TILES kernel runs: the iteration with the tiled input's fast dimension second to last (the output's
    rows last, the others outer), the inputs read through tiles, and the tile."""

    iteration: Iteration
    tiled: tuple[Operand, ...]
    shape: TileShape


@dataclass(frozen=True)
class DispatchPolicy:
    """The tuning knobs of a Device: None takes the adapter's limit, the measured choice or the device's probe.

    Tests pass small values to run every grid on little data; benchmarks try other shapes."""

    workgroup_size: int = DEFAULT_WORKGROUP_SIZE
    units_per_invocation: int | None = None  # None: the planner's choice per kernel
    max_workgroups_per_dimension: int | None = None  # None: the adapter's limit
    binding_size_limit: int | None = None  # None: the adapter's max-storage-buffer-binding-size
    max_buffer_size: int | None = None  # None: the adapter's max-buffer-size (the NumPy-level functions' uploads)
    stream_bytes: int | None = None  # None: gpuops.api.STREAM_BYTES (host calls larger than this run in pieces)
    pack_rounds_to_nearest: bool | None = None  # None: probed on the device (Device.probe_pack_rounding)


@dataclass(frozen=True)
class PlanLimits:
    """What the planner needs to know of the device: its limits, and the facts probed on it."""

    binding_size: int
    storage_offset_alignment: int
    workgroups_per_dimension: int
    workgroup_size: int = DEFAULT_WORKGROUP_SIZE
    units_per_invocation: int | None = None
    pack_rounds_to_nearest: bool = False


@dataclass(frozen=True)
class BoundRegion:
    """What the planner knows of one operand's binding: which buffer (an identity token), its size, the offset."""

    buffer: int
    buffer_size: int
    offset: int


@dataclass(frozen=True)
class KernelKey:
    """Everything a kernel's shader text depends on, each field decided once by the planner."""

    operator: str  # the operator row's name, e.g. "ELEMENT_WISE_SIGN"
    shader: str  # its file in wgsl/ops/
    input_type: DataType
    output_type: DataType
    rank: int  # dimensions of the coalesced iteration space, 1..8
    forms: tuple[Form | None, Form | None, Form]  # per operand A, B, OUT (None: no such operand)
    placements: tuple[Placement, ...]  # per input
    output_binding: OutputBinding
    grid: Grid
    output_store: OutputStore
    unit: int  # elements per unit of work
    row_group: int  # rows an invocation takes (ROWS grids)
    workgroup_size: int
    units_per_invocation: int
    signed_remainder: str | None  # wgsl/lib file giving signed remainders (dividing signed 8-32-bit types)
    divider: str | None  # wgsl/lib file giving magnitude remainders (dividing 8-32-bit integer types)
    constants: tuple[tuple[str, int], ...] = ()  # operator constants, e.g. (("INFINITY_MODE", 1),)
    pack_rounds_to_nearest: bool = False  # float16 results rounded by pack2x16float as NumPy rounds them
    tile_loops: bool = False  # TILES: more tiles than workgroups along a grid dimension; workgroups take several

    @property
    def input_count(self) -> int:
        return len(self.placements)

    @property
    def wide(self) -> bool:
        """64-bit element types: every operand has the same 8-byte type."""
        return self.input_type.size == 8

    @property
    def atomic_output(self) -> bool:
        return self.output_store is OutputStore.SCATTER_ATOMIC

    @property
    def unit_file(self) -> str:
        return UNIT_SHAPES[self.output_type.size / self.input_type.size][0]

    def linear(self, operand: Operand) -> bool:
        """The shader's *_LINEAR constant (an absent B counts as linear: it never stops ALL_LINEAR)."""
        return self.forms[operand] in (None, Form.LINEAR)

    def describe(self) -> str:
        """One line per field: the head of every shader (and of a dump)."""
        lines = []
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                value = value.name
            elif isinstance(value, tuple):
                value = tuple(v.name if isinstance(v, enum.Enum) else v for v in value)
            lines.append(f"{name} = {value}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Uniforms:
    """The Params struct of wgsl/common.wgsl: what varies per dispatch and not per shader text."""

    sizes: tuple[int, ...]
    strides: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # per operand A, B, OUT (zeros when absent)
    bases: tuple[int, int, int]  # element offset of each operand's first element in its window
    element_count: int
    unit_count: int
    row_count: int  # rows of the innermost dimension
    plane_count: int  # planes of the two innermost dimensions (1 where the rank is 1)

    def to_bytes(self) -> bytes:
        sizes = np.ones(8, np.uint32)
        sizes[: len(self.sizes)] = self.sizes
        strides = np.zeros((3, 8), np.uint32)
        for operand, operand_strides in enumerate(self.strides):
            strides[operand, : len(operand_strides)] = operand_strides
        base = np.array([*self.bases, 0], np.uint32)
        tail = np.array([self.element_count, self.unit_count, self.row_count, self.plane_count], np.uint32)
        return b"".join(a.tobytes() for a in (sizes, strides, base, tail))


@dataclass(frozen=True)
class DispatchPlan:
    """One kernel dispatch: its key, its grid of workgroups, the window bound for each operand, its uniforms."""

    key: KernelKey
    grid_size: tuple[int, int, int]
    windows: tuple[Window | None, Window | None, Window]  # per operand A, B, OUT
    uniforms: Uniforms


def operands_of(spec: OperatorSpec) -> tuple[Operand, ...]:
    """The operands of an operator, in the order of spec.tensor_fields."""
    return (Operand.A, Operand.B, Operand.OUT) if len(spec.inputs) == 2 else (Operand.A, Operand.OUT)


def plan_dispatches(spec: OperatorSpec, desc: object, tensors: tuple[TensorDesc, ...],
                    regions: tuple[BoundRegion, ...], limits: PlanLimits) -> tuple[DispatchPlan, ...]:
    """The dispatches that run `desc` with its tensors bound at `regions` (both in spec.tensor_fields' order)."""
    operands = operands_of(spec)
    element_sizes = {op: t.data_type.size for op, t in zip(operands, tensors)}
    region = dict(zip(operands, regions))
    input_type, output_type = tensors[0].data_type, tensors[-1].data_type
    iteration = coalesce(tensors[0].sizes, [t.element_strides for t in tensors])
    # Room for the windows' alignment slack: every bound window stays within the adapter's limit.
    limit = limits.binding_size - limits.storage_offset_alignment - 16
    inputs = operands[:-1]
    shares_output = {op: region[op].buffer == region[Operand.OUT].buffer for op in inputs}
    if any(shares_output.values()):
        limit //= 2  # an input read through the output's binding widens that window
    plans = []
    for box in split_boxes(iteration, list(element_sizes.values()), limit):
        it = Iteration(box.sizes, box.strides)
        strides = dict(zip(operands, box.strides))
        starts = {op: region[op].offset + start * element_sizes[op] for op, start in zip(operands, box.starts)}
        spans = {op: span_in_bytes(box.sizes, strides[op], element_sizes[op]) for op in operands}
        windows, placements, output_binding = _windows(inputs, region, starts, spans, element_sizes, shares_output,
                                                       limits)
        linear = {op: it.is_linear(i) and windows[op].base_element * element_sizes[op] % 16 == 0
                  for i, op in enumerate(operands)}
        if output_type.size != 2 * input_type.size:  # (units twice as wide as their input read its words)
            # A linear input whose window can be whole chunks needs no word view (its units read chunks; a partial
            # last unit reads its words through the chunk view): one view fewer to validate and track per dispatch.
            for op in inputs:
                whole = -(-windows[op].size // 16) * 16
                if (placements[op] is Placement.SEPARATE and linear[op]
                        and windows[op].offset + whole <= region[op].buffer_size):
                    windows[op] = Window(windows[op].offset, whole, windows[op].base_element)
                    placements[op] = Placement.CHUNKS
        shape = _Shape(spec, input_type, output_type, it, operands, strides, windows, linear, placements,
                       output_binding, limits)
        key, grid_size, it = shape.key_and_grid(desc)
        strides = dict(zip(operands, it.strides))
        uniforms = Uniforms(
            sizes=it.sizes,
            strides=tuple(strides.get(op, (0,) * it.rank) for op in Operand),
            bases=tuple(windows[op].base_element if op in windows else 0 for op in Operand),
            element_count=math.prod(it.sizes), unit_count=-(-math.prod(it.sizes) // key.unit),
            row_count=math.prod(it.sizes) // it.sizes[-1], plane_count=math.prod(it.sizes[:-2]))
        plans.append(DispatchPlan(key, grid_size, tuple(windows.get(op) for op in Operand), uniforms))
    return tuple(plans)


def _windows(inputs, region, starts, spans, element_sizes, shares_output, limits):
    """Each operand's bound window, each input's placement and the output's binding."""
    alignment = limits.storage_offset_alignment
    windows = {op: window_for(starts[op], spans[op], element_sizes[op], alignment, region[op].buffer_size)
               for op in starts}
    placements = {op: Placement.SEPARATE for op in inputs}
    out_size = region[Operand.OUT].buffer_size
    if any(shares_output.values()):
        # One writable binding per buffer: inputs in the output's buffer are read through the output's binding,
        # widened to cover them (in place, the regions are the same).
        covered = [op for op in inputs if shares_output[op]] + [Operand.OUT]
        first = min(starts[op] for op in covered)
        end = max(starts[op] + spans[op] for op in covered)
        union = window_for(first, end - first, 1, alignment, out_size)
        if union.size + 16 <= limits.binding_size:  # + rounding to whole chunks below
            for op in covered:
                windows[op] = Window(union.offset, union.size, (starts[op] - union.offset) // element_sizes[op])
                if op is not Operand.OUT:
                    placements[op] = Placement.VIA_OUTPUT
        else:
            placements = {op: Placement.SHARED if shares_output[op] else Placement.SEPARATE for op in inputs}
    # The output moves as 16-byte chunks when its window can be whole chunks inside the buffer.
    out = windows[Operand.OUT]
    whole = -(-out.size // 16) * 16
    output_binding = OutputBinding.CHUNKS if out.offset + whole <= out_size else OutputBinding.WORDS
    if output_binding is OutputBinding.CHUNKS:
        for op in windows:
            if op is Operand.OUT or placements.get(op) is Placement.VIA_OUTPUT:
                windows[op] = Window(out.offset, whole, windows[op].base_element)
    return windows, placements, output_binding


@dataclass(frozen=True)
class _Shape:
    """One box's layout facts, from which the grid, the output store, the unit and the key follow."""

    spec: OperatorSpec
    input_type: DataType
    output_type: DataType
    it: Iteration
    operands: tuple[Operand, ...]
    strides: dict
    windows: dict
    linear: dict
    placements: dict
    output_binding: OutputBinding
    limits: PlanLimits

    @property
    def separate(self) -> bool:
        """No input is read through the output's binding (whose words may then be written around it)."""
        return all(p in (Placement.SEPARATE, Placement.CHUNKS) for p in self.placements.values())

    def position(self, op: Operand) -> int:
        """The operand's index in the Iteration's strides."""
        return self.operands.index(op)

    def key_and_grid(self, desc: object) -> tuple[KernelKey, tuple[int, int, int], Iteration]:
        """The key, the grid of workgroups and the iteration (in the order the kernel's uniforms give it)."""
        for grid in self.grid_candidates():
            if grid is Grid.TILES:
                found = self.tiles_key_and_grid(desc)
                if found is not None:
                    return found
                continue
            store, unit = self.output_store(grid)
            forms = self.forms(unit)
            if store is not OutputStore.STEPPED and forms[Operand.OUT] is not Form.STRIDED:
                store = OutputStore.UNITS
            row_group = self.row_group(grid)
            upi = self.limits.units_per_invocation or self.tuned_units_per_invocation(grid, unit)
            grid_size = self.grid_size(grid, unit, row_group, upi)
            if grid_size is None:
                continue
            return self.key(desc, grid, forms, store, unit, row_group, upi), grid_size, self.it
        raise AssertionError("the flat grid always fits")  # pragma: no cover

    def key(self, desc: object, grid: Grid, forms: tuple[Form | None, Form | None, Form], store: OutputStore,
            unit: int, row_group: int, upi: int, tile_loops: bool = False) -> KernelKey:
        policy = self.spec.type_policy(self.input_type)
        return KernelKey(
            operator=self.spec.name, shader=self.spec.shader, input_type=self.input_type,
            output_type=self.output_type, rank=self.it.rank, forms=forms,
            placements=tuple(self.placements[op] for op in self.operands[:-1]),
            output_binding=self.output_binding, grid=grid, output_store=store, unit=unit, row_group=row_group,
            workgroup_size=self.limits.workgroup_size, units_per_invocation=upi,
            signed_remainder=self.signed_remainder(), divider=self.divider(),
            constants=tuple(sorted(self.spec.shader_constants(desc).items())),
            pack_rounds_to_nearest=policy.pack_rounding and self.limits.pack_rounds_to_nearest,
            tile_loops=tile_loops)

    # -- the TILES grid --------------------------------------------------------------------------------------------

    @functools.cached_property
    def tile_plane(self) -> TilePlane | None:
        """The plane a TILES kernel would tile, or None where it does not apply: an input read across the output's
        rows (a stride along them other than 0 and 1, and a dimension of stride 1 elsewhere, its "fast" one),
        output rows of stride 1, no input read through the output's binding, and rows long enough along both
        dimensions to fill at least half a tile. Inputs with the same fast dimension and read across the rows too
        are tiled alike; the others are read where they lie."""
        it, last = self.it, self.it.rank - 1
        if it.rank < 2 or not self.separate or self.strides[Operand.OUT][last] != 1:
            return None
        inputs = self.operands[:-1]
        across = [op for op in inputs if self.strides[op][last] not in (0, 1) and 1 in self.strides[op][:last]]
        if not across:
            return None
        fast = self.strides[across[0]].index(1)
        order = [d for d in range(it.rank) if d not in (fast, last)] + [fast, last]
        plane = Iteration(tuple(it.sizes[d] for d in order),
                          tuple(tuple(strides[d] for d in order) for strides in it.strides))
        shape = tile_shape(self.input_type, self.output_type, self.limits.workgroup_size)
        if 2 * plane.sizes[-1] < shape.width or 2 * plane.sizes[-2] < shape.depth:
            return None
        return TilePlane(plane, tuple(op for op in across if self.strides[op][fast] == 1), shape)

    def tiles_key_and_grid(self, desc: object) -> tuple[KernelKey, tuple[int, int, int], Iteration] | None:
        """A TILES kernel's key, grid and iteration, or None where the layout does not suit one. The grid is one
        workgroup per tile: x tile columns, y tile rows, z planes (wgsl/tiles.wgsl: main), each dimension capped
        at the adapter's limit, past which workgroups take several tiles (`tile_loops`). Its output stores are
        plain where every output row starts on a word (the last, partial word of a row has no other element);
        8/16-bit outputs in rows of other pitches share words between rows and tiles, stored with atomics."""
        plane = self.tile_plane
        if plane is None:
            return None
        it, shape = plane.iteration, plane.shape
        tiles = (-(-it.sizes[-1] // shape.width), -(-it.sizes[-2] // shape.depth), math.prod(it.sizes[:-2]))
        per_dimension = self.limits.workgroups_per_dimension
        grid = (min(tiles[0], per_dimension), min(tiles[1], per_dimension), min(tiles[2], per_dimension))
        size = self.output_type.size
        out = self.position(Operand.OUT)
        rows_on_words = (self.windows[Operand.OUT].base_element * size % 4 == 0
                         and all(stride * size % 4 == 0 for stride in it.strides[out][:-1]))
        store = OutputStore.SCATTER_WORDS if rows_on_words else OutputStore.SCATTER_ATOMIC
        forms: list[Form | None] = [None, None, Form.STRIDED]
        for op in self.operands[:-1]:
            forms[op] = Form.TILED if op in plane.tiled else Form.STRIDED
        key = self.key(desc, Grid.TILES, tuple(forms), store, shape.unit, 1, 1, tile_loops=grid != tiles)
        return key, grid, it

    # -- the grid ------------------------------------------------------------------------------------------------

    def grid_candidates(self) -> list[Grid]:
        """Grids in order of preference. Tiles need an input read across the output's rows (tile_plane); rows need
        a strided operand and two dimensions; grouped rows need every input (replicated) or the divisor alone
        (divisor rows, where the type's policy asks for it) to be the same on every row, and no input read through
        the output's binding."""
        if all(self.linear.values()) or self.it.rank < 2:
            return [Grid.FLAT]
        candidates = [Grid.TILES] if self.tile_plane is not None else []
        if self.separate:
            same = [not any(self.strides[op][:-1]) for op in self.operands[:-1]]
            divisor_rows = self.spec.type_policy(self.input_type).divisor_rows
            if all(same):
                candidates.append(Grid.REPLICATED_ROWS)
            elif same == [False, True] and divisor_rows is not None:
                candidates.append(divisor_rows)
        return candidates + [Grid.ROWS, Grid.FLAT]

    def row_group(self, grid: Grid) -> int:
        return {Grid.FLAT: 1, Grid.ROWS: 1, Grid.REPLICATED_ROWS: REPLICATED_ROW_GROUP}.get(grid, DIVISOR_ROW_GROUP)

    def grid_size(self, grid: Grid, unit: int, row_group: int, upi: int) -> tuple[int, int, int] | None:
        per_dimension = self.limits.workgroups_per_dimension
        workgroup = self.limits.workgroup_size
        if grid is Grid.FLAT:
            units = -(-math.prod(self.it.sizes) // unit)
            return flat_grid(-(-units // (workgroup * upi)), per_dimension)
        return rows_grid(self.it.sizes, unit, row_group, workgroup, upi, per_dimension)

    def tuned_units_per_invocation(self, grid: Grid, unit: int) -> int:
        """Units each invocation runs: one where nothing is amortised over several (a flat grid with a strided
        operand, whose units each find their own coordinates; a linear kernel whose unit is a whole output chunk,
        so the dispatch has the most workgroups; grouped rows, whose invocation stores to several rows); four where
        an invocation has work to amortise (a ROWS kernel's row offsets, the 8-bit division table's fill, float32 ->
        uint8's one-word units, and the types whose policy asks for more in linear kernels)."""
        if grid.rows:
            return MANY_UNITS_PER_INVOCATION if grid is Grid.ROWS else 1
        if not all(self.linear.values()):
            return 1
        chunk_units = unit * self.output_type.size == 16
        asked = self.spec.type_policy(self.input_type).linear_units_per_invocation
        if chunk_units and not self.reciprocal_table() and asked is None:
            return 1
        return asked or MANY_UNITS_PER_INVOCATION

    # -- the unit and the output store ------------------------------------------------------------------------------

    def base_unit(self, grid: Grid) -> int:
        """Elements per unit before any stepping: 2 for 64-bit types, else UNIT_SHAPES' bytes over the output's
        element size."""
        if self.input_type.size == 8:
            return 2
        _, unit_bytes, replicated_bytes = UNIT_SHAPES[self.output_type.size / self.input_type.size]
        return (replicated_bytes if grid is Grid.REPLICATED_ROWS else unit_bytes) // self.output_type.size

    def output_store(self, grid: Grid) -> tuple[OutputStore, int]:
        """The store for a strided output on this grid, and the unit it gives (a stepped output's units are half as
        many elements where a unit is a whole chunk, so that its elements and those between span one chunk).
        The caller replaces it by UNITS where the output's units turn out whole."""
        unit = self.base_unit(grid)
        out = self.position(Operand.OUT)
        size = self.output_type.size
        if size >= 4:
            return OutputStore.SCATTER_WORDS, unit  # every element has words of its own
        base = self.windows[Operand.OUT].base_element
        if self.separate and self.output_binding is OutputBinding.CHUNKS and not self.linear[Operand.OUT] \
                and self.it.strides[out][-1] == 2:
            stepped = unit // 2 if unit * size == 16 else unit
            span_chunk = stepped * size * 2 == 16
            if units_aligned(self.it, out, base, stepped, (16 if span_chunk else 4) // size):
                return OutputStore.STEPPED, stepped
        if self.separate and units_own_their_words(self.it, out, base, size, unit):
            if self.output_binding is OutputBinding.CHUNKS and units_own_their_words(
                    self.it, out, base, size, unit, word_bytes=16):
                return OutputStore.SCATTER_CHUNKS, unit
            return OutputStore.SCATTER_WORDS, unit
        return OutputStore.SCATTER_ATOMIC, unit

    def forms(self, unit: int) -> tuple[Form | None, Form | None, Form]:
        forms: list[Form | None] = [None, None, None]
        for i, op in enumerate(self.operands):
            if self.linear[op]:
                forms[op] = Form.LINEAR
            elif self.it.rank > 1 and self.it.strides[i][-1] == 1 and units_aligned(
                    self.it, i, self.windows[op].base_element, unit, unit):
                forms[op] = Form.CHUNK_ROWS
            else:
                forms[op] = Form.STRIDED
        return tuple(forms)

    # -- libraries the type's division needs --------------------------------------------------------------------

    def reciprocal_table(self) -> bool:
        """8-bit division by a table of reciprocals in workgroup memory, filled once per workgroup."""
        return self.input_type.size == 1 and self.spec.divides

    def divider(self) -> str | None:
        """The file in wgsl/lib/ that defines magnitude_rem: 8-bit types divide by a table of reciprocals (whose
        workgroup memory it prepares), uint16 by a float estimate of the quotient, 32-bit types by `%`."""
        if not self.spec.divides or self.input_type.size not in (1, 2, 4) or self.input_type.numpy_dtype.kind == "f":
            return None
        if self.reciprocal_table():
            return "divide_by_reciprocals.wgsl"
        if self.input_type == DataType.UINT16:
            return "divide_by_estimate.wgsl"
        return "divide_plain.wgsl"

    def signed_remainder(self) -> str | None:
        if not self.spec.divides or self.input_type not in (DataType.INT8, DataType.INT16, DataType.INT32):
            return None
        return self.spec.type_policy(self.input_type).signed_remainder or "signed_by_magnitudes.wgsl"


def flat_grid(groups: int, per_dimension: int) -> tuple[int, int, int]:
    """A grid of at least `groups` workgroups, 2-D where one dimension cannot hold them, with fewer than one row of
    surplus (the kernel skips it): a full first row would launch up to twice the work's workgroups."""
    rows = -(-groups // per_dimension)
    return (-(-groups // rows), rows, 1)


def rows_grid(sizes: tuple[int, ...], unit: int, row_group: int, workgroup_size: int, units_per_invocation: int,
              per_dimension: int) -> tuple[int, int, int] | None:
    """The grid of a ROWS kernel (wgsl/common.wgsl): x = blocks of one row of the innermost dimension, y and z =
    groups of rows, with fewer than one y-row of surplus. None where the layout does not suit one: a single
    dimension, rows that do not hold whole units (a unit would span two rows), or rows of fewer units than a
    workgroup has invocations (most of each workgroup would idle)."""
    row_size = sizes[-1]
    if len(sizes) < 2 or row_size % unit or row_size // unit < workgroup_size:
        return None
    blocks = -(-(row_size // unit) // (workgroup_size * units_per_invocation))
    rows = -(-math.prod(sizes[:-1]) // row_group)
    if blocks > per_dimension or rows > per_dimension**2:
        return None
    layers = -(-rows // per_dimension)
    return (blocks, -(-rows // layers), layers)
