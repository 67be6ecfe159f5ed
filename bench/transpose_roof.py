"""What a transposing kernel of 8, 16 or 32-bit elements can reach at all on this GPU: minimal tiled kernels, the
copy's and (--operators) the operators', beside gpuops' own.

    python bench/transpose_roof.py [--side 8192 ...] [--bits 8 16 32] [--tile-rows 32 64 128] [--iterations 20]
                                   [--repeats 1] [--operators sign modulus_floor modulus_truncate]

Each kernel writes the transpose of a side x side row-major matrix into a row-major output, the way the TILES grid does
(wgsl/loop/grids/tiles.wgsl) but for one layout only: a workgroup of 256 reads a tile of `tile-rows` input rows by 16
words (whole u32 words, consecutive invocations consecutive words) into workgroup memory, then each invocation takes
blocks of 32 / bits output rows by one output word: one word per input row out of the tile, transposed in registers,
stored as whole words. No operator, no index arithmetic beyond the one layout, no edges (the side is a multiple of the
tile). GB/s counts the bytes read and written, as `gpuops-bench targets` counts a layout case; the plain copy of the
same bytes runs beside them, and PyTorch's `out.copy_(x.t())` where it can.

--operators adds, per operator (`sign`, `modulus_floor`, `modulus_truncate`) and width (int8, float16, float32 for
8, 16 and 32 bits), on the goals' data (`gpuops-bench targets`), what a transposing kernel of that operator can
reach: the same minimal design with every input transposed (each input's tile filled, then each output word
computed from its inputs' words by gpuops' own exact arithmetic for the type, taken from gpuops' kernel text), and
beside it in the same run gpuops' own kernel on the same buffers and PyTorch writing the same row-major `out=`. The
distance from the transposing copy to the minimal operator kernel is what the operator's arithmetic and extra tiles
cost; the distance from there to gpuops is what its general kernel (any rank, strides, offsets, edges) costs.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

import gpuops
from gpuops import backends
from gpuops.arrays import DeviceArray
from gpuops.bench.reference import compare, expected
from gpuops.bench.targets import goal_values
from gpuops.bench.timing import CopyKernel, GpuTimer
from gpuops.bench.torch_compare import cuda_times, torch_cuda
from gpuops.device import record_pass
from gpuops.enums import DataType
from gpuops.operators import spec_by_name
from gpuops.shaders import prelude, shader_files, wgsl_file

WORKGROUP = 256
TILE_WORDS_ACROSS = 16  # words of each input row in a tile

# A tile's input row r lies at ((r % PER_WORD) * (TILE_ROWS / PER_WORD) + r / PER_WORD) * PITCH: the rows one block
# reads (PER_WORD consecutive ones) are PITCH x (TILE_ROWS / PER_WORD) apart, and consecutive invocations' blocks
# read rows PITCH (odd) apart: no two invocations of a warp read the same memory bank.
SHADER = """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
const BITS: u32 = {bits}u;
const PER_WORD: u32 = 32u / BITS;
const MASK: u32 = 0xffffffffu >> (32u - BITS);
const SIDE_WORDS: u32 = {side_words}u;  // words of a row, input and output
const TILE_ROWS: u32 = {tile_rows}u;
const ACROSS: u32 = {across}u;
const PITCH: u32 = ACROSS + 1u;
const BLOCK_ROWS: u32 = TILE_ROWS / PER_WORD;  // output words of a tile's output row
var<workgroup> tile: array<u32, TILE_ROWS * PITCH>;

fn place(r: u32) -> u32 {{
    return ((r % PER_WORD) * BLOCK_ROWS + r / PER_WORD) * PITCH;
}}

@compute @workgroup_size({workgroup})
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {{
    let t = group.y * groups.x + group.x;
    let tiles_across = SIDE_WORDS / ACROSS;
    if (t >= tiles_across * (SIDE_WORDS * PER_WORD / TILE_ROWS)) {{
        return;  // the grid's surplus (two dimensions of at most 65535 workgroups)
    }}
    let row0 = (t / tiles_across) * TILE_ROWS;
    let word0 = (t % tiles_across) * ACROSS;
    for (var i = lane; i < TILE_ROWS * ACROSS; i += {workgroup}u) {{
        let r = i / ACROSS;
        let w = i % ACROSS;
        tile[place(r) + w] = src[(row0 + r) * SIDE_WORDS + word0 + w];
    }}
    workgroupBarrier();
    for (var b = lane; b < ACROSS * BLOCK_ROWS; b += {workgroup}u) {{
        let j = b % BLOCK_ROWS;  // the output word along its row: input rows PER_WORD * j ..
        let w = b / BLOCK_ROWS;  // the input word: output rows PER_WORD * (word0 + w) ..
{block}
    }}
}}
"""


def block_body(bits: int) -> str:
    """A block's body, unrolled (no dynamically indexed vector): read one word of each of its input rows, store
    each output row's word, lane k of output word i being lane i of input word k."""
    per_word = 32 // bits
    lines = [f"        let c{i} = tile[({i}u * BLOCK_ROWS + j) * PITCH + w];" for i in range(per_word)]
    for i in range(per_word):
        lanes = " | ".join(f"(((c{k} >> {i * bits}u) & MASK) << {k * bits}u)" for k in range(per_word))
        lines.append(f"        dst[((word0 + w) * PER_WORD + {i}u) * SIDE_WORDS + row0 / PER_WORD + j] = {lanes};")
    return "\n".join(lines)


