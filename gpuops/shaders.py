"""Shader text: which WGSL files make a kernel, and the small generated prelude that specialises them.

A kernel's text depends only on its KernelKey (a small immutable value, the pipeline cache key). Everything else
(sizes, strides, offsets, element counts) goes in the uniform buffer, so one pipeline serves every tensor shape
of the same rank and layout class. The prelude holds only aliases, constants and binding declarations; the shader
bodies live in wgsl/ as hand-written files.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from .enums import DataType
from .operators import OPERATORS

# wgsl/ beside the package in a source checkout; gpuops/wgsl/ in an installed wheel (see pyproject.toml).
_HERE = Path(__file__).resolve().parent
WGSL_DIR = next((p for p in (_HERE / "wgsl", _HERE.parent / "wgsl") if (p / "common.wgsl").is_file()),
                _HERE.parent / "wgsl")

WORKGROUP_SIZE = 256
UNITS_PER_INVOCATION = 4  # see tuned_units_per_invocation
# ROWS kernels whose inputs are the same on every row compute a unit once and store it to this many rows, one unit
# per invocation (so that it stores as many units as an invocation of other kernels); see tuned_units_per_invocation.
REPLICATED_ROW_GROUP = 4
REPLICATED_UNITS_PER_INVOCATION = 1
# ROWS kernels whose divisor b is the same on every row divide this many rows at once (KernelKey.divisor_rows);
# wgsl/binary.wgsl's run_divisor_rows is written out for four.
DIVISOR_ROW_GROUP = 4

# Element type -> (family file in wgsl/dtype/, libraries in wgsl/lib/ it needs).
DTYPE_SHADERS: dict[DataType, tuple[str, tuple[str, ...]]] = {
    DataType.FLOAT32: ("float32.wgsl", ("f32_bits.wgsl", "rem_by_estimate.wgsl", "float_lanes.wgsl")),
    DataType.FLOAT16: ("float16.wgsl", ("f16_bits.wgsl", "float_lanes.wgsl")),
    DataType.INT32: ("sint.wgsl", ()),
    DataType.INT16: ("sint.wgsl", ()),
    DataType.INT8: ("sint.wgsl", ()),
    DataType.UINT32: ("uint.wgsl", ()),
    DataType.UINT16: ("uint.wgsl", ()),
    DataType.UINT8: ("uint.wgsl", ()),
    DataType.INT64: ("sint64.wgsl", ("u64.wgsl",)),
    DataType.UINT64: ("uint64.wgsl", ("u64.wgsl",)),
}

# Output width / input width -> (how narrow.wgsl turns a unit's input words into output, the unit's output bytes,
# and in replicated rows). A unit is one output chunk, so that a warp's stores are contiguous; for float32 -> uint8
# it is one input chunk, so that its loads are (four input chunks per invocation measured slower on an H200, and
# for strided outputs and gathered inputs too), but in replicated rows (KernelKey.row_group > 1), whose units are
# computed once and stored to several rows, a whole output chunk again: on an H200 a broadcast IS_NAN float32 ->
# uint8 ran 2002-2017 -> 2761-2790 GB/s (Dawn 3152 -> 3415) this way.
UNIT_SHAPES: dict[float, tuple[str, int, int]] = {
    1: ("same_width.wgsl", 16, 16),
    0.5: ("half_width_out.wgsl", 16, 16),
    0.25: ("quarter_width_out.wgsl", 4, 16),
    2: ("double_width_out.wgsl", 16, 16),
}

# Signed types whose remainders are computed on float32 values, signs and all (lib/signed_by_estimate.wgsl); the
# other signed types divide magnitudes (lib/signed_by_magnitudes.wgsl). See KernelKey.signed_remainder. On an H200
# int16 MODULUS_FLOOR ran 3304 -> 4075 GB/s this way (truncate within 2%); int8 lost (floor 2881 -> 2679, truncate
# 3347 -> 2178: four reciprocals per word on the slow pipe), so it keeps its table of reciprocals.
SIGNED_BY_ESTIMATE = frozenset({DataType.INT16})
# Operators whose int8 remainders come from the table of signed reciprocals (lib/signed_by_reciprocals.wgsl; the others
# divide magnitudes). On an H200 int8 MODULUS_FLOOR ran 3470 -> 3827 GB/s this way (Dawn 3437 -> 3668) and
# MODULUS_TRUNCATE at first 3% slower (3727 -> 3618, Dawn 3641 -> 3511); since its lanes are extracted by shifts
# (twenty-first session) MODULUS_TRUNCATE gains too: broadcast 3084-3102 -> 3149-3159 (Dawn 3277 -> 3344), packed
# 4194 -> 4228.
SIGNED_BY_RECIPROCALS = frozenset({"modulus_floor.wgsl", "modulus_truncate.wgsl"})

# Types whose modulus, where the divisor b alone is the same on every row, divides DIVISOR_ROW_GROUP rows at once
# (KernelKey.divisor_rows): b loaded once, and the rows' dividends all loaded before any is divided. Such a kernel
# reads only a from memory (b comes from the cache), and one unit's load at a time left too few loads in flight to
# cover the memory's latency. On an H200 (twentieth session, docs/performance.md) broadcast int8 MODULUS_FLOOR ran
# 2710 -> 3005-3057 GB/s this way (Dawn 2825 -> 3344-3414), MODULUS_TRUNCATE 2710 -> 2946-2962 (Dawn 2825 ->
# 3213-3277), int64 3893 -> 4110-4129 and 4090 -> 4120-4135 (Dawn 3972 -> 4175, 4122 -> 4175-4201). float16's
# kernel, long already, lost with its rows written out (floor 2889-2913 -> 2539-2555), and loops over its rows
# instead (LOOPED_DIVISOR_ROW_TYPES, below). Divisors prepared once for
# the rows (a table's entries, reciprocals) made no difference beside the loads.
DIVISOR_ROW_TYPES = frozenset({DataType.INT8, DataType.INT64, DataType.FLOAT16})
# Of those, the types whose rows are divided one after the other in a loop, b's unit loaded once before it
# (DIVISOR_ROWS_LOOPED in wgsl/binary.wgsl): float16, whose kernel is long and bound by its instructions, not by
# loads in flight, and whose lane-by-lane fallback made four written-out rows slower (above). On an H100 broadcast
# float16 modulus ran 0.4-1.7% faster in groups of four looped rows than one row per unit (2645-2658 -> 2668-2679
# GB/s on wgpu-native, Dawn 2777-2801 -> 2825); groups of 8 and 16 rows were slower (2622-2628, 2386-2450). The
# rest of DIVISOR_ROW_TYPES have their rows written out, their dividends loaded first.
LOOPED_DIVISOR_ROW_TYPES = frozenset({DataType.FLOAT16})
LOOPED_DIVISOR_ROW_GROUP = 4

# Kernels that convert inexact float32 results to float16 (lib/f16_bits.wgsl: MODULUS_FLOOR's r + b) and so depend
# on how pack2x16float rounds (KernelKey.pack_rounds_to_nearest).
PACK_ROUNDING_KERNELS = frozenset({("modulus_floor.wgsl", DataType.FLOAT16)})

# Libraries in wgsl/lib/ a divider (KernelKey.divider) is built on.
DIVIDER_LIBRARIES: dict[str, tuple[str, ...]] = {"divide_by_estimate.wgsl": ("rem_by_estimate.wgsl",)}

# Shaders that divide integer magnitudes (dtype/sint.wgsl, dtype/uint.wgsl call magnitude_rem).
DIVIDING_SHADERS = frozenset(spec.shader for spec in OPERATORS if spec.divides)

READ = "read"
READ_WRITE = "read_write"

# Where an input is bound (KernelKey.input_placement):
SEPARATE = "separate"  # its own buffer region: read-only views as 16-byte chunks and as u32 words
CHUNKS = "chunks"  # its own region of whole chunks, read in chunks: one read-only chunk view, words read through it
VIA_OUTPUT = "via_output"  # the output's buffer, near it (or in place): read through the output's one binding
SHARED = "shared"  # the output's buffer, too far to share its binding: its own read-write u32 view


@dataclass(frozen=True)
class KernelKey:
    """Everything a kernel's shader text depends on."""

    shader: str  # file in wgsl/ops/
    input_type: DataType
    output_type: DataType
    rank: int  # dimensions of the coalesced iteration space, 1..8
    linear: tuple[bool, ...]  # per operand slot (a, b, out): elements at base + position, word aligned
    input_placement: tuple[str, ...]  # per input: SEPARATE, CHUNKS, VIA_OUTPUT or SHARED
    chunk_rows: tuple[bool, ...] = (False, False, False)  # per slot: not linear, but every unit whole in its chunks
    output_chunks: bool = True  # the output's window is whole 16-byte chunks: bind it as vec4<u32>
    output_words_owned: bool = False  # a strided 8/16-bit output none of whose words holds two units' elements
    output_chunks_owned: bool = False  # ... nor any of its 16-byte chunks, bound as chunks: read and written whole
    out_step: int = 1  # OUT_STEP: 2 for an 8/16-bit output of innermost stride 2, aligned (device._stepped_output)
    rows: bool = False  # the grid walks rows of the innermost dimension, each whole units (see device._rows_grid)
    row_group: int = 1  # ROWS: rows per invocation; above 1 when every input is the same on every row (replicated)
    # or where divisor_rows holds (device._row_group)
    divisor_rows: bool = False  # ROWS, row_group > 1: b alone is the same on every row, loaded once for the
    # group's rows, whose dividends are loaded before any is divided (DIVISOR_ROWS in wgsl/binary.wgsl)
    constants: tuple[tuple[str, int], ...] = ()  # operator constants, e.g. (("INFINITY_MODE", 1),)
    # float16 MODULUS_FLOOR: the device's pack2x16float rounds an inexact float32 value to nearest, ties to even
    # (Device.pack_rounds_to_nearest), so results need no rounding of their own first (lib/f16_bits.wgsl)
    pack_rounds_to_nearest: bool = False
    workgroup_size: int = WORKGROUP_SIZE
    units_per_invocation: int = UNITS_PER_INVOCATION

    @property
    def input_count(self) -> int:
        return len(self.input_placement)

    @property
    def wide(self) -> bool:
        """64-bit element types: every operand has the same 8-byte type."""
        return self.input_type.size == 8

    @property
    def unit(self) -> int:
        """Elements per unit of work: one 16-byte chunk of output (one word for float32 -> uint8 but in replicated
        rows), which is one chunk of input too when both types have the same width (see UNIT_SHAPES); half as many
        for a stepped output (out_step 2), so that the unit's elements and those between them span one chunk."""
        if self.wide:
            return 2
        _, unit_bytes, replicated_bytes = self.unit_shape
        unit_bytes = replicated_bytes if self.row_group > 1 and not self.divisor_rows else unit_bytes
        if self.out_step > 1 and unit_bytes == 16:
            unit_bytes //= self.out_step  # a stepped output: the unit's elements span one chunk
        return unit_bytes // self.output_type.size

    @property
    def unit_shape(self) -> tuple[str, int, int]:
        """UNIT_SHAPES' row for this kernel's ratio of widths (8/16/32-bit types)."""
        return UNIT_SHAPES[self.output_type.size / self.input_type.size]

    @property
    def reads_linear_words(self) -> bool:
        """Its units read a linear input as words (units/double_width_out.wgsl): such an input keeps its word view.
        Other units read linear inputs in chunks, and words only where they gather strided elements."""
        return not self.wide and self.unit_shape[0] == "double_width_out.wgsl"

    @property
    def atomic_output(self) -> bool:
        """Sub-word outputs with strides: lanes of one word may be written by different invocations. (Where each
        word belongs to one unit, its invocation changes its lanes with plain reads and writes.)"""
        return self.output_type.size < 4 and not self.linear[2] and not self.output_words_owned

    @property
    def divides(self) -> bool:
        """The operator divides (the modulus operators): integer types then need a divider."""
        return self.shader in DIVIDING_SHADERS

    @property
    def signed_remainder(self) -> str | None:
        """The file in wgsl/lib/ that defines signed_lanes_rem for the signed integer family (dtype/sint.wgsl):
        float32 values for the types of SIGNED_BY_ESTIMATE that divide, the signed table of reciprocals for 8-bit
        types (int8) in the operators of SIGNED_BY_RECIPROCALS, magnitudes otherwise."""
        if DTYPE_SHADERS[self.input_type][0] != "sint.wgsl":
            return None
        if self.input_type in SIGNED_BY_ESTIMATE and self.divides:
            return "signed_by_estimate.wgsl"
        if self.reciprocal_table and self.shader in SIGNED_BY_RECIPROCALS:
            return "signed_by_reciprocals.wgsl"
        return "signed_by_magnitudes.wgsl"

    @property
    def takes_divisor_rows(self) -> bool:
        """A modulus of DIVISOR_ROW_TYPES: where b alone is the same on every row, its ROWS kernel divides groups
        of rows at once (divisor_rows)."""
        return self.divides and self.input_type in DIVISOR_ROW_TYPES

    @property
    def divisor_rows_looped(self) -> bool:
        """DIVISOR_ROWS whose rows run in a loop (LOOPED_DIVISOR_ROW_TYPES), not written out four times."""
        return self.divisor_rows and self.input_type in LOOPED_DIVISOR_ROW_TYPES

    @property
    def reciprocal_table(self) -> bool:
        """8-bit division by a table of reciprocals in workgroup memory (of magnitudes, and signed for int8 where
        SIGNED_BY_RECIPROCALS says), filled once per workgroup.
        Other kernels divide by a float estimate or `%` and have no workgroup memory (zero-initialising it would
        cost every workgroup)."""
        return self.input_type.size == 1 and self.divides

    @property
    def divider(self) -> str:
        """The file in wgsl/lib/ that defines magnitude_rem and prepare_workgroup: 8-bit types by a table of
        reciprocals, uint16 by a float estimate of the quotient, 32-bit types (and int16, which divides no
        magnitudes) by `%`."""
        if self.reciprocal_table:
            return "divide_by_reciprocals.wgsl"
        if self.input_type == DataType.UINT16 and self.divides:
            return "divide_by_estimate.wgsl"
        return "divide_plain.wgsl"

    def bindings(self) -> list[tuple[int, str, str, int]]:
        """(binding, variable, access, operand) of every storage view. Only read-only views of a range are ever
        bound twice: WebGPU implementations may refuse two writable views of one buffer range (Dawn does)."""
        views = []
        for operand, (name, placement) in enumerate(zip("ab", self.input_placement)):
            if placement == SEPARATE:
                views += [(len(views) + 1, f"{name}_chunks", READ, operand),
                          (len(views) + 2, f"{name}_words", READ, operand)]
            elif placement == CHUNKS:
                views.append((len(views) + 1, f"{name}_chunks", READ, operand))
            elif placement == SHARED:
                views.append((len(views) + 1, f"{name}_words", READ_WRITE, operand))
        views.append((len(views) + 1, self.output_view, READ_WRITE, self.input_count))
        return views

    @property
    def output_view(self) -> str:
        """The output's one binding: 16-byte chunks when possible, else u32 words (atomic for strided 8/16-bit
        outputs)."""
        return "out_chunks" if self.output_chunks and not self.atomic_output else "out_words"


