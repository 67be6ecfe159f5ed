"""Shader text: which WGSL files make a kernel, and the small generated prelude that specialises them.

A kernel's text depends only on its KernelKey (a small immutable value, the pipeline cache key). Everything else
(sizes, strides, offsets, element counts) goes in the uniform buffer, so one pipeline serves every tensor shape
of the same rank and layout class. The prelude holds only aliases, constants and binding declarations; the shader
bodies live in wgsl/ as hand-written files.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .enums import DataType
from .operators import spec_by_name
from .plan import Form, Grid, KernelKey, Operand, OutputBinding, OutputStore, Placement, tile_shape

# wgsl/ beside the package in a source checkout; gpuops/wgsl/ in an installed wheel (see pyproject.toml).
_HERE = Path(__file__).resolve().parent
WGSL_DIR = next((p for p in (_HERE / "wgsl", _HERE.parent / "wgsl") if (p / "common.wgsl").is_file()),
                _HERE.parent / "wgsl")

# Element type -> (family file in wgsl/dtype/, libraries in wgsl/lib/ it needs): what every operator needs of the
# type (constants, predicates). An operator's own math for a type comes from its row (OperatorSpec.type_files).
DTYPE_SHADERS: dict[DataType, tuple[str, tuple[str, ...]]] = {
    DataType.FLOAT32: ("float32.wgsl", ("float_lanes.wgsl",)),
    DataType.FLOAT16: ("float16.wgsl", ("float_lanes.wgsl",)),
    DataType.INT32: ("sint.wgsl", ()),
    DataType.INT16: ("sint.wgsl", ()),
    DataType.INT8: ("sint.wgsl", ()),
    DataType.UINT32: ("uint.wgsl", ()),
    DataType.UINT16: ("uint.wgsl", ()),
    DataType.UINT8: ("uint.wgsl", ()),
    DataType.INT64: ("sint64.wgsl", ("u64.wgsl",)),
    DataType.UINT64: ("uint64.wgsl", ("u64.wgsl",)),
}

# Libraries in wgsl/lib/ a divider (KernelKey.divider) is built on.
DIVIDER_LIBRARIES: dict[str, tuple[str, ...]] = {"divide_by_estimate.wgsl": ("rem_by_estimate.wgsl",)}

READ = "read"
READ_WRITE = "read_write"


def bindings(key: KernelKey) -> list[tuple[int, str, str, Operand]]:
    """(binding, variable, access, operand) of every storage view. Only read-only views of a range are ever bound
    twice: WebGPU implementations may refuse two writable views of one buffer range (Dawn does)."""
    views = []
    for operand, placement in zip((Operand.A, Operand.B), key.placements):
        name = "ab"[operand]
        if placement is Placement.SEPARATE:
            views += [(len(views) + 1, f"{name}_chunks", READ, operand),
                      (len(views) + 2, f"{name}_words", READ, operand)]
        elif placement is Placement.CHUNKS:
            views.append((len(views) + 1, f"{name}_chunks", READ, operand))
        elif placement is Placement.SHARED:
            views.append((len(views) + 1, f"{name}_words", READ_WRITE, operand))
    views.append((len(views) + 1, output_view(key), READ_WRITE, Operand.OUT))
    return views


def error_flags_binding(key: KernelKey) -> int | None:
    """The binding of the error flags' word (KernelKey.error_flags), after every storage view; None without."""
    return len(bindings(key)) + 1 if key.error_flags else None


def output_view(key: KernelKey) -> str:
    """The output's one binding: 16-byte chunks when possible, else u32 words (atomic for SCATTER_ATOMIC)."""
    return "out_chunks" if key.output_binding is OutputBinding.CHUNKS and not key.atomic_output else "out_words"


def _bits(data_type: DataType) -> int:
    return data_type.size * 8


def _wgsl(value: bool) -> str:
    return "true" if value else "false"


