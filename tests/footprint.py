"""A CPU model of what a planned dispatch touches, derived from its plan alone.

`footprint_of(plans, ...)` walks every invocation of each DispatchPlan's grid as the kernel does (wgsl/loop/: the
grids, units, storage and stores) and records, byte by byte, what each store writes and which input elements each
result lane came from. It answers three questions that tests compare with the tensors' own element bytes:

- `values`: for every output byte a store gives a new value, the input elements it was computed from (absolute
  byte addresses of a's and b's element, and the byte's index within its element). A correct plan writes exactly
  the output's element bytes, each from its own element's inputs.
- `violations`: accesses outside an operand's bound view, and bytes that one invocation rewrites without atomics
  (a read-modify-write, or a whole-word store) while another invocation also writes them: a lost update.
- `reads`: every input byte read, per operand.

It models the addressing, not the arithmetic: the values themselves are the GPU tests' business. The flag word
of a kernel that reports NumPy's floating-point errors (Operation.error_flags) is not an operand: it is bound after
the loop's views, in a buffer of its own, and only ORed into atomically; the plan is the same with or without it
(tests/test_planner.py), and tests/test_canaries.py checks on the GPU that such kernels write the same bytes and
nothing of the flag's buffer but its word.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuops.kernel import Form, Grid, KernelKey, Operand, OutputBinding, OutputStore, Placement
from gpuops.plan import DispatchPlan


@dataclass
class Footprint:
    values: dict[int, tuple[int, int | None, int]] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    reads: dict[Operand, set[int]] = field(default_factory=dict)
    # byte -> (invocation, whether that invocation's access was non-atomic) for the dispatch being walked
    _writers: dict[int, tuple[tuple, bool]] = field(default_factory=dict)


def footprint_of(plans: tuple[DispatchPlan, ...], operands: tuple[Operand, ...],
                 buffer_sizes: dict[Operand, int]) -> Footprint:
    """The footprint of all the dispatches of one execution (each dispatch's races checked on its own: WebGPU
    runs a pass's dispatches one after the other)."""
    result = Footprint()
    for plan in plans:
        result._writers = {}
        _Walk(plan, operands, buffer_sizes, result).run()
    result._writers = {}
    return result


class _Walk:
    """One dispatch, invocation by invocation."""

    def __init__(self, plan: DispatchPlan, operands: tuple[Operand, ...], buffer_sizes: dict[Operand, int],
                 result: Footprint):
        self.plan = plan
        self.key: KernelKey = plan.key
        self.u = plan.uniforms
        self.operands = operands
        self.inputs = operands[:-1]
        self.result = result
        key = self.key
        self.in_size = key.operation.input_type.size
        self.out_size = key.operation.output_type.size
        self.wide = key.wide
        self.in_per_word = 1 if self.wide else 4 // self.in_size
        self.out_per_word = 1 if self.wide else 4 // self.out_size
        self.in_per_chunk = 2 if self.wide else 4 * self.in_per_word
        self.unit = key.unit
        self.rank = len(self.u.sizes)
        self.row_size = self.u.sizes[-1]
        for op in operands:
            window = plan.windows[op]
            if window.offset + window.size > buffer_sizes[op]:
                result.violations.append(f"{op.name}'s window [{window.offset}, {window.offset + window.size}) passes "
                                         f"the end of its {buffer_sizes[op]}-byte buffer")
        self.views = self._views()

    # -- views and accesses ------------------------------------------------------------------------------------

    def _views(self) -> dict[tuple[Operand, str], int]:
        """Bytes reachable through each operand's chunk and word views (0: none is bound, or a placeholder)."""
        key, views = self.key, {}
        for op, placement in zip(self.inputs, key.loop.placements):
            window = self.plan.windows[op]
            chunks = window.size - window.size % 16
            if placement is Placement.SEPARATE:
                views[op, "chunks"], views[op, "words"] = chunks, window.size
            elif placement is Placement.CHUNKS:
                views[op, "chunks"] = views[op, "words"] = chunks
            elif placement is Placement.SHARED:  # (its chunks are read as four words)
                views[op, "chunks"] = views[op, "words"] = window.size
        out = self.plan.windows[Operand.OUT]
        if key.loop.output_binding is OutputBinding.CHUNKS and not key.atomic_output:
            size = out.size - out.size % 16
        else:
            size = out.size
        views[Operand.OUT, "chunks"] = views[Operand.OUT, "words"] = size
        for op, placement in zip(self.inputs, key.loop.placements):
            if placement is Placement.VIA_OUTPUT:
                views[op, "chunks"] = views[op, "words"] = size
        return views

    def _reach(self, op: Operand, view: str, byte: int, length: int) -> None:
        limit = self.views.get((op, view), 0)
        if byte < 0 or byte + length > limit:
            self.result.violations.append(f"{op.name} {view} access [{byte}, {byte + length}) outside its "
                                          f"{limit}-byte view")

    def read(self, op: Operand, view: str, byte: int, length: int) -> None:
        self._reach(op, view, byte, length)
        base = self.plan.windows[op].offset
        self.result.reads.setdefault(op, set()).update(range(base + byte, base + byte + length))

    def write(self, invocation: tuple, byte: int, length: int, tags: dict[int, tuple], atomic: bool,
              view: str = "words") -> None:
        """A store of `length` bytes at `byte` (in the output's window): `tags` gives the new value's source for
        the bytes it changes; the others are rewritten with their old values (non-atomic) or left alone."""
        self._reach(Operand.OUT, view, byte, length)
        base = self.plan.windows[Operand.OUT].offset
        touched = range(byte, byte + length) if not atomic else tags.keys()
        writers = self.result._writers
        for b in touched:
            absolute = base + b
            nonatomic = not atomic
            seen = writers.get(absolute)
            if seen is not None and seen[0] != invocation and (seen[1] or nonatomic):
                self.result.violations.append(f"output byte {absolute} written by invocations {seen[0]} and "
                                              f"{invocation}, not atomically")
            if seen is None or nonatomic:
                writers[absolute] = (invocation, nonatomic or (seen is not None and seen[1]))
        for b, tag in tags.items():
            previous = self.result.values.get(base + b)
            if previous is not None and previous != tag:
                self.result.violations.append(f"output byte {base + b} given two different values")
            self.result.values[base + b] = tag

    # -- addressing (wgsl/loop/units.wgsl, rows.wgsl) -----------------------------------------------------------

    def strides(self, d: int) -> tuple[int, int, int]:
        return tuple(self.u.strides[op][d] for op in Operand)

    def element_offsets(self, index: int) -> tuple[list[int], bool]:
        """unit_start: each operand's element offset of element `index`, and whether its unit stays in a row."""
        offsets = list(self.u.bases)
        rest, inner = index, 0
        for d in range(self.rank - 1, 0, -1):
            size = self.u.sizes[d]
            rest, coordinate = divmod(rest, size)
            if d == self.rank - 1:
                inner = coordinate
            offsets = [o + coordinate * s for o, s in zip(offsets, self.strides(d))]
        if self.rank == 1:
            inner = rest
        offsets = [o + rest * s for o, s in zip(offsets, self.strides(0))]
        return offsets, inner + self.unit <= self.row_size

    def unit_element_offsets(self, first: int, j: int, first_offsets: list[int], in_row: bool) -> list[int]:
        if in_row:
            return [o + j * s for o, s in zip(first_offsets, self.strides(self.rank - 1))]
        return self.element_offsets(first + j)[0]

    def row_offsets(self, row: int) -> list[int]:
        offsets = list(self.u.bases)
        rest = row
        for d in range(self.rank - 1, 1, -1):
            size = self.u.sizes[d - 1]
            rest, coordinate = divmod(rest, size)
            offsets = [o + coordinate * s for o, s in zip(offsets, self.strides(d - 1))]
        return [o + rest * s for o, s in zip(offsets, self.strides(0))]

    def whole(self, op: Operand) -> bool:
        """units_whole: linear, or declared in rows of whole aligned units."""
        return self.key.loop.forms[op] in (Form.LINEAR, Form.CHUNK_ROWS)

    def unit_is_chunk(self, op: Operand, offsets: list[int], in_row: bool) -> bool:
        return in_row and self.u.strides[op][self.rank - 1] == 1 and offsets[op] % self.unit == 0

    def contiguous_start(self, op: Operand, first: int, offsets: list[int], in_row: bool) -> int | None:
        if self.key.loop.forms[op] is Form.LINEAR:
            return self.u.bases[op] + first
        if self.whole(op) or self.unit_is_chunk(op, offsets, in_row):
            return offsets[op]
        return None

    # -- loads: each lane of a unit's input is the element at the returned offset ----------------------------------

    def load_unit(self, op: Operand, first: int, offsets: list[int], in_row: bool) -> list[int]:
        """The element offsets the unit's UNIT lanes of `op` hold (what the kernel's loads give each lane)."""
        if self.wide:
            if self.whole(op) or self.unit_is_chunk(op, offsets, in_row):
                chunk = offsets[op] // 2
                self.read(op, "chunks", chunk * 16, 16)
                return [2 * chunk, 2 * chunk + 1]
            second = self.unit_element_offsets(first, 1, offsets, in_row)[op]
            for element in (offsets[op], second):
                self.read(op, "words", element * 8, 8)
            return [offsets[op], second]
        start = self.contiguous_start(op, first, offsets, in_row)
        lanes: list[int] = []
        chunks = max(1, self.unit // self.in_per_chunk)
        for c in range(chunks):
            if start is not None:
                if self.unit < self.in_per_chunk:  # two words
                    word = start // self.in_per_word
                    view = "words" if self.key.loop.placements[op] is not Placement.CHUNKS else "chunks"
                    self.read(op, view, word * 4, 8)
                    lanes += [word * self.in_per_word + j for j in range(self.unit)]
                else:
                    chunk = start // self.in_per_chunk + c
                    self.read(op, "chunks", chunk * 16, 16)
                    lanes += [chunk * self.in_per_chunk + j for j in range(self.in_per_chunk)]
            else:
                for j in range(min(self.unit, self.in_per_chunk)):
                    element = self.unit_element_offsets(first, c * self.in_per_chunk + j, offsets, in_row)[op]
                    view = "words" if self.key.loop.placements[op] is not Placement.CHUNKS else "chunks"
                    self.read(op, view, element // self.in_per_word * 4, 4)
                    lanes.append(element)
        return lanes[: self.unit]

    def tags(self, lanes: dict[Operand, list[int]], j: int) -> tuple:
        """The source of lane j's result: a's and b's element addresses (absolute bytes)."""
        def address(op):
            if op not in lanes:
                return None
            return self.plan.windows[op].offset + lanes[op][j] * self.in_size
        return address(Operand.A), address(Operand.B)

    def unit_results(self, first: int, offsets: list[int], in_row: bool) -> list[tuple]:
        lanes = {op: self.load_unit(op, first, offsets, in_row) for op in self.inputs}
        return [self.tags(lanes, j) for j in range(self.unit)]

    # -- stores ----------------------------------------------------------------------------------------------------

    def value_tags(self, byte: int, source: tuple) -> dict[int, tuple]:
        return {byte + i: (*source, i) for i in range(self.out_size)}

    def store_unit(self, invocation: tuple, first: int, offsets: list[int], in_row: bool,
                   results: list[tuple]) -> None:
        key, size = self.key, self.out_size
        out = Operand.OUT
        atomic = key.atomic_output
        if self.wide:
            if self.whole(out) or self.unit_is_chunk(out, offsets, in_row):
                chunk = offsets[out] // 2
                tags = {}
                for j in range(2):
                    tags.update(self.value_tags(chunk * 16 + 8 * j, results[j]))
                self.write(invocation, chunk * 16, 16, tags, atomic, "chunks")
                return
            second = self.unit_element_offsets(first, 1, offsets, in_row)[out]
            for element, source in zip((offsets[out], second), results):
                self.write(invocation, element * 8, 8, self.value_tags(element * 8, source), atomic)
            return
        if key.loop.output_store is OutputStore.STEPPED:
            word = offsets[out] // self.out_per_word
            if self.unit * size * 8 == 64:
                base, length = word // 4 * 16, 16
            else:
                base, length = word * 4, 8
            tags = {}
            for j in range(self.unit):
                tags.update(self.value_tags(base + 2 * j * size, results[j]))
            self.write(invocation, base, length, tags, atomic=False, view="chunks")
            return
        start = self.contiguous_start(out, first, offsets, in_row)
        if start is not None:
            if self.unit == 4 * self.out_per_word:
                base, length = start // self.unit * 16, 16
            else:
                base, length = start // self.out_per_word * 4, 4
            tags = {}
            for j in range(self.unit):
                tags.update(self.value_tags(base + j * size, results[j]))
            self.write(invocation, base, length, tags, atomic, "chunks" if length == 16 else "words")
            return
        # scatter: group consecutive elements by the word (or, owned, the chunk) they fall in
        group_bytes = 16 if key.loop.output_store is OutputStore.SCATTER_CHUNKS else 4
        groups: dict[int, dict[int, tuple]] = {}
        order: list[int] = []
        for j in range(self.unit):
            element = self.unit_element_offsets(first, j, offsets, in_row)[out]
            group = element * size // group_bytes
            if not order or order[-1] != group:
                order.append(group)
            groups.setdefault(group, {}).update(self.value_tags(element * size, results[j]))
        for group in order:
            tags = groups.pop(group, None)
            if tags is None:
                continue
            self.store_group(invocation, group * group_bytes, group_bytes, tags)

    def store_group(self, invocation: tuple, base: int, length: int, tags: dict[int, tuple]) -> None:
        """store_lanes (a word) or out_store_chunk_lanes (a chunk): a full word is a plain store; lanes are atomic
        where the output is, else a read-modify-write of the whole word or chunk."""
        if length == 4 and len(tags) == 4:
            self.write(invocation, base, 4, tags, self.key.atomic_output)
        elif length == 16 and not self.key.atomic_output:
            self.write(invocation, base, 16, tags, atomic=False, view="chunks")
        else:
            for word in range(base, base + length, 4):
                word_tags = {b: t for b, t in tags.items() if word <= b < word + 4}
                if word_tags:
                    self.write(invocation, word, 4, word_tags, self.key.atomic_output and len(word_tags) < 4)

    def run_elements(self, invocation: tuple, first: int, count: int) -> None:
        for j in range(count):
            offsets, _ = self.element_offsets(first + j)
            lanes = {}
            for op in self.inputs:
                element = offsets[op]
                if self.wide:
                    self.read(op, "words", element * 8, 8)
                else:
                    view = "words" if self.key.loop.placements[op] is not Placement.CHUNKS else "chunks"
                    self.read(op, view, element // self.in_per_word * 4, 4)
                lanes[op] = [element]
            source = self.tags(lanes, 0)
            element = offsets[Operand.OUT]
            byte = element * self.out_size
            if self.wide:
                self.write(invocation, byte, 8, self.value_tags(byte, source), self.key.atomic_output)
            else:
                self.store_group(invocation, byte // 4 * 4, 4, self.value_tags(byte, source))

    # -- the grids ---------------------------------------------------------------------------------------------

    def run(self) -> None:
        x, y, z = self.plan.grid_size
        for gz in range(z):
            for gy in range(y):
                for gx in range(x):
                    if self.key.loop.grid is Grid.TILES:
                        _TileWalk(self, (gx, gy, gz), (x, y, z)).run()
                        continue
                    for lane in range(self.key.loop.workgroup_size):
                        self.invocation((gx, gy, gz), (x, y, z), lane)

    def invocation(self, group: tuple, groups: tuple, lane: int) -> None:
        key = self.key
        invocation = (*group, lane)
        if key.loop.grid in (Grid.DIVISOR_ROWS, Grid.DIVISOR_ROWS_LOOPED):
            return self.divisor_rows(invocation, group, groups, lane)
        if key.loop.grid.rows:
            return self.row_units(invocation, group, groups, lane)
        block = group[1] * groups[0] + group[0]
        first_unit = block * key.loop.workgroup_size * key.loop.units_per_invocation + lane
        for i in range(key.loop.units_per_invocation):
            unit = first_unit + i * key.loop.workgroup_size
            if unit >= self.u.unit_count:
                return
            first = unit * self.unit
            if self.u.element_count - first >= self.unit:
                offsets, in_row = self.element_offsets(first)
                self.store_unit(invocation, first, offsets, in_row, self.unit_results(first, offsets, in_row))
            else:
                self.run_elements(invocation, first, self.u.element_count - first)

    def first_row(self, group: tuple, groups: tuple) -> int:
        return (group[2] * groups[1] + group[1]) * self.key.row_group

    def column(self, group: tuple, lane: int, i: int) -> int:
        key = self.key
        loop = key.loop
        return (group[0] * loop.workgroup_size * loop.units_per_invocation + lane + i * loop.workgroup_size) * self.unit

    def step(self, offsets: list[int], column: int) -> list[int]:
        return [o + column * s for o, s in zip(offsets, self.strides(self.rank - 1))]

    def row_units(self, invocation, group, groups, lane) -> None:
        first_row = self.first_row(group, groups)
        if first_row >= self.u.row_count:
            return
        offsets = self.row_offsets(first_row)
        for i in range(self.key.loop.units_per_invocation):
            column = self.column(group, lane, i)
            if column >= self.row_size:
                return
            first = first_row * self.row_size + column
            results = self.unit_results(first, self.step(offsets, column), True)
            for r in range(self.key.row_group):
                row = first_row + r
                if row >= self.u.row_count:
                    break
                self.store_unit(invocation, row * self.row_size + column,
                                self.step(self.row_offsets(row), column), True, results)

    def divisor_rows(self, invocation, group, groups, lane) -> None:
        first_row = self.first_row(group, groups)
        if first_row >= self.u.row_count:
            return
        looped = self.key.loop.grid is Grid.DIVISOR_ROWS_LOOPED
        last = self.u.row_count - 1
        if looped:
            rows = [first_row + r for r in range(min(self.key.row_group, self.u.row_count - first_row))]
        else:
            rows = [min(first_row + r, last) for r in range(self.key.row_group)]
        for i in range(self.key.loop.units_per_invocation):
            wanted = self.column(group, lane, i)
            if looped and wanted >= self.row_size:
                return
            column = wanted if looped else min(wanted, self.row_size - self.unit)
            starts = [self.step(self.row_offsets(row), column) for row in rows]
            firsts = [row * self.row_size + column for row in rows]
            b = self.load_unit(Operand.B, firsts[0], starts[0], True)
            dividends = [self.load_unit(Operand.A, f, s, True) for f, s in zip(firsts, starts)]
            if wanted < self.row_size:
                for f, s, a in zip(firsts, starts, dividends):
                    lanes = {Operand.A: a, Operand.B: b}
                    self.store_unit(invocation, f, s, True, [self.tags(lanes, j) for j in range(self.unit)])


class _TileWalk:
    """One workgroup of a TILES dispatch (wgsl/loop/grids/tiles*.wgsl): every invocation's loads into the tile, then,
    after the barrier, every invocation's groups. The tile's slots remember which input slot (word; 64-bit: element) was
    loaded into them, so that an element picked out of the tile is traced to the input element it really is."""

    def __init__(self, walk: _Walk, group: tuple, groups: tuple):
        self.walk, self.group, self.groups = walk, group, groups
        key = walk.key
        self.shape = key.tile
        self.tiled = [op for op in walk.inputs if key.loop.forms[op] is Form.TILED]
        self.slot_elements = self.shape.slot_elements
        self.out_per_slot = 1 if walk.wide else walk.out_per_word
        self.stride = self.shape.column_slots + 1
        self.tiles: dict[Operand, dict[int, int]] = {op: {} for op in self.tiled}

    def strides(self, d: int) -> tuple[int, int, int]:
        return self.walk.strides(d)

    def column(self, c: int) -> int:
        shape = self.shape
        return ((c % shape.unit) * shape.groups + c // shape.unit) * self.stride

    def run(self) -> None:
        """main: the workgroup's tile, then with tile_loops every groups-th along each grid dimension; the tile's
        slots are forgotten between tiles (the barrier between them)."""
        shape, u, rank = self.shape, self.walk.u, self.walk.rank
        width, depth = u.sizes[-1], u.sizes[-2]
        (gx, gy, gz), (nx, ny, nz) = self.group, self.groups
        tiles = [self.group]
        if self.walk.key.loop.tile_loops:
            tiles = [(x, y, z) for z in range(gz, u.plane_count, nz) for y in range(gy, -(-depth // shape.depth), ny)
                     for x in range(gx, -(-width // shape.width), nx)]
        for tile_column, tile_row, outer in tiles:
            first_column, first_row = tile_column * shape.width, tile_row * shape.depth
            origin = [o + first_column * q  # the tile's first row among all rows of the innermost dimension
                      for o, q in zip(self.walk.row_offsets(outer * depth + first_row), self.strides(rank - 1))]
            self.tiles = {op: {} for op in self.tiled}
            self.run_tile(origin, min(shape.width, width - first_column), min(shape.depth, depth - first_row))

    def run_tile(self, origin: list[int], columns: int, rows: int) -> None:
        walk, shape = self.walk, self.shape
        rank = walk.rank
        workgroup = walk.key.loop.workgroup_size
        # tiles.wgsl: fill_full_tiles reads such a tile untested (where the workgroup's invocations share it evenly)
        full = (columns == shape.width and rows == shape.depth
                and shape.width * shape.column_slots % workgroup == 0)
        for op in self.tiled:
            step = self.strides(rank - 1)[op]
            for lane in range(workgroup):
                for i in range(lane, shape.width * shape.column_slots, workgroup):
                    c = i // shape.column_slots
                    self.fill_slot(op, origin[op] + c * step, c, i % shape.column_slots, columns, rows, full)
                if self.slot_elements > 1:
                    for c in range(lane, shape.width, workgroup):
                        self.fill_slot(op, origin[op] + c * step, c, shape.column_slots, columns, rows)
        rows_at_once = workgroup // shape.groups
        down = self.strides(rank - 2)
        # tiles_narrow.wgsl: run_tile_work takes blocks of rows where every output row starts on a word
        blocks = (self.slot_elements > 1 and origin[Operand.OUT] % self.out_per_slot == 0
                  and down[Operand.OUT] % self.out_per_slot == 0)
        for lane in range(workgroup):
            invocation = (*self.group, lane)
            if lane // shape.groups >= rows_at_once:
                continue
            if blocks:
                se = self.slot_elements
                for r0 in range(lane // shape.groups * se, rows, rows_at_once * se):
                    for first in range(lane % shape.groups * shape.unit, columns, shape.groups * shape.unit):
                        self.check_block_slots(origin, r0, first, columns)
                        for row in range(r0, min(r0 + se, rows)):
                            offsets = [o + row * s for o, s in zip(origin, down)]
                            self.run_group(invocation, origin, offsets, row, first, columns)
                continue
            for row in range(lane // shape.groups, rows, rows_at_once):
                offsets = [o + row * s for o, s in zip(origin, down)]
                skew = offsets[Operand.OUT] % self.out_per_slot
                g = lane % shape.groups
                while g * shape.unit < skew + columns:
                    self.run_group(invocation, origin, offsets, row, g * shape.unit - skew, columns)
                    g += shape.groups

    def check_block_slots(self, origin: list[int], r0: int, first: int, columns: int) -> None:
        """column_word: the one or two slots a block reads of each present column lie among that column's slots
        (the elements the block's rows take from them are traced by `element`, as row by row)."""
        step = self.strides(self.walk.rank - 1)
        for op in self.tiled:
            for c in range(first, min(first + self.shape.unit, columns)):
                e = (origin[op] + c * step[op]) % self.slot_elements + r0
                last = e // self.slot_elements + (1 if e % self.slot_elements else 0)
                if last >= self.stride:
                    self.walk.result.violations.append(
                        f"{op.name}'s block at tile row {r0} reads slot {last} of column {c}, which has {self.stride}")

    def fill_slot(self, op: Operand, start: int, c: int, k: int, columns: int, rows: int, full: bool = False) -> None:
        """Tile slot k of column c: read where it holds one of the column's elements, or always in a full tile
        (the model then checks that those reads too stay inside what the input may read)."""
        first = start // self.slot_elements
        past = first + k > (start + rows - 1) // self.slot_elements
        if not full and (c >= columns or past):
            return
        if past:
            self.walk.result.violations.append(f"{op.name}'s full tile reads slot {first + k} past its column")
        walk = self.walk
        slot = self.column(c) + k
        if not 0 <= slot < self.shape.slots:
            walk.result.violations.append(f"{op.name}'s tile slot {slot} outside its {self.shape.slots} slots")
        if slot in self.tiles[op]:
            walk.result.violations.append(f"{op.name}'s tile slot {slot} filled twice")
        if walk.wide:
            walk.read(op, "words", (first + k) * 8, 8)
        else:
            view = "chunks" if walk.key.loop.placements[op] is Placement.CHUNKS else "words"
            walk.read(op, view, (first + k) * 4, 4)
        self.tiles[op][slot] = first + k

    def element(self, op: Operand, origin: list[int], offsets: list[int], row: int, c: int) -> int:
        """input_element: the element offset of the input's element at tile row `row`, column c."""
        walk = self.walk
        step = self.strides(walk.rank - 1)[op]
        if op in self.tiled:
            e = (origin[op] + c * step) % self.slot_elements + row
            slot = self.column(c) + e // self.slot_elements
            loaded = self.tiles[op].get(slot)
            if loaded is None:
                walk.result.violations.append(f"{op.name}'s tile slot {slot} read, never filled")
                return -1
            return loaded * self.slot_elements + e % self.slot_elements
        element = offsets[op] + c * step
        if walk.wide:
            walk.read(op, "words", element * 8, 8)
        else:
            view = "chunks" if walk.key.loop.placements[op] is Placement.CHUNKS else "words"
            walk.read(op, view, element // walk.in_per_word * 4, 4)
        return element

    def group_input(self, op: Operand, origin: list[int], offsets: list[int], row: int, first: int,
                    columns: int, whole: bool) -> list[int | None]:
        """The element offset each lane of the group holds (None: a missing lane)."""
        walk, unit = self.walk, self.shape.unit
        step = self.strides(walk.rank - 1)[op]
        start = offsets[op] + first * step
        if op not in self.tiled and not walk.wide and whole and step == 1 and start % walk.in_per_word == 0:
            view = "chunks" if walk.key.loop.placements[op] is Placement.CHUNKS else "words"
            word = start // walk.in_per_word
            for k in range(max(1, unit // walk.in_per_word)):
                walk.read(op, view, (word + k) * 4, 4)
            return [word * walk.in_per_word + j for j in range(unit)]
        return [self.element(op, origin, offsets, row, first + j) if 0 <= first + j < columns else None
                for j in range(unit)]

    def run_group(self, invocation: tuple, origin: list[int], offsets: list[int], row: int, first: int,
                  columns: int) -> None:
        walk, unit = self.walk, self.shape.unit
        whole = 0 <= first and first + unit <= columns
        lanes = {op: self.group_input(op, origin, offsets, row, first, columns, whole) for op in walk.inputs}
        present = [j for j in range(unit) if 0 <= first + j < columns]
        start = offsets[Operand.OUT] + first
        size = walk.out_size
        if walk.wide:
            byte = start * 8
            walk.write(invocation, byte, 8, walk.value_tags(byte, walk.tags(lanes, 0)), walk.key.atomic_output)
            return
        per_word = walk.out_per_word
        for k in range(max(1, unit // per_word)):
            index = start // per_word + k
            tags = {}
            for j in present:
                if j // per_word == k:
                    tags.update(walk.value_tags((start + j) * size, walk.tags(lanes, j)))
            if any(not index * 4 <= byte < index * 4 + 4 for byte in tags):
                walk.result.violations.append(f"a group's elements outside its output word {index}")
            if whole:
                if len(tags) != 4:
                    walk.result.violations.append(f"a whole group's word {index} holds other elements")
                walk.write(invocation, index * 4, 4, tags, walk.key.atomic_output)
            elif tags:
                walk.store_group(invocation, index * 4, 4, tags)


def expected_values(tensors, offsets: dict[Operand, int], operands: tuple[Operand, ...]
                    ) -> dict[int, tuple[int, int | None, int]]:
    """What a correct execution writes, from the tensors alone: for each output element byte (absolute address),
    a's and b's element addresses and the byte's index in its element."""
    by_operand = dict(zip(operands, tensors))
    out = by_operand[Operand.OUT]
    sizes = out.sizes
    result = {}
    for index in range(math.prod(sizes)):
        coordinates, rest = [], index
        for size in reversed(sizes):
            rest, c = divmod(rest, size)
            coordinates.append(c)
        coordinates.reverse()

        def address(op):
            if op not in by_operand:
                return None
            t = by_operand[op]
            return offsets[op] + sum(c * s for c, s in zip(coordinates, t.element_strides)) * t.data_type.size

        a, b, o = address(Operand.A), address(Operand.B), address(Operand.OUT)
        for i in range(out.data_type.size):
            result[o + i] = (a, b, i)
    return result