# Linear kernels of whole-chunk units that still run fastest at UNITS_PER_INVOCATION units per invocation: float32
# MODULUS_FLOOR, the most instructions per element, 4117-4126 -> 4189-4200 GB/s on wgpu-native and 4201 -> 4274
# on Dawn (H200, eighteenth session; at two 4180 and 4274; its truncated sibling loses 2% at four, so keeps one).
LINEAR_MANY_UNITS = frozenset({("modulus_floor.wgsl", DataType.FLOAT32)})


def divisor_row_group(data_type: DataType) -> int:
    """Rows per group of a DIVISOR_ROWS kernel of this type."""
    return LOOPED_DIVISOR_ROW_GROUP if data_type in LOOPED_DIVISOR_ROW_TYPES else DIVISOR_ROW_GROUP


def tuned_units_per_invocation(key: KernelKey) -> int:
    """Units each invocation runs, as measured on an H200 (docs/performance.md): one for a linear kernel whose unit
    stores a whole output chunk, so the dispatch has the most workgroups (8/16-bit types gained 3-5%; int16 division,
    since its quotient is exact from one rounding, 1-2% against two or four); one for a flat-grid kernel with a
    strided operand, whose units each find their own coordinates, so nothing is amortised (strided outputs 2-17%
    faster than at four); four where an invocation has work to amortise over its units: a ROWS kernel's row offsets
    (broadcast modulus 1-6% slower at one; 2 and 8 measured no better), the 8-bit division table's fill
    (lib/divide_by_reciprocals.wgsl), float32 -> uint8's one-word unit and LINEAR_MANY_UNITS in linear kernels; one
    for replicated rows, whose invocation stores its unit to REPLICATED_ROW_GROUP rows."""
    if key.row_group > 1:
        return REPLICATED_UNITS_PER_INVOCATION
    if key.rows:
        return UNITS_PER_INVOCATION
    if not all(key.linear):
        return 1
    chunk_units = key.unit * key.output_type.size == 16
    if chunk_units and not key.reciprocal_table and (key.shader, key.input_type) not in LINEAR_MANY_UNITS:
        return 1
    return UNITS_PER_INVOCATION