def prelude(key: KernelKey) -> str:
    """The generated head of a kernel: the key's fields as a comment, then aliases, constants and bindings. No code
    paths: the hand-written files branch on these constants, and the compiler folds what a kernel does not use."""
    element = "vec2<u32>" if key.wide else "u32"
    forms = key.forms
    lines = [f"// gpuops kernel {key.operator} ({key.shader})"]
    lines += [f"//   {line}" for line in key.describe().splitlines()]
    lines += [
        f"alias InElem = {element};",
        f"alias OutElem = {element};",
        f"const IN_BITS: u32 = {_bits(key.input_type)}u;",
        f"const OUT_BITS: u32 = {_bits(key.output_type)}u;",
        f"const UNIT: u32 = {key.unit}u;",
        f"const RANK: u32 = {key.rank}u;",
        f"const A_LINEAR: bool = {_wgsl(key.linear(Operand.A))};",
        f"const B_LINEAR: bool = {_wgsl(key.linear(Operand.B))};",
        f"const OUT_LINEAR: bool = {_wgsl(key.linear(Operand.OUT))};",
        f"const A_CHUNK_ROWS: bool = {_wgsl(forms[Operand.A] is Form.CHUNK_ROWS)};",
        f"const B_CHUNK_ROWS: bool = {_wgsl(forms[Operand.B] is Form.CHUNK_ROWS)};",
        f"const OUT_CHUNK_ROWS: bool = {_wgsl(forms[Operand.OUT] is Form.CHUNK_ROWS)};",
        f"const OUT_CHUNKS_OWNED: bool = {_wgsl(key.output_store is OutputStore.SCATTER_CHUNKS)};",
        f"const OUT_STEP: u32 = {2 if key.output_store is OutputStore.STEPPED else 1}u;",
        f"const ROWS: bool = {_wgsl(key.grid.rows)};",
        f"const ROW_GROUP: u32 = {key.row_group}u;",
        f"const DIVISOR_ROWS: bool = {_wgsl(key.grid in (Grid.DIVISOR_ROWS, Grid.DIVISOR_ROWS_LOOPED))};",
        f"const DIVISOR_ROWS_LOOPED: bool = {_wgsl(key.grid is Grid.DIVISOR_ROWS_LOOPED)};",
        f"const F16_PACK_ROUNDS_TO_NEAREST: bool = {_wgsl(key.pack_rounds_to_nearest)};",
        f"const WORKGROUP_SIZE: u32 = {key.workgroup_size}u;",
        f"const UNITS_PER_INVOCATION: u32 = {key.units_per_invocation}u;",
    ]
    lines += [f"const {name}: u32 = {value}u;" for name, value in key.constants]
    if key.grid is Grid.TILES:
        lines += _tile_constants(key)
    for binding, name, access, _ in bindings(key):
        if name.endswith("_chunks"):
            array = "array<vec4<u32>>"
        else:
            array = "array<atomic<u32>>" if name == "out_words" and key.atomic_output else "array<u32>"
        lines.append(f"@group(0) @binding({binding}) var<storage, {access}> {name}: {array};")
    if key.error_flags:
        lines.append(f"@group(0) @binding({error_flags_binding(key)}) var<storage, read_write> error_flags: "
                     "array<atomic<u32>>;")
    lines += _input_accessors(key)
    return "\n".join(lines) + "\n"


def _tile_constants(key: KernelKey) -> list[str]:
    """A TILES kernel's tile (plan.tile_shape) and which inputs go through it; an input that does not has a
    one-slot placeholder (a workgroup array needs a constant size)."""
    shape = tile_shape(key.input_type, key.output_type, key.workgroup_size)
    tiled = [form is Form.TILED for form in key.forms[:2]]
    return [f"const TILE_GROUPS: u32 = {shape.groups}u;",
            f"const TILE_COLUMN_SLOTS: u32 = {shape.column_slots}u;",
            f"const A_TILED: bool = {_wgsl(tiled[0])};",
            f"const B_TILED: bool = {_wgsl(tiled[1])};",
            f"const TILE_LOOPS: bool = {_wgsl(key.tile_loops)};",
            f"const A_TILE_SLOTS: u32 = {shape.slots if tiled[0] else 1}u;",
            f"const B_TILE_SLOTS: u32 = {shape.slots if tiled[1] else 1}u;"]


