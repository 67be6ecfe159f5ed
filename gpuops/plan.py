"""Planning: from an operation and where its tensors are bound to the kernels that run it.

`plan_dispatches` is one pure step (no wgpu object is touched): the iteration space is cut into boxes that fit
the adapter's binding limit, and for each box, in this order and each decided once:

1. windows: the part of each buffer bound for each operand, and where each input is read (`Placement`);
2. operand forms: `LINEAR` (element k at base + k, 16-byte aligned), `CHUNK_ROWS` (rows of whole aligned units)
   or `STRIDED` (`Form`);
3. the grid (`Grid`) and the output store (`OutputStore`), chosen together: each grid candidate, in order of
   preference, gets the store that suits it and the unit (elements per unit of work) that grid and store give;
   the first candidate whose conditions hold with that final unit is taken (TILES, for an input read across the
   output's rows, also orders the dimensions its own way: `TilePlane`);
4. the Loop, built once from those values: with the operation, the kernel's key (gpuops/kernel.py).

The planner reads of the operation only its types, whether it keeps workgroup memory, and the LoopRequest beside
it: never an operator's row. tests/footprint.py models, from a plan alone, which bytes its kernels read and write.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .enums import DataType
from .kernel import (Form, Grid, KernelKey, Loop, LoopRequest, Operand, Operation, OutputBinding, OutputStore,
                     Placement, TileShape, operands_of, row_group_of, tile_shape, unit_of)
from .layout import Iteration, Window, coalesce, span_in_bytes, split_boxes, units_aligned, units_own_their_words, \
    window_for
from .tensor import TensorDesc

DEFAULT_WORKGROUP_SIZE = 256
MANY_UNITS_PER_INVOCATION = 4


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
    """What the planner needs to know of the device: its limits, and the policy's knobs."""

    binding_size: int
    storage_offset_alignment: int
    workgroups_per_dimension: int
    workgroup_size: int = DEFAULT_WORKGROUP_SIZE
    units_per_invocation: int | None = None


@dataclass(frozen=True)
class BoundRegion:
    """What the planner knows of one operand's binding: which buffer (an identity token), its size, the offset."""

    buffer: int
    buffer_size: int
    offset: int


@dataclass(frozen=True)
class Uniforms:
    """The Params struct of wgsl/loop/params.wgsl: what varies per dispatch and not per shader text."""

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