def _bits(data_type: DataType) -> int:
    return data_type.size * 8


def prelude(key: KernelKey) -> str:
    """The generated head of a kernel: aliases, constants, bindings. No code paths."""
    element = "vec2<u32>" if key.wide else "u32"
    lines = [
        f"// gpuops kernel {key.shader}: {key.input_type.name} -> {key.output_type.name}, rank {key.rank}, "
        f"linear a/b/out {key.linear}",
        f"alias InElem = {element};",
        f"alias OutElem = {element};",
        f"const IN_BITS: u32 = {_bits(key.input_type)}u;",
        f"const OUT_BITS: u32 = {_bits(key.output_type)}u;",
        f"const UNIT: u32 = {key.unit}u;",
        f"const RANK: u32 = {key.rank}u;",
        f"const A_LINEAR: bool = {str(key.linear[0]).lower()};",
        f"const B_LINEAR: bool = {str(key.linear[1]).lower()};",
        f"const OUT_LINEAR: bool = {str(key.linear[2]).lower()};",
        f"const A_CHUNK_ROWS: bool = {str(key.chunk_rows[0]).lower()};",
        f"const B_CHUNK_ROWS: bool = {str(key.chunk_rows[1]).lower()};",
        f"const OUT_CHUNK_ROWS: bool = {str(key.chunk_rows[2]).lower()};",
        f"const OUT_CHUNKS_OWNED: bool = {str(key.output_chunks_owned).lower()};",
        f"const OUT_STEP: u32 = {key.out_step}u;",
        f"const ROWS: bool = {str(key.rows).lower()};",
        f"const ROW_GROUP: u32 = {key.row_group}u;",
        f"const DIVISOR_ROWS: bool = {str(key.divisor_rows).lower()};",
        f"const DIVISOR_ROWS_LOOPED: bool = {str(key.divisor_rows_looped).lower()};",
        f"const F16_PACK_ROUNDS_TO_NEAREST: bool = {str(key.pack_rounds_to_nearest).lower()};",
        f"const WORKGROUP_SIZE: u32 = {key.workgroup_size}u;",
        f"const UNITS_PER_INVOCATION: u32 = {key.units_per_invocation}u;",
    ]
    lines += [f"const {name}: u32 = {value}u;" for name, value in key.constants]
    for binding, name, access, _ in key.bindings():
        if name.endswith("_chunks"):
            array = "array<vec4<u32>>"
        else:
            array = "array<atomic<u32>>" if name == "out_words" and key.atomic_output else "array<u32>"
        lines.append(f"@group(0) @binding({binding}) var<storage, {access}> {name}: {array};")
    lines += _input_accessors(key)
    return "\n".join(lines) + "\n"


