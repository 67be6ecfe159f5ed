"""Shader text: a kernel's WGSL from its key alone, as a generated prelude and the hand-written files the key names.

A kernel's text depends only on its KernelKey (gpuops/kernel.py: an Operation and a Loop). Everything else (sizes,
strides, offsets, element counts) goes in the uniform buffer, so one pipeline serves every tensor shape of the same
rank and layout class. The prelude declares what the key gives (aliases, constants, bindings, and each input's
accessors for where it is bound); the code is in wgsl/, one file per part of a kernel, and a kernel holds the files
of its own grid, storage and output store only: the loop's from `loop_files`, the operation's from the Operation.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .enums import DataType
from .kernel import Form, Grid, KernelKey, Operand, OutputBinding, OutputStore, Placement, unit_shape

# wgsl/ beside the package in a source checkout; gpuops/wgsl/ in an installed wheel (see pyproject.toml).
_HERE = Path(__file__).resolve().parent
WGSL_DIR = next((p for p in (_HERE / "wgsl", _HERE.parent / "wgsl") if (p / "loop" / "params.wgsl").is_file()),
                _HERE.parent / "wgsl")

READ = "read"
READ_WRITE = "read_write"

# The work of each grid (wgsl/loop/grids/), beside the files every kernel of its storage ("narrow" or "wide") has.
_GRID_FILES: dict[Grid, tuple[str, ...]] = {
    Grid.FLAT: ("grids/flat.wgsl",),
    Grid.ROWS: ("rows.wgsl", "grids/rows.wgsl"),
    Grid.REPLICATED_ROWS: ("rows.wgsl", "grids/replicated_rows.wgsl"),
    Grid.DIVISOR_ROWS: ("rows.wgsl", "divisor_{storage}.wgsl", "grids/divisor_rows.wgsl"),
    Grid.DIVISOR_ROWS_LOOPED: ("rows.wgsl", "divisor_{storage}.wgsl", "grids/divisor_rows_looped.wgsl"),
    Grid.TILES: ("grids/tiles_{storage}.wgsl", "grids/tiles.wgsl"),
}
# Grids that prepare an operation's workgroup memory inside their work, after their first loads: their work
# without and with the preparation. The others prepare it first of all (loop/main_prepared.wgsl).
_PREPARING_GRIDS: dict[Grid, tuple[str, str]] = {
    Grid.DIVISOR_ROWS: ("grids/divisor_rows_plain.wgsl", "grids/divisor_rows_prepared.wgsl"),
    Grid.TILES: ("grids/tiles_plain.wgsl", "grids/tiles_prepared.wgsl"),
}
# How each output store puts a unit in place (wgsl/loop/stores/), per storage width.
_NARROW_STORES: dict[OutputStore, tuple[str, ...]] = {
    OutputStore.UNITS: ("stores/whole.wgsl", "stores/units.wgsl"),
    OutputStore.STEPPED: ("out/chunk_lanes.wgsl", "stores/stepped.wgsl"),
    OutputStore.SCATTER_WORDS: ("stores/whole.wgsl", "stores/scatter.wgsl", "stores/scatter_words.wgsl"),
    OutputStore.SCATTER_ATOMIC: ("stores/whole.wgsl", "stores/scatter.wgsl", "stores/scatter_words.wgsl"),
    OutputStore.SCATTER_CHUNKS: ("out/chunk_lanes.wgsl", "stores/whole.wgsl", "stores/scatter.wgsl",
                                 "stores/scatter_chunks.wgsl"),
}
_WIDE_STORES: dict[OutputStore, tuple[str, ...]] = {
    OutputStore.UNITS: ("stores/wide_units.wgsl",),
    OutputStore.SCATTER_WORDS: ("stores/wide_scatter.wgsl",),
}


# The entry point (wgsl/loop/), by whether it prepares the operation's workgroup memory before the grid's work and
# whether it reports what the operation noted after it (Operation.error_flags: lib/error_flags.wgsl).
_ENTRY_POINTS: dict[tuple[bool, bool], str] = {
    (False, False): "main.wgsl",
    (True, False): "main_prepared.wgsl",
    (False, True): "main_reporting.wgsl",
    (True, True): "main_prepared_reporting.wgsl",
}
# The flag word of a kernel that reports errors (Operation.error_flags), bound after the loop's views.
ERROR_FLAGS = "error_flags"


def loop_files(key: KernelKey) -> list[str]:
    """The loop's files, relative to wgsl/loop/: its storage, its output view and store, its grid's work and the
    entry point."""
    loop = key.loop
    storage = "wide" if key.wide else "narrow"
    view = "atomic" if key.atomic_output else output_view(key).removeprefix("out_")
    files = ["params.wgsl", f"{storage}.wgsl", f"out/{view}.wgsl"]
    if loop.grid is not Grid.TILES:
        files += ["units.wgsl", f"{storage}_units.wgsl"]
        if not key.wide:
            files.append("units/" + unit_shape(key.operation.input_type, key.operation.output_type)[0])
        files += (_WIDE_STORES if key.wide else _NARROW_STORES)[loop.output_store]
    files += [name.format(storage=storage) for name in _GRID_FILES[loop.grid]]
    prepared = key.operation.workgroup_file is not None
    if loop.grid in _PREPARING_GRIDS:
        files.append(_PREPARING_GRIDS[loop.grid][prepared])
        prepared = False
    files.append(_ENTRY_POINTS[prepared, key.operation.error_flags])
    return files


def shader_files(key: KernelKey) -> list[str]:
    """Every hand-written file a kernel is made of, relative to wgsl/, in order: the loop's, then the operation's
    (its adapter for one or two inputs, its files, its workgroup library, the report of what it noted, its op
    file)."""
    operation = key.operation
    files = [f"loop/{name}" for name in loop_files(key)]
    files.append("ops/unary.wgsl" if key.input_count == 1 else "ops/binary.wgsl")
    files += operation.files
    if operation.workgroup_file is not None:
        files.append(operation.workgroup_file)
    if operation.error_flags:
        files.append("lib/error_flags.wgsl")
    files.append(f"ops/{operation.op_file}")
    return files


def bindings(key: KernelKey) -> list[tuple[int, str, str, Operand | None]]:
    """(binding, variable, access, operand) of every storage view: the loop's views of the operands, then the
    operation's flag word (ERROR_FLAGS, operand None) where it reports errors. Only read-only views of a range are
    ever bound twice: WebGPU implementations may refuse two writable views of one buffer range (Dawn does)."""
    views = []
    for operand, placement in zip((Operand.A, Operand.B), key.loop.placements):
        name = "ab"[operand]
        if placement is Placement.SEPARATE:
            views += [(len(views) + 1, f"{name}_chunks", READ, operand),
                      (len(views) + 2, f"{name}_words", READ, operand)]
        elif placement is Placement.CHUNKS:
            views.append((len(views) + 1, f"{name}_chunks", READ, operand))
        elif placement is Placement.SHARED:
            views.append((len(views) + 1, f"{name}_words", READ_WRITE, operand))
    views.append((len(views) + 1, output_view(key), READ_WRITE, Operand.OUT))
    if key.operation.error_flags:
        views.append((len(views) + 1, ERROR_FLAGS, READ_WRITE, None))
    return views


def output_view(key: KernelKey) -> str:
    """The output's one binding: 16-byte chunks (out_chunks) or u32 words (out_words; atomic for SCATTER_ATOMIC)."""
    return "out_chunks" if key.loop.output_binding is OutputBinding.CHUNKS else "out_words"


