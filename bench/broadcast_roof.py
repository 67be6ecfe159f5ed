"""What a broadcast case can reach at all on this GPU: plain streams of its bytes, no gpuops kernel.

    python bench/broadcast_roof.py [--mib 64 128] [--iterations 20] [--repeats 1] [--backend wgpu-native|dawn]

A broadcast case of `gpuops-bench targets` (8192 x 8192, one operand a row of 8192 read from the cache) moves, in
memory, the other input and the output: for a one-input operator (IS_NAN, SIGN) the output alone, a write-only
stream; for a modulus the dividend and the output, a copy. This times, for outputs of each --mib size, a minimal
WGSL kernel writing it (vec4<u32> stores, one or four per invocation), the WGSL copy (gpuops.bench.timing.CopyKernel)
of it, and PyTorch's `fill_` and `copy_` of the same bytes beside them (with CUDA), and PyTorch's copy of 256 MiB,
the targets' 100%: what a broadcast row's goal asks of the GPU, set against what its bytes can reach at all.
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

WRITE_WGSL = """
@group(0) @binding(0) var<storage, read_write> dst: array<vec4<u32>>;
const CHUNKS: u32 = {chunks}u;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {{
    let first = (group.y * groups.x + group.x) * 256u * CHUNKS + lane;
    for (var k = 0u; k < CHUNKS; k += 1u) {{
        let i = first + k * 256u;
        if (i < arrayLength(&dst)) {{
            dst[i] = vec4<u32>(i, i ^ 0x01010101u, 0x01000100u, 0x00010001u);
        }}
    }}
}}
"""


class WriteKernel:
    """dst[i] = a value made from i, vec4<u32> stores: a write-only stream of `size_bytes`."""

    def __init__(self, device: gpuops.Device, size_bytes: int, chunks: int):
        wd = device.wgpu_device
        usage = device.wgpu.BufferUsage.STORAGE | device.wgpu.BufferUsage.COPY_SRC
        self.dst = wd.create_buffer(size=size_bytes, usage=usage)
        self.bytes_moved = size_bytes
        module = backends.create_shader_module(device.wgpu, wd, "write", WRITE_WGSL.format(chunks=chunks),
                                               device.runtime_checks)
        self.pipeline = wd.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        self.bind_group = wd.create_bind_group(layout=self.pipeline.get_bind_group_layout(0),
                                               entries=[{"binding": 0, "resource": {"buffer": self.dst}}])
        groups = -(-(size_bytes // 16) // (256 * chunks))
        self.grid = (min(groups, 65535), -(-groups // 65535), 1)
        self.count = size_bytes // 16

    def record(self, encoder, timestamp_writes) -> None:
        record_pass(encoder, timestamp_writes, self.pipeline, self.bind_group, self.grid)

    def check(self, device: gpuops.Device) -> bool:
        got = np.frombuffer(device.wgpu_device.queue.read_buffer(self.dst), np.uint32).reshape(-1, 4)
        i = np.arange(self.count, dtype=np.uint32)
        return bool(np.array_equal(got[:, 0], i) and np.array_equal(got[:, 1], i ^ np.uint32(0x01010101)))


def torch_ns(torch, work) -> float:
    """Median CUDA-event time of `work` over 20 runs after 3 warm-up runs."""
    return statistics.median(cuda_times(torch, work, 20, 3)[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, nargs="+", default=[64, 128], help="output sizes in MiB")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=1, help="passes per timed span (Dawn: 40)")
    parser.add_argument("--backend", default=None,
                        help="wgpu-native or dawn (default: GPUOPS_BACKEND or wgpu-native)")
    args = parser.parse_args(argv)
    torch = torch_cuda()
    if torch is not None:
        torch.ones(1, device="cuda")  # hold a CUDA context: without it the driver runs Vulkan compute slower
    device = gpuops.Device(backend=args.backend) if args.backend else gpuops.Device()
    print("device", device.adapter_name, backends.backend_name(device.wgpu), "runtime_checks",
          device.runtime_checks, "repeats", args.repeats, flush=True)
    timer = GpuTimer(device)

    def timed(kernel) -> float:
        return timer.run(kernel.record, iterations=args.iterations, warmup=2, repeats=args.repeats).gpu_median_ns

    for mib in args.mib:
        size = mib << 20
        for chunks in (1, 4):
            write = WriteKernel(device, size, chunks)
            ns = timed(write)
            print(f"WGSL write-only {mib} MiB, {chunks} chunk(s) per invocation: {ns / 1000:7.1f} us "
                  f"{size / ns:6.0f} GB/s  written as expected: {write.check(device)}", flush=True)
            write.dst.destroy()
        copy = CopyKernel(device, size)
        ns = timed(copy)
        print(f"WGSL copy {mib} MiB -> {mib} MiB: {ns / 1000:7.1f} us {copy.bytes_moved / ns:6.0f} GB/s", flush=True)
        copy.release()
        if torch is not None:
            x = torch.ones(size, dtype=torch.uint8, device="cuda")
            y = torch.zeros(size, dtype=torch.uint8, device="cuda")
            ns = torch_ns(torch, lambda y=y: y.fill_(1))
            print(f"torch fill_ {mib} MiB: {ns / 1000:7.1f} us {size / ns:6.0f} GB/s", flush=True)
            ns = torch_ns(torch, lambda x=x, y=y: y.copy_(x))
            print(f"torch copy_ {mib} MiB -> {mib} MiB: {ns / 1000:7.1f} us {2 * size / ns:6.0f} GB/s", flush=True)
            del x, y
    if torch is not None:
        x = torch.ones(256 << 20, dtype=torch.uint8, device="cuda")
        y = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
        ns = torch_ns(torch, lambda: y.copy_(x))
        print(f"torch copy_ 256 MiB -> 256 MiB (the targets' 100%): {ns / 1000:7.1f} us {2 * (256 << 20) / ns:6.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