def plan_dispatches(operation: Operation, request: LoopRequest, tensors: tuple[TensorDesc, ...],
                    regions: tuple[BoundRegion, ...], limits: PlanLimits) -> tuple[DispatchPlan, ...]:
    """The dispatches that run `operation` (with what it asks of the loop, `request`) on `tensors` bound at
    `regions`, both in the operator's tensor order (inputs, then the output)."""
    operands = operands_of(len(tensors) - 1)
    element_sizes = {op: t.data_type.size for op, t in zip(operands, tensors)}
    region = dict(zip(operands, regions))
    input_type, output_type = operation.input_type, operation.output_type
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
        shape = _Shape(operation, request, it, operands, strides, windows, linear, placements, output_binding,
                       limits)
        key, grid_size, it = shape.key_and_grid()
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

    operation: Operation
    request: LoopRequest
    it: Iteration
    operands: tuple[Operand, ...]
    strides: dict
    windows: dict
    linear: dict
    placements: dict
    output_binding: OutputBinding
    limits: PlanLimits

    @property
    def input_type(self) -> DataType:
        return self.operation.input_type

    @property
    def output_type(self) -> DataType:
        return self.operation.output_type

    @property
    def separate(self) -> bool:
        """No input is read through the output's binding (whose words may then be written around it)."""
        return all(p in (Placement.SEPARATE, Placement.CHUNKS) for p in self.placements.values())

    def position(self, op: Operand) -> int:
        """The operand's index in the Iteration's strides."""
        return self.operands.index(op)

    def key_and_grid(self) -> tuple[KernelKey, tuple[int, int, int], Iteration]:
        """The key, the grid of workgroups and the iteration (in the order the kernel's uniforms give it)."""
        for grid in self.grid_candidates():
            if grid is Grid.TILES:
                found = self.tiles_key_and_grid()
                if found is not None:
                    return found
                continue
            store = self.output_store(grid)
            unit = unit_of(self.input_type, self.output_type, grid, store)
            forms = self.forms(unit)
            if store is not OutputStore.STEPPED and forms[Operand.OUT] is not Form.STRIDED:
                store = OutputStore.UNITS
            upi = self.limits.units_per_invocation or self.tuned_units_per_invocation(grid, unit)
            grid_size = self.grid_size(grid, unit, upi)
            if grid_size is None:
                continue
            return self.key(grid, forms, store, upi), grid_size, self.it
        raise AssertionError("the flat grid always fits")  # pragma: no cover

    def key(self, grid: Grid, forms: tuple[Form | None, Form | None, Form], store: OutputStore, upi: int,
            tile_loops: bool = False) -> KernelKey:
        # An atomic output is declared as words whatever its window allows.
        binding = OutputBinding.WORDS if store is OutputStore.SCATTER_ATOMIC else self.output_binding
        loop = Loop(rank=self.it.rank, forms=forms, placements=tuple(self.placements[op] for op in self.operands[:-1]),
                    output_binding=binding, grid=grid, output_store=store, workgroup_size=self.limits.workgroup_size,
                    units_per_invocation=upi, tile_loops=tile_loops)
        return KernelKey(self.operation, loop)

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

    def tiles_key_and_grid(self) -> tuple[KernelKey, tuple[int, int, int], Iteration] | None:
        """A TILES kernel's key, grid and iteration, or None where the layout does not suit one. The grid is one
        workgroup per tile: x tile columns, y tile rows, z planes (wgsl/loop/grids/tiles.wgsl), each dimension capped
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
        key = self.key(Grid.TILES, tuple(forms), store, 1, tile_loops=grid != tiles)
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
            divisor_rows = self.request.divisor_rows
            if all(same):
                candidates.append(Grid.REPLICATED_ROWS)
            elif same == [False, True] and divisor_rows is not None:
                candidates.append(divisor_rows)
        return candidates + [Grid.ROWS, Grid.FLAT]

    def grid_size(self, grid: Grid, unit: int, upi: int) -> tuple[int, int, int] | None:
        per_dimension = self.limits.workgroups_per_dimension
        workgroup = self.limits.workgroup_size
        if grid is Grid.FLAT:
            units = -(-math.prod(self.it.sizes) // unit)
            return flat_grid(-(-units // (workgroup * upi)), per_dimension)
        return rows_grid(self.it.sizes, unit, row_group_of(grid), workgroup, upi, per_dimension)

    def tuned_units_per_invocation(self, grid: Grid, unit: int) -> int:
        """Units each invocation runs: one where nothing is amortised over several (a flat grid with a strided
        operand, whose units each find their own coordinates; a linear kernel whose unit is a whole output chunk,
        so the dispatch has the most workgroups; grouped rows, whose invocation stores to several rows); four where
        an invocation has work to amortise (a ROWS kernel's row offsets, the fill of an operation's table in
        workgroup memory, float32 -> uint8's one-word units), or as many as the operation asks for in linear
        kernels."""
        if grid.rows:
            return MANY_UNITS_PER_INVOCATION if grid is Grid.ROWS else 1
        if not all(self.linear.values()):
            return 1
        chunk_units = unit * self.output_type.size == 16
        asked = self.request.linear_units_per_invocation
        if chunk_units and self.operation.workgroup_file is None and asked is None:
            return 1
        return asked or MANY_UNITS_PER_INVOCATION

    # -- the output store -------------------------------------------------------------------------------------------

    def output_store(self, grid: Grid) -> OutputStore:
        """The store for a strided output on this grid, whose unit (kernel.unit_of) it decides: a stepped output's
        units are half as many elements where a unit is a whole chunk, so that its elements and those between span
        one chunk. The caller replaces it by UNITS where the output's units turn out whole."""
        out = self.position(Operand.OUT)
        size = self.output_type.size
        if size >= 4:
            return OutputStore.SCATTER_WORDS  # every element has words of its own
        base = self.windows[Operand.OUT].base_element
        if self.separate and self.output_binding is OutputBinding.CHUNKS and not self.linear[Operand.OUT] \
                and self.it.strides[out][-1] == 2:
            stepped = unit_of(self.input_type, self.output_type, grid, OutputStore.STEPPED)
            span_chunk = stepped * size * 2 == 16
            if units_aligned(self.it, out, base, stepped, (16 if span_chunk else 4) // size):
                return OutputStore.STEPPED
        unit = unit_of(self.input_type, self.output_type, grid, OutputStore.SCATTER_WORDS)
        if self.separate and units_own_their_words(self.it, out, base, size, unit):
            if self.output_binding is OutputBinding.CHUNKS and units_own_their_words(
                    self.it, out, base, size, unit, word_bytes=16):
                return OutputStore.SCATTER_CHUNKS
            return OutputStore.SCATTER_WORDS
        return OutputStore.SCATTER_ATOMIC

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


def flat_grid(groups: int, per_dimension: int) -> tuple[int, int, int]:
    """A grid of at least `groups` workgroups, 2-D where one dimension cannot hold them, with fewer than one row of
    surplus (the kernel skips it): a full first row would launch up to twice the work's workgroups."""
    rows = -(-groups // per_dimension)
    return (-(-groups // rows), rows, 1)


def rows_grid(sizes: tuple[int, ...], unit: int, row_group: int, workgroup_size: int, units_per_invocation: int,
              per_dimension: int) -> tuple[int, int, int] | None:
    """The grid of a ROWS kernel (wgsl/loop/rows.wgsl): x = blocks of one row of the innermost dimension, y and z =
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