# The operator kernel: the same tiles and blocks, one tile per input, appended to gpuops' own kernel text for the
# operator and type (its prelude, storage and operation, without the grid's work and entry point) so that each
# output word is gpuops' exact word_results of the inputs' words (wgsl/loop/narrow.wgsl). Its bindings are its own;
# gpuops' declarations it does not use are not bound.
OPERATOR_SHADER = """
@group(0) @binding(20) var<storage, read> roof_a: array<u32>;
{b_binding}
@group(0) @binding(22) var<storage, read_write> roof_out: array<u32>;
const ROOF_PER_WORD: u32 = {per_word}u;
const ROOF_SIDE_WORDS: u32 = {side_words}u;
const ROOF_TILE_ROWS: u32 = {tile_rows}u;
const ROOF_ACROSS: u32 = {across}u;
const ROOF_PITCH: u32 = ROOF_ACROSS + 1u;
const ROOF_BLOCK_ROWS: u32 = ROOF_TILE_ROWS / ROOF_PER_WORD;
var<workgroup> roof_tile_a: array<u32, ROOF_TILE_ROWS * ROOF_PITCH>;
{b_tile}

fn roof_place(r: u32) -> u32 {{
    return ((r % ROOF_PER_WORD) * ROOF_BLOCK_ROWS + r / ROOF_PER_WORD) * ROOF_PITCH;
}}

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {{
    let t = group.y * groups.x + group.x;
    let tiles_across = ROOF_SIDE_WORDS / ROOF_ACROSS;
    if (t >= tiles_across * (ROOF_SIDE_WORDS * ROOF_PER_WORD / ROOF_TILE_ROWS)) {{
        return;  // the grid's surplus (two dimensions of at most 65535 workgroups)
    }}
    let row0 = (t / tiles_across) * ROOF_TILE_ROWS;
    let word0 = (t % tiles_across) * ROOF_ACROSS;
    for (var i = lane; i < ROOF_TILE_ROWS * ROOF_ACROSS; i += WORKGROUP_SIZE) {{
        let r = i / ROOF_ACROSS;
        let w = i % ROOF_ACROSS;
        let at = (row0 + r) * ROOF_SIDE_WORDS + word0 + w;
        roof_tile_a[roof_place(r) + w] = roof_a[at];
{fill_b}
    }}
{prepare}    workgroupBarrier();
    for (var b = lane; b < ROOF_ACROSS * ROOF_BLOCK_ROWS; b += WORKGROUP_SIZE) {{
        let j = b % ROOF_BLOCK_ROWS;
        let w = b / ROOF_BLOCK_ROWS;
{block}
    }}
}}
"""


def operator_block_body(bits: int, inputs: int) -> str:
    """The operator kernel's block: each input row's word out of each tile, transposed in registers into the
    output rows' words (as block_body), and each output word the operator's word_results of them."""
    per_word = 32 // bits
    mask = (1 << bits) - 1
    lines = []
    for name in "ab"[:inputs]:
        lines += [f"        let {name}{i} = roof_tile_{name}[({i}u * ROOF_BLOCK_ROWS + j) * ROOF_PITCH + w];"
                  for i in range(per_word)]
    for i in range(per_word):
        words = []
        for name in "ab"[:inputs]:
            words.append(" | ".join(f"((({name}{k} >> {i * bits}u) & {mask}u) << {k * bits}u)"
                                    for k in range(per_word)))
        if inputs == 1:
            words.append("0u")
        target = f"((word0 + w) * ROOF_PER_WORD + {i}u) * ROOF_SIDE_WORDS + row0 / ROOF_PER_WORD + j"
        lines.append(f"        roof_out[{target}] = word_results({words[0]}, {words[1]}).x;")
    return "\n".join(lines)


OPERATOR_TYPES = {8: "int8", 16: "float16", 32: "float32"}
OPERATORS = {"sign": "ELEMENT_WISE_SIGN", "modulus_floor": "ELEMENT_WISE_MODULUS_FLOOR",
             "modulus_truncate": "ELEMENT_WISE_MODULUS_TRUNCATE"}
