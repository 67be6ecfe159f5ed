"""What a stride-2 8/16-bit output can reach at all on this GPU: minimal hand-written kernels, no gpuops kernel.

    python bench/strided_roof.py [--log2 25] [--iterations 20] [--only PREFIX] [--units 1 4]

Each kernel writes N results (an identity, or IS_NAN for float32 -> uint8) into every second element of an output of
2N elements from a contiguous input, keeping the elements between: their words are read, merged and written back,
as no WebGPU store is narrower than 32 bits. The 'noread' kernels skip the read (and zero the bytes between, which
is wrong) to show what the read costs. 'counted' is bandwidth as `gpuops-bench targets` counts it (input + the N
output elements); 'DRAM-min' counts the bytes the memory must move at least (input, and the output's span read and
written). PyTorch's `y[::2].copy_(x)` and plain copies of the packed tensors' bytes run beside them. The figures
behind docs/performance.md's strided-output argument (a unary same-width operator moves 2.5 times the bytes it is
counted for) are in bench/results/h100-h200-wgpu-native-layout-roofs.txt (its H200 part).
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

WG = 256

HEAD = """
@group(0) @binding(0) var<storage, read> src: array<{src}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{dst}>;
const UPI: u32 = {upi}u;
fn spread8(w: u32) -> vec2<u32> {{
    return vec2<u32>((w & 0xffu) | ((w << 8u) & 0xff0000u), ((w >> 16u) & 0xffu) | ((w >> 8u) & 0xff0000u));
}}
fn spread16(w: u32) -> vec2<u32> {{
    return vec2<u32>(w & 0xffffu, w >> 16u);
}}
fn isnan32(x: u32) -> u32 {{
    return select(0u, 1u, (x & 0x7fffffffu) > 0x7f800000u);
}}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {{
    let first = (group.y * groups.x + group.x) * 256u * UPI + lane;
    for (var k = 0u; k < UPI; k += 1u) {{
        let i = first + k * 256u;
        if (i >= {count}u) {{ return; }}
{body}
    }}
}}
"""

KEEP8 = "0xff00ff00u"
KEEP16 = "0xffff0000u"
# Identities of 8-bit (SPREAD = spread8) or 16-bit (spread16) elements. Two chunks: one input chunk per invocation,
# whose span is two output chunks.
K_2 = """
        let v = src[i];
        let a = SPREAD(v.x); let b = SPREAD(v.y); let c = SPREAD(v.z); let d = SPREAD(v.w);
        let o0 = dst[2u * i]; let o1 = dst[2u * i + 1u];
        dst[2u * i] = (o0 & vec4<u32>(KEEP)) | vec4<u32>(a, b);
        dst[2u * i + 1u] = (o1 & vec4<u32>(KEEP)) | vec4<u32>(c, d);
"""
K_2_NOREAD = """
        let v = src[i];
        let a = SPREAD(v.x); let b = SPREAD(v.y); let c = SPREAD(v.z); let d = SPREAD(v.w);
        dst[2u * i] = vec4<u32>(a, b);
        dst[2u * i + 1u] = vec4<u32>(c, d);
"""
# One chunk: half an input chunk per invocation, whose span is one output chunk.
K_1 = """
        let v = src[i];
        let a = SPREAD(v.x); let b = SPREAD(v.y);
        let o0 = dst[i];
        dst[i] = (o0 & vec4<u32>(KEEP)) | vec4<u32>(a, b);
"""
# One word: two 8-bit elements per invocation.
K8_W = """
        let v = (src[i / 2u] >> ((i % 2u) * 16u)) & 0xffffu;
        let o = dst[i];
        dst[i] = (o & KEEP) | (v & 0xffu) | ((v << 8u) & 0xff0000u);
"""
# float32 -> uint8 (is_nan), stride 2: one input chunk (4 floats) -> two output words
KF_W = """
        let v = src[i];
        let o0 = dst[2u * i]; let o1 = dst[2u * i + 1u];
        dst[2u * i] = (o0 & KEEP) | isnan32(v.x) | (isnan32(v.y) << 16u);
        dst[2u * i + 1u] = (o1 & KEEP) | isnan32(v.z) | (isnan32(v.w) << 16u);