def _bits(data_type: DataType) -> int:
    return data_type.size * 8


def _wgsl(value: bool | int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value}u"


def prelude(key: KernelKey) -> str:
    """The generated head of a kernel: the key's fields as a comment, then aliases, constants and bindings. No code
    paths: the hand-written files branch on these constants, and the compiler folds what a kernel does not use."""
    operation, loop = key.operation, key.loop
    element = "vec2<u32>" if key.wide else "u32"
    forms = loop.forms
    lines = [f"// gpuops kernel {key.label}"]
    lines += [f"//   {line}" for line in key.describe().splitlines()]
    constants = {
        "IN_BITS": _bits(operation.input_type), "OUT_BITS": _bits(operation.output_type), "UNIT": key.unit,
        "RANK": loop.rank, "WORKGROUP_SIZE": loop.workgroup_size,
    }
    if loop.grid is Grid.TILES:
        constants.update(_tile_constants(key))
    else:
        constants.update({"UNITS_PER_INVOCATION": loop.units_per_invocation,
                          "A_LINEAR": key.linear(Operand.A), "B_LINEAR": key.linear(Operand.B),
                          "OUT_LINEAR": key.linear(Operand.OUT)})
        constants.update({f"{name}_CHUNK_ROWS": forms[operand] is Form.CHUNK_ROWS
                          for name, operand in (("A", Operand.A), ("B", Operand.B), ("OUT", Operand.OUT))})
    if loop.grid.rows:
        constants["ROW_GROUP"] = key.row_group
    constants.update(operation.constants)
    lines += [f"alias InElem = {element};", f"alias OutElem = {element};"]
    lines += [f"const {name}: {'bool' if isinstance(value, bool) else 'u32'} = {_wgsl(value)};"
              for name, value in constants.items()]
    for binding, name, access, _ in bindings(key):
        if name.endswith("_chunks"):
            array = "array<vec4<u32>>"
        elif name == ERROR_FLAGS or (name == "out_words" and key.atomic_output):
            array = "array<atomic<u32>>"
        else:
            array = "array<u32>"
        lines.append(f"@group(0) @binding({binding}) var<storage, {access}> {name}: {array};")
    lines += _input_accessors(key)
    return "\n".join(lines) + "\n"