def _input_accessors(key: KernelKey) -> list[str]:
    """in_word / in_chunk: one expression per input, chosen by where the input is bound."""
    view = output_view(key)
    out_word = {"out_chunks": "out_chunks[({i}) / 4u][({i}) % 4u]",
                "out_words": "atomicLoad(&out_words[{i}])" if key.atomic_output else "out_words[{i}]"}[view]
    words, chunks = [], []
    for name, placement in zip("ab", key.placements):
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


def shader_files(key: KernelKey) -> list[str]:
    """The hand-written files a kernel is made of, relative to wgsl/, in order."""
    family, libraries = DTYPE_SHADERS[key.input_type]
    if key.wide:
        files = ["common.wgsl", "wide.wgsl"]
    else:
        files = ["common.wgsl", "narrow.wgsl", "units/" + key.unit_file]
    if key.atomic_output:
        files.append("out_atomic.wgsl")
    else:
        files.append("out_chunks.wgsl" if output_view(key) == "out_chunks" else "out_plain.wgsl")
    if files[-1] != "out_chunks.wgsl" and not key.wide:
        files.append("out_word_lanes.wgsl")  # narrow.wgsl's multi-word lane stores, word by word
    files.append("unary.wgsl" if key.input_count == 1 else "binary.wgsl")
    files += [f"lib/{name}" for name in libraries]
    if key.divider is not None:
        files += [f"lib/{name}" for name in DIVIDER_LIBRARIES.get(key.divider, ()) + (key.divider,)]
    if key.signed_remainder is not None:
        files.append(f"lib/{key.signed_remainder}")
    # Only the 8-bit division table keeps anything in workgroup memory (and prepares it).
    if key.divider != "divide_by_reciprocals.wgsl":
        files.append("lib/no_workgroup_memory.wgsl")
    files.append("lib/error_flags.wgsl" if key.error_flags else "lib/no_error_flags.wgsl")
    files.append(f"dtype/{family}")
    files += spec_by_name(key.operator).type_files(key.input_type)
    files.append(f"ops/{key.shader}")
    if key.grid is Grid.TILES:
        files += ["tiles_wide.wgsl" if key.wide else "tiles_narrow.wgsl", "tiles.wgsl"]
    return list(dict.fromkeys(files))  # a library two of these need is included once


@functools.lru_cache(maxsize=None)
def _read(relative: str) -> str:
    return (WGSL_DIR / relative).read_text()


# common.wgsl's entry point, which a TILES kernel replaces by wgsl/tiles.wgsl's: its text is taken up to there, so
# that no other kernel's text changes.
COMMON_ENTRY_POINT = "@compute @workgroup_size(WORKGROUP_SIZE)\nfn main("


def _file_text(key: KernelKey, relative: str) -> str:
    text = _read(relative)
    if relative == "common.wgsl" and key.grid is Grid.TILES:
        text = text[: text.index(COMMON_ENTRY_POINT)]
    return text


def shader_source(key: KernelKey) -> str:
    parts = [prelude(key)]
    for relative in shader_files(key):
        parts.append(f"// ---- {relative}\n{_file_text(key, relative)}")
    return "\n".join(parts)


DUMP_ENV = "GPUOPS_DUMP_SHADERS"  # a folder: every shader compiled from then on is written there, key in its head


def shader_name(key: KernelKey) -> str:
    """A file name for the kernel: its operator, types and a digest of its whole key."""
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
    operator = key.operator.removeprefix("ELEMENT_WISE_").lower()
    return f"{operator}-{key.input_type.name.lower()}-{key.output_type.name.lower()}-{digest}.wgsl"


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