TORCH_OPERATORS = {"sign": "sign", "modulus_floor": "remainder", "modulus_truncate": "fmod"}


def operator_rows(device: gpuops.Device, timer: GpuTimer, operator: str, bits: int, side: int,
                  tile_rows: list[int], args: argparse.Namespace, rng: np.random.Generator, torch) -> None:
    """Print the minimal operator kernel's rows, gpuops' own kernel's and PyTorch's, all on the same inputs."""
    spec = spec_by_name(OPERATORS[operator])
    data_type = DataType[OPERATOR_TYPES[bits].upper()]
    dtype = data_type.numpy_dtype
    inputs = [goal_values(data_type, side * side, rng, field).reshape(side, side) for field in spec.inputs]
    want = expected(spec.name, None, data_type, *(x.T for x in inputs))
    wd = device.wgpu_device
    usage = device.wgpu.BufferUsage.STORAGE | device.wgpu.BufferUsage.COPY_SRC | device.wgpu.BufferUsage.COPY_DST
    sources = [wd.create_buffer_with_data(data=x, usage=usage) for x in inputs]
    dst = wd.create_buffer(size=want.nbytes, usage=usage)
    moved = want.nbytes * (len(inputs) + 1)
    label = f"{operator} {OPERATOR_TYPES[bits]} {side}x{side}"

    # gpuops' kernel: every input transposed (element strides (1, side)) into a row-major output.
    arrays = [DeviceArray.from_buffer(device, b, dtype, (side, side), (1, side)) for b in sources]
    arrays.append(DeviceArray.from_buffer(device, dst, dtype, (side, side)))
    compiled = device.compile(spec.desc_type(**{f: x.desc for f, x in zip(spec.tensor_fields, arrays)}))
    bindings = {f: x.binding for f, x in zip(spec.tensor_fields, arrays)}
    (kernel,) = compiled.kernels(bindings)
    table = compiled.bind(bindings)

    def run_gpuops(encoder, writes):
        compiled.record(encoder, table, timestamp_writes=writes)

    def read() -> np.ndarray:
        return np.frombuffer(wd.queue.read_buffer(dst), dtype).reshape(side, side)

    def measure(name: str, record) -> None:
        wd.queue.write_buffer(dst, 0, np.zeros(want.nbytes, np.uint8))
        encoder = wd.create_command_encoder()
        record(encoder, None)
        wd.queue.submit([encoder.finish()])
        exact = compare(read(), want) is None
        ns = timer.run(record, iterations=args.iterations, warmup=2, repeats=args.repeats).gpu_median_ns
        print(f"{label} {name:34s} exact={exact} {ns / 1000:8.1f} us {moved / ns:6.0f} GB/s", flush=True)

    key = kernel.key
    head = "\n".join([prelude(key)] + [wgsl_file(f) for f in shader_files(key)
                                       if not f.startswith(("loop/grids/", "loop/main"))])
    # The operation's table in workgroup memory, where it keeps one (the 8-bit division's).
    prepare = "    prepare_workgroup(lane);\n" if key.operation.workgroup_file is not None else ""
    for rows in tile_rows:
        binary = len(inputs) == 2
        code = head + OPERATOR_SHADER.format(
            per_word=32 // bits, side_words=side * bits // 32, tile_rows=rows, across=TILE_WORDS_ACROSS,
            b_binding="@group(0) @binding(21) var<storage, read> roof_b: array<u32>;" if binary else "",
            b_tile="var<workgroup> roof_tile_b: array<u32, ROOF_TILE_ROWS * ROOF_PITCH>;" if binary else "",
            fill_b="        roof_tile_b[roof_place(r) + w] = roof_b[at];" if binary else "",
            prepare=prepare, block=operator_block_body(bits, len(inputs)))
        module = backends.create_shader_module(device.wgpu, wd, "operator transpose", code, device.runtime_checks)
        pipeline = wd.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        entries = [{"binding": 20 + i, "resource": {"buffer": b}} for i, b in enumerate(sources)]
        entries.append({"binding": 22, "resource": {"buffer": dst}})
        bind_group = wd.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
        tiles = (side // rows) * (side * bits // 32 // TILE_WORDS_ACROSS)
        grid = (min(tiles, 65535), -(-tiles // 65535), 1)
        measure(f"minimal, tile {rows:3d} rows x {TILE_WORDS_ACROSS} words",
                lambda encoder, writes, p=pipeline, g=bind_group, grid=grid: record_pass(encoder, writes, p, g, grid))
    measure(f"gpuops ({key.loop.grid.name} grid)", run_gpuops)
    for b in (*sources, dst):
        b.destroy()
    if torch is not None:
        torch_inputs = [torch.from_numpy(x).cuda() for x in inputs]
        y = torch.empty((side, side), dtype=torch_inputs[0].dtype, device="cuda")
        op = getattr(torch, TORCH_OPERATORS[operator])
        times, _ = cuda_times(torch, lambda: op(*(x.t() for x in torch_inputs), out=y), args.iterations, 3)
        print(f"{label} {'torch ' + TORCH_OPERATORS[operator] + '(x.t(), ..., out=y)':34s} "
              f"{moved / statistics.median(times):6.0f} GB/s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, nargs="+", default=[8192], help="rows and columns (multiples of 128)")
    parser.add_argument("--bits", type=int, nargs="+", default=[8, 16, 32], choices=(8, 16, 32))
    parser.add_argument("--tile-rows", type=int, nargs="+", default=[32, 64, 128],
                        help="input rows per tile (a multiple of 32)")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=1,
                        help="passes per timed span (Dawn's timestamps are coarse: 40 there)")
    parser.add_argument("--operators", nargs="*", default=[], choices=sorted(OPERATORS),
                        help="also the operators' minimal transposing kernels, gpuops' and PyTorch's")
    args = parser.parse_args(argv)
    torch = torch_cuda()
    if torch is not None:
        torch.ones(1, device="cuda")  # hold a CUDA context: without it the driver runs Vulkan compute slower
    device = gpuops.Device()
    print("device", device.adapter_name, backends.backend_name(device.wgpu), flush=True)
    wd = device.wgpu_device
    usage = device.wgpu.BufferUsage.STORAGE | device.wgpu.BufferUsage.COPY_SRC | device.wgpu.BufferUsage.COPY_DST
    timer = GpuTimer(device)
    rng = np.random.default_rng(1)
    for side, bits in [(side, bits) for side in args.side for bits in args.bits]:
        dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
        matrix = rng.integers(0, 2**bits, (side, side), dtype=dtype)
        size = matrix.nbytes
        src = wd.create_buffer_with_data(data=matrix, usage=usage)
        dst = wd.create_buffer(size=size, usage=usage)
        want = np.ascontiguousarray(matrix.T)
        side_words = side * bits // 32
        for tile_rows in args.tile_rows:
            code = SHADER.format(bits=bits, side_words=side_words, tile_rows=tile_rows, across=TILE_WORDS_ACROSS,
                                 workgroup=WORKGROUP, block=block_body(bits))
            module = backends.create_shader_module(device.wgpu, wd, "transpose", code, device.runtime_checks)
            pipeline = wd.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
            bind_group = wd.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": src}}, {"binding": 1, "resource": {"buffer": dst}}])
            tiles = (side // tile_rows) * (side_words // TILE_WORDS_ACROSS)
            grid = (min(tiles, 65535), -(-tiles // 65535), 1)

            def record(encoder, writes, pipeline=pipeline, bind_group=bind_group, grid=grid):
                record_pass(encoder, writes, pipeline, bind_group, grid)

            wd.queue.write_buffer(dst, 0, np.zeros(size, np.uint8))
            encoder = wd.create_command_encoder()
            record(encoder, None)
            wd.queue.submit([encoder.finish()])
            got = np.frombuffer(wd.queue.read_buffer(dst), dtype).reshape(side, side)
            exact = np.array_equal(got, want)
            ns = timer.run(record, iterations=args.iterations, warmup=2, repeats=args.repeats).gpu_median_ns
            print(f"transpose {bits:2d}-bit {side}x{side} tile {tile_rows:3d} rows x {TILE_WORDS_ACROSS} words "
                  f"exact={exact} {ns / 1000:8.1f} us {2 * size / ns:6.0f} GB/s", flush=True)
        copy = CopyKernel(device, size)
        ns = timer.run(copy.record, iterations=args.iterations, warmup=2, repeats=args.repeats).gpu_median_ns
        print(f"copy of the same bytes ({size >> 20} MiB): {copy.bytes_moved / ns:6.0f} GB/s", flush=True)
        copy.release()
        src.destroy()
        dst.destroy()
        if torch is not None:
            torch_dtype = {8: torch.uint8, 16: torch.float16, 32: torch.float32}[bits]
            x = torch.zeros((side, side), dtype=torch_dtype, device="cuda")
            y = torch.empty((side, side), dtype=torch_dtype, device="cuda")
            times, _ = cuda_times(torch, lambda x=x, y=y: y.copy_(x.t()), args.iterations, 3)
            ns = statistics.median(times)
            print(f"torch y.copy_(x.t()) {bits}-bit: {2 * size / ns:6.0f} GB/s", flush=True)
        for operator in args.operators:
            operator_rows(device, timer, operator, bits, side, args.tile_rows, args, rng, torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
