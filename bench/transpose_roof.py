"""What a transposing copy of 8, 16 or 32-bit elements can reach at all on this GPU: minimal tiled kernels, no
gpuops kernel.

    python bench/transpose_roof.py [--side 8192 ...] [--bits 8 16 32] [--tile-rows 32 64 128] [--iterations 20]

Each kernel writes the transpose of a side x side row-major matrix into a row-major output, the way the TILES grid
does (wgsl/tiles.wgsl) but for one layout only: a workgroup of 256 reads a tile of `tile-rows` input rows by 16
words (whole u32 words, consecutive invocations consecutive words) into workgroup memory, then each invocation
takes blocks of 32 / bits output rows by one output word: one word per input row out of the tile, transposed in
registers, stored as whole words. No operator, no index arithmetic beyond the one layout, no edges (the side is a
multiple of the tile). GB/s counts the bytes read and written, as `gpuops-bench targets` counts a layout case; the
plain copy of the same bytes runs beside them, and PyTorch's `out.copy_(x.t())` where it can.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

import gpuops
from gpuops import backends
from gpuops.bench.timing import CopyKernel, GpuTimer
from gpuops.bench.torch_compare import cuda_times, torch_cuda
from gpuops.device import record_pass

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, nargs="+", default=[8192], help="rows and columns (multiples of 128)")
    parser.add_argument("--bits", type=int, nargs="+", default=[8, 16, 32], choices=(8, 16, 32))
    parser.add_argument("--tile-rows", type=int, nargs="+", default=[32, 64, 128],
                        help="input rows per tile (a multiple of 32)")
    parser.add_argument("--iterations", type=int, default=20)
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
            ns = timer.run(record, iterations=args.iterations, warmup=2).gpu_median_ns
            print(f"transpose {bits:2d}-bit {side}x{side} tile {tile_rows:3d} rows x {TILE_WORDS_ACROSS} words "
                  f"exact={exact} {ns / 1000:8.1f} us {2 * size / ns:6.0f} GB/s", flush=True)
        copy = CopyKernel(device, size)
        ns = timer.run(copy.record, iterations=args.iterations, warmup=2).gpu_median_ns
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