"""
# four input chunks (16 floats) -> two output chunks
KF_2 = """
        let v0 = src[4u * i]; let v1 = src[4u * i + 1u]; let v2 = src[4u * i + 2u]; let v3 = src[4u * i + 3u];
        let o0 = dst[2u * i]; let o1 = dst[2u * i + 1u];
        dst[2u * i] = (o0 & vec4<u32>(KEEP)) | vec4<u32>(isnan32(v0.x) | (isnan32(v0.y) << 16u), isnan32(v0.z) | (isnan32(v0.w) << 16u),
                                                  isnan32(v1.x) | (isnan32(v1.y) << 16u), isnan32(v1.z) | (isnan32(v1.w) << 16u));
        dst[2u * i + 1u] = (o1 & vec4<u32>(KEEP)) | vec4<u32>(isnan32(v2.x) | (isnan32(v2.y) << 16u), isnan32(v2.z) | (isnan32(v2.w) << 16u),
                                                  isnan32(v3.x) | (isnan32(v3.y) << 16u), isnan32(v3.z) | (isnan32(v3.w) << 16u));
"""
# f32 -> u8 with the warp's loads contiguous: unit = one input chunk; the unit's two output words are stored as one
# vec2 (dst viewed as vec2<u32>)
KF_V2 = """
        let v = src[i];
        let o = dst[i];
        dst[i] = (o & vec2<u32>(KEEP)) | vec2<u32>(isnan32(v.x) | (isnan32(v.y) << 16u), isnan32(v.z) | (isnan32(v.w) << 16u));
"""

# the same two words through a vec4<u32> view with component indices (as gpuops binds the output)
KF_W4 = """
        let w = 2u * i; let n = w + 1u;
        let v = src[i];
        let o0 = dst[w / 4u][w % 4u]; let o1 = dst[n / 4u][n % 4u];
        dst[w / 4u][w % 4u] = (o0 & KEEP) | isnan32(v.x) | (isnan32(v.y) << 16u);
        dst[n / 4u][n % 4u] = (o1 & KEEP) | isnan32(v.z) | (isnan32(v.w) << 16u);
"""
# two input chunks (8 floats) -> one output chunk
KF_C = """
        let v0 = src[2u * i]; let v1 = src[2u * i + 1u];
        let o0 = dst[i];
        dst[i] = (o0 & vec4<u32>(KEEP)) | vec4<u32>(isnan32(v0.x) | (isnan32(v0.y) << 16u), isnan32(v0.z) | (isnan32(v0.w) << 16u),
                                                  isnan32(v1.x) | (isnan32(v1.y) << 16u), isnan32(v1.z) | (isnan32(v1.w) << 16u));