def _tile_constants(key: KernelKey) -> dict[str, int | bool]:
    """A TILES kernel's tile (kernel.tile_shape) and which inputs go through it; an input that does not has a
    one-slot placeholder (a workgroup array needs a constant size). MISSING_LANES_ONE: the lanes past the tile's
    columns hold one, not zero, in a kernel that reports errors (wgsl/loop/grids/tiles_narrow.wgsl)."""
    shape = key.tile
    tiled = [form is Form.TILED for form in key.loop.forms[:2]]
    return {"TILE_GROUPS": shape.groups, "TILE_COLUMN_SLOTS": shape.column_slots, "A_TILED": tiled[0],
            "B_TILED": tiled[1], "TILE_LOOPS": key.loop.tile_loops, "A_TILE_SLOTS": shape.slots if tiled[0] else 1,
            "B_TILE_SLOTS": shape.slots if tiled[1] else 1, "MISSING_LANES_ONE": key.operation.error_flags}


def _input_accessors(key: KernelKey) -> list[str]:
    """in_word / in_chunk: one expression per input, chosen by where the input is bound."""
    view = output_view(key)
    out_word = {"out_chunks": "out_chunks[({i}) / 4u][({i}) % 4u]",
                "out_words": "atomicLoad(&out_words[{i}])" if key.atomic_output else "out_words[{i}]"}[view]
    words, chunks = [], []
    for name, placement in zip("ab", key.loop.placements):
        word = {Placement.SEPARATE: f"{name}_words[{{i}}]", Placement.SHARED: f"{name}_words[{{i}}]",
                Placement.VIA_OUTPUT: out_word, Placement.CHUNKS: f"{name}_chunks[({{i}}) / 4u][({{i}}) % 4u]"}[placement]
        words.append(word.format(i="index"))
        if placement in (Placement.SEPARATE, Placement.CHUNKS):
            chunks.append(f"{name}_chunks[index]")
        elif placement is Placement.VIA_OUTPUT and view == "out_chunks":
            chunks.append("out_chunks[index]")
        else:  # no chunk view of a writable range: four word reads
            chunks.append("vec4<u32>(" + ", ".join(word.format(i=f"4u * index + {k}u") for k in range(4)) + ")")
    lines = []
    for function, kind, bodies in (("in_word", "u32", words), ("in_chunk", "vec4<u32>", chunks)):
        lines.append(f"fn {function}(operand: u32, index: u32) -> {kind} {{")
        if len(bodies) == 2:
            lines.append(f"    if (operand == OPERAND_B) {{ return {bodies[1]}; }}")
        lines += [f"    return {bodies[0]};", "}"]
    return lines


@functools.lru_cache(maxsize=None)
def wgsl_file(relative: str) -> str:
    """The text of a file under wgsl/."""
    return (WGSL_DIR / relative).read_text()


def shader_source(key: KernelKey) -> str:
    parts = [prelude(key)]
    for relative in shader_files(key):
        parts.append(f"// ---- {relative}\n{wgsl_file(relative)}")
    return "\n".join(parts)


DUMP_ENV = "GPUOPS_DUMP_SHADERS"  # a folder: every shader compiled from then on is written there, key in its head


def shader_name(key: KernelKey) -> str:
    """A file name for the kernel: its operation, types and a digest of its whole key."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
    operation = key.operation
    return f"{operation.name}-{operation.input_type.name.lower()}-{operation.output_type.name.lower()}-{digest}.wgsl"


def dump_shader(key: KernelKey, source: str) -> Path | None:
    """Writes the shader to $GPUOPS_DUMP_SHADERS, where that names a folder (created if missing)."""
    folder = os.environ.get(DUMP_ENV)
    if not folder:
        return None
    path = Path(folder) / shader_name(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return path


@dataclass(frozen=True)
class Kernel:
    """What one dispatch would run (CompiledOperator.kernels): its key, its grid of workgroups and its shader."""

    key: KernelKey
    grid_size: tuple[int, int, int]
    source: str

    @property
    def name(self) -> str:
        return shader_name(self.key)