def _input_accessors(key: KernelKey) -> list[str]:
    """in_word / in_chunk: one expression per input, chosen by where the input is bound."""
    out_word = {"out_chunks": "out_chunks[({i}) / 4u][({i}) % 4u]",
                "out_words": "atomicLoad(&out_words[{i}])" if key.atomic_output else "out_words[{i}]"}[key.output_view]
    words, chunks = [], []
    for name, placement in zip("ab", key.input_placement):
        word = {SEPARATE: f"{name}_words[{{i}}]", SHARED: f"{name}_words[{{i}}]", VIA_OUTPUT: out_word,
                CHUNKS: f"{name}_chunks[({{i}}) / 4u][({{i}}) % 4u]"}[placement]
        words.append(word.format(i="index"))
        if placement in (SEPARATE, CHUNKS):
            chunks.append(f"{name}_chunks[index]")
        elif placement == VIA_OUTPUT and key.output_view == "out_chunks":
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
    output_file = {"out_chunks": "out_chunks.wgsl", "out_words": "out_plain.wgsl"}[key.output_view]
    if key.wide:
        files = ["common.wgsl", "wide.wgsl"]
    else:
        files = ["common.wgsl", "narrow.wgsl", "units/" + key.unit_shape[0]]
    files.append("out_atomic.wgsl" if key.atomic_output else output_file)
    if files[-1] != "out_chunks.wgsl" and not key.wide:
        files.append("out_word_lanes.wgsl")  # narrow.wgsl's multi-word lane stores, word by word
    files.append("unary.wgsl" if key.input_count == 1 else "binary.wgsl")
    # (dict.fromkeys: a library two of these need is included once)
    signed = key.signed_remainder
    needed = dict.fromkeys(libraries + DIVIDER_LIBRARIES.get(key.divider, ()) + (key.divider,)
                           + ((signed,) if signed else ()))
    files += [f"lib/{name}" for name in needed]
    files += [f"dtype/{family}", f"ops/{key.shader}"]
    return files


@functools.lru_cache(maxsize=None)
def _read(relative: str) -> str:
    return (WGSL_DIR / relative).read_text()


def shader_source(key: KernelKey) -> str:
    parts = [prelude(key)]
    for relative in shader_files(key):
        parts.append(f"// ---- {relative}\n{_read(relative)}")
    return "\n".join(parts)