"""


def kernels(N: int) -> dict[str, tuple]:  # noqa: N803 (N: the count the docstring names)
    """The kernels for N results, by name: source and output element views, invocation steps, input bytes and
    output bytes per element, body, the mask of the bytes between the elements."""
    return {
        "i8_unit2": ("vec4<u32>", "vec4<u32>", N // 16, 1, 1, K_2.replace("SPREAD", "spread8"), KEEP8),
        "i8_unit2_noread": ("vec4<u32>", "vec4<u32>", N // 16, 1, 1, K_2_NOREAD.replace("SPREAD", "spread8"), KEEP8),
        "i8_unit1": ("vec2<u32>", "vec4<u32>", N // 8, 1, 1, K_1.replace("SPREAD", "spread8"), KEEP8),
        "i8_word": ("u32", "u32", N // 2, 1, 1, K8_W, KEEP8),
        "f16_unit2": ("vec4<u32>", "vec4<u32>", N // 8, 2, 2, K_2.replace("SPREAD", "spread16"), KEEP16),
        "f16_unit2_noread": ("vec4<u32>", "vec4<u32>", N // 8, 2, 2, K_2_NOREAD.replace("SPREAD", "spread16"), KEEP16),
        "f16_unit1": ("vec2<u32>", "vec4<u32>", N // 4, 2, 2, K_1.replace("SPREAD", "spread16"), KEEP16),
        "f32u8_words": ("vec4<u32>", "u32", N // 4, 4, 1, KF_W, KEEP8),
        "f32u8_vec2": ("vec4<u32>", "vec2<u32>", N // 4, 4, 1, KF_V2, KEEP8),
        "f32u8_unit2": ("vec4<u32>", "vec4<u32>", N // 16, 4, 1, KF_2, KEEP8),
        "f32u8_words_v4view": ("vec4<u32>", "vec4<u32>", N // 4, 4, 1, KF_W4, KEEP8),
        "f32u8_chunk": ("vec4<u32>", "vec4<u32>", N // 8, 4, 1, KF_C, KEEP8),
    }


def expected(name: str, src: np.ndarray, dst: np.ndarray, N: int) -> np.ndarray:  # noqa: N803
    out = dst.copy()
    if name.startswith("i8"):
        view = out.view(np.uint8)
        view[: 2 * N : 2] = src.view(np.uint8)[:N]
        if "noread" in name:
            view[1 : 2 * N : 2] = 0
    elif name.startswith("f16"):
        view = out.view(np.uint16)
        view[: 2 * N : 2] = src.view(np.uint16)[:N]
        if "noread" in name:
            view[1 : 2 * N : 2] = 0
    else:
        view = out.view(np.uint8)
        view[: 2 * N : 2] = np.isnan(src.view(np.float32)[:N]).astype(np.uint8)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, default=25, help="N = 2^LOG2 results")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--only", help="run only the kernels whose name starts with this")
    parser.add_argument("--units", type=int, nargs="+", default=[1, 4], help="units per invocation to try")
    args = parser.parse_args(argv)
    N = 1 << args.log2
    ITER = args.iterations
    chosen = {k: v for k, v in kernels(N).items() if not args.only or k.startswith(args.only)}
    torch = torch_cuda()
    if torch is not None:
        torch.ones(1, device="cuda")  # hold a CUDA context: without it the driver runs Vulkan compute slower
    device = gpuops.Device()
    print("device", device.adapter_name, backends.backend_name(device.wgpu), "runtime_checks",
          device.runtime_checks, flush=True)
    wd = device.wgpu_device
    usage = device.wgpu.BufferUsage.STORAGE | device.wgpu.BufferUsage.COPY_SRC | device.wgpu.BufferUsage.COPY_DST
    timer = GpuTimer(device)
    rng = np.random.default_rng(1)
    upis = args.units
    for name, (src_t, dst_t, units, in_b, out_b, body, keep) in chosen.items():
        src = rng.integers(0, 2**32, N * in_b // 4, dtype=np.uint32)
        if name.startswith("f32u8"):
            f = src.view(np.float32)
            f[rng.integers(0, N, N // 50)] = np.nan
        dst = rng.integers(0, 2**32, 2 * N * out_b // 4, dtype=np.uint32)
        sbuf = wd.create_buffer_with_data(data=src, usage=usage)
        dbuf = wd.create_buffer_with_data(data=dst, usage=usage)
        want = expected(name, src, dst, N)
        for upi in upis:
            code = HEAD.format(src=src_t, dst=dst_t, upi=upi, count=units, body=body.replace("KEEP", keep))
            module = backends.create_shader_module(device.wgpu, wd, name, code, device.runtime_checks)
            pipe = wd.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
            bg = wd.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": sbuf}}, {"binding": 1, "resource": {"buffer": dbuf}}])
            groups = -(-units // (WG * upi))
            grid = (min(groups, 65535), -(-groups // 65535), 1)

            def record(encoder, writes, pipe=pipe, bg=bg, grid=grid):
                record_pass(encoder, writes, pipe, bg, grid)

            wd.queue.write_buffer(dbuf, 0, dst)
            enc = wd.create_command_encoder()
            record(enc, None)
            wd.queue.submit([enc.finish()])
            got = np.frombuffer(wd.queue.read_buffer(dbuf), np.uint32)
            exact = np.array_equal(got, want)
            t = timer.run(record, iterations=ITER, warmup=2)
            ns = t.gpu_median_ns
            counted = N * in_b + N * out_b
            moved = N * in_b + 2 * (2 * N * out_b) * (0 if "noread" in name else 1) + (2 * N * out_b if "noread" in name else 0)
            print(f"{name:18s} upi={upi} exact={exact} {ns / 1000:8.1f} us  counted {counted / ns:7.0f} GB/s  "
                  f"DRAM-min {moved / ns:7.0f} GB/s", flush=True)
        sbuf.destroy()
        dbuf.destroy()
    for size in (N * 2, N * 4):  # packed copies of the same tensor bytes: int8 / f16 2-D packed-like
        copy = CopyKernel(device, size)
        t = timer.run(copy.record, iterations=ITER, warmup=2)
        print(f"copy {size >> 20} MiB: {copy.bytes_moved / t.gpu_median_ns:7.0f} GB/s {t.gpu_median_ns / 1000:.1f} us")
        copy.release()
    if torch is not None:
        for dt, eb in ((torch.int8, 1), (torch.float16, 2)):
            x = torch.zeros(N, dtype=dt, device="cuda")
            y = torch.zeros(2 * N, dtype=dt, device="cuda")
            times, _ = cuda_times(torch, lambda x=x, y=y: y[::2].copy_(x), 20, 3)
            ns = statistics.median(times)
            print(f"torch y[::2].copy_(x) {dt}: {ns / 1000:.1f} us counted {2 * N * eb / ns:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
