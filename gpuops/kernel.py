"""The kernel key: an operation (what a kernel computes) and a loop (how it walks memory), the pair the shader text
is a function of.

The operator side (gpuops/operators.py) derives the Operation from an operator's row, the types, the attributes,
the device's probed facts and whether the NumPy level asks for its floating-point errors: its WGSL files, the
constants they read, the library that keeps a table in workgroup memory, the flag word it reports into; and, beside
the key, a LoopRequest: what it asks of the loop. The planner (gpuops/plan.py) derives the Loop
from the tensors' layout alone. Neither part holds a field another field gives: the unit, the row group and the
tile follow from the two (KernelKey's properties), and gpuops/shaders.py makes the text from the key alone.

Operands are numbered as the shaders number them everywhere: A = 0, B = 1, OUT = 2 (a one-input operator has
no B).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .enums import DataType


class Operand(enum.IntEnum):
    """An operand's index in every per-operand tuple and in the shaders (OPERAND_A, OPERAND_B, OPERAND_OUT)."""

    A = 0
    B = 1
    OUT = 2


def operands_of(input_count: int) -> tuple[Operand, ...]:
    """The operands of an operator of one or two inputs, in the order of its tensor fields."""
    return (Operand.A, Operand.B, Operand.OUT) if input_count == 2 else (Operand.A, Operand.OUT)


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
    """How workgroups are laid over the iteration space (wgsl/loop/grids/)."""

    FLAT = "flat"  # consecutive units, found by dividing their index by the sizes
    ROWS = "rows"  # x: blocks of one innermost row, y/z: rows; a unit's offsets are its row's plus a step
    REPLICATED_ROWS = "replicated_rows"  # ROWS where every input is the same on every row: computed once, stored
    # to REPLICATED_ROW_GROUP rows
    DIVISOR_ROWS = "divisor_rows"  # ROWS where b alone is the same on every row: b loaded once for a group of rows,
    # whose dividends are all loaded before any is divided
    DIVISOR_ROWS_LOOPED = "divisor_rows_looped"  # DIVISOR_ROWS with the group's rows divided in a loop
    TILES = "tiles"  # an input whose fastest dimension is not the output's: workgroups take tiles of the plane of
    # the two, read along the input's rows into workgroup memory and written along the output's

    @property
    def rows(self) -> bool:
        return self not in (Grid.FLAT, Grid.TILES)


class OutputStore(enum.Enum):
    """How a unit's results reach the output (wgsl/loop/stores/)."""

    UNITS = "units"  # every unit is whole chunks (or one word) of its own: plain stores
    STEPPED = "stepped"  # innermost stride 2, every unit's span one aligned chunk or two words of its own: the span
    # read and written once, the elements between keeping their values
    SCATTER_WORDS = "scatter_words"  # element by element into words no other unit writes (32/64-bit elements, or
    # 8/16-bit ones whose words each hold one unit's elements): plain read-modify-write
    SCATTER_CHUNKS = "scatter_chunks"  # as SCATTER_WORDS, and no other unit has elements in the unit's chunks:
    # each chunk read and written once
    SCATTER_ATOMIC = "scatter_atomic"  # 8/16-bit elements whose words other units write too: atomic lane updates


REPLICATED_ROW_GROUP = 4  # rows a REPLICATED_ROWS invocation stores its unit to
DIVISOR_ROW_GROUP = 4  # rows of a DIVISOR_ROWS group (wgsl/loop/grids/divisor_rows.wgsl is written for four)

# Output width / input width -> (file in wgsl/loop/units/, a unit's output bytes, in REPLICATED_ROWS). A unit is
# one 16-byte chunk of output, so that a warp's stores are contiguous; for float32 -> uint8 it is one input chunk
# (one output word) so that its loads are, except in replicated rows, where its results are stored to several rows
# and a whole output chunk per store pays.
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
        """Workgroup memory slots per tiled input: every column has one slot more (wgsl/loop/grids/tiles.wgsl)."""
        return self.width * (self.column_slots + 1)


def _tile_group(input_type: DataType, output_type: DataType) -> tuple[int, int, int]:
    """(elements per group, elements per slot, words per slot) of a TILES kernel."""
    if input_type.size == 8:
        return 1, 1, 2
    slot_elements = 4 // input_type.size
    return max(slot_elements, 4 // output_type.size), slot_elements, 1


def tile_shape(input_type: DataType, output_type: DataType, workgroup_size: int) -> TileShape:
    """About TILE_WORDS words of input per tile: 32-bit elements 32 x 32 (128-byte reads and writes), others 64 or
    128 bytes of each input column, then as many output columns as fill the tile (8-bit: 64 x 64). With workgroups
    smaller than a warp (tests), as many groups and slots as invocations."""
    unit, slot_elements, slot_words = _tile_group(input_type, output_type)
    column_slots = 32 if unit == 1 and slot_words == 1 else 16
    groups = TILE_WORDS // (column_slots * slot_words) // unit
    return TileShape(unit, min(groups, workgroup_size), min(column_slots, workgroup_size), slot_elements)


def unit_shape(input_type: DataType, output_type: DataType) -> tuple[str, int, int]:
    """UNIT_SHAPES' row for a type pair of a narrow loop: its unit file, unit bytes and replicated unit bytes."""
    return UNIT_SHAPES[output_type.size / input_type.size]


def unit_of(input_type: DataType, output_type: DataType, grid: Grid, store: OutputStore) -> int:
    """Elements per unit of work: 2 for 64-bit types, else UNIT_SHAPES' bytes over the output's element size, halved
    for a stepped output where that is a whole chunk (so that its elements and those between span one chunk); a
    TILES kernel's group (tile_shape)."""
    if grid is Grid.TILES:
        return _tile_group(input_type, output_type)[0]
    if input_type.size == 8:
        return 2
    _, unit_bytes, replicated_bytes = unit_shape(input_type, output_type)
    unit = (replicated_bytes if grid is Grid.REPLICATED_ROWS else unit_bytes) // output_type.size
    if store is OutputStore.STEPPED and unit * output_type.size == 16:
        return unit // 2
    return unit


def row_group_of(grid: Grid) -> int:
    """Rows an invocation takes."""
    return {Grid.REPLICATED_ROWS: REPLICATED_ROW_GROUP, Grid.DIVISOR_ROWS: DIVISOR_ROW_GROUP,
            Grid.DIVISOR_ROWS_LOOPED: DIVISOR_ROW_GROUP}.get(grid, 1)


@dataclass(frozen=True)
class Operation:
    """The operator part of a kernel: what it computes, on which types, in which WGSL. Made by the operator side
    (OperatorSpec.operation); the planner reads only its types and whether it keeps workgroup memory."""

    input_type: DataType
    output_type: DataType
    op_file: str  # under wgsl/ops/: fn op over lanes
    files: tuple[str, ...]  # what op needs, relative to wgsl/: the type's family, libraries, the operator's math
    constants: tuple[tuple[str, int | bool], ...] = ()  # WGSL constants the files read, e.g. (("INFINITY_MODE", 1),)
    # A library keeping a table in workgroup memory, filled by its prepare_workgroup(lane): the loop calls that once
    # per workgroup, where it suits the grid, and plans several units per invocation to amortise it.
    workgroup_file: str | None = None
    # The kernel reports what its files note (NumPy's floating-point error cases, lib/error_notes.wgsl) into a u32
    # word bound after the loop's views (`error_flags`): each invocation that noted one ORs its type's ERROR_FLAG in
    # once, at its end (lib/error_flags.wgsl: finish_invocation, called by the reporting entry point). The variant
    # the NumPy-level functions ask for; never at the DirectML level. It changes no loop choice.
    error_flags: bool = False

    @property
    def name(self) -> str:
        """'sign', 'modulus_floor': the operator as its op file names it."""
        return self.op_file.removesuffix(".wgsl").replace("/", "_")


@dataclass(frozen=True)
class LoopRequest:
    """What an operation asks of the loop, beside the key: the planner's choices that the operator's measurements
    made for its types (OperatorSpec.loop_request)."""

    # Where b alone is the same on every row: divide a group of rows per invocation, b loaded once
    # (Grid.DIVISOR_ROWS, the rows written out; DIVISOR_ROWS_LOOPED, in a loop). None: the plain ROWS grid.
    divisor_rows: Grid | None = None
    # Units per invocation in linear kernels whose unit is a whole output chunk (None: the planner's choice).
    linear_units_per_invocation: int | None = None


@dataclass(frozen=True)
class Loop:
    """The loop part of a kernel: how its invocations walk the operands' memory, from their layout alone. Made by
    the planner (plan_dispatches)."""

    rank: int  # dimensions of the coalesced iteration space, 1..8
    forms: tuple[Form | None, Form | None, Form]  # per operand A, B, OUT (None: no such operand)
    placements: tuple[Placement, ...]  # per input
    output_binding: OutputBinding  # (WORDS wherever the store is atomic)
    grid: Grid
    output_store: OutputStore
    workgroup_size: int
    units_per_invocation: int  # (1 on TILES, whose invocations take tile groups)
    tile_loops: bool = False  # TILES: more tiles than workgroups along a grid dimension; workgroups take several


@dataclass(frozen=True)
class KernelKey:
    """Everything a kernel's shader text depends on: the pair, each part decided once (the pipeline cache's key)."""

    operation: Operation
    loop: Loop

    @property
    def input_count(self) -> int:
        return len(self.loop.placements)

    @property
    def wide(self) -> bool:
        """64-bit element types: every operand has the same 8-byte type."""
        return self.operation.input_type.size == 8

    @property
    def unit(self) -> int:
        """Elements per unit of work (unit_of)."""
        return unit_of(self.operation.input_type, self.operation.output_type, self.loop.grid,
                       self.loop.output_store)

    @property
    def row_group(self) -> int:
        return row_group_of(self.loop.grid)

    @property
    def tile(self) -> TileShape:
        return tile_shape(self.operation.input_type, self.operation.output_type, self.loop.workgroup_size)

    @property
    def atomic_output(self) -> bool:
        return self.loop.output_store is OutputStore.SCATTER_ATOMIC

    @property
    def label(self) -> str:
        """'modulus_floor int8': the kernel in errors and pipeline labels."""
        operation = self.operation
        types = operation.input_type.name.lower()
        if operation.output_type != operation.input_type:
            types += "->" + operation.output_type.name.lower()
        return f"{operation.name} {types}"

    def linear(self, operand: Operand) -> bool:
        """The shader's *_LINEAR constant (an absent B counts as linear: it never stops ALL_LINEAR)."""
        return self.loop.forms[operand] in (None, Form.LINEAR)

    def describe(self) -> str:
        """One line per field of each part: the head of every shader (and of a dump)."""
        lines = []
        for part in (self.operation, self.loop):
            for name in part.__dataclass_fields__:
                value = getattr(part, name)
                if isinstance(value, enum.Enum):
                    value = value.name
                elif isinstance(value, tuple):
                    value = tuple(v.name if isinstance(v, enum.Enum) else v for v in value)
                lines.append(f"{type(part).__name__.lower()}.{name} = {value}")
        return "\n".join(lines)
