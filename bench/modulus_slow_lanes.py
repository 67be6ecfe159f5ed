"""What the modulus's slow lanes can reach at all on this GPU: a minimal kernel doing only their arithmetic on every
element of the worst-case data (`gpuops-bench --data worst`), beside the plain copy of the same bytes and gpuops'
own MODULUS_TRUNCATE and MODULUS_FLOOR on the same data, in one run.

    python bench/modulus_slow_lanes.py [--types float32 float16 int64] [--tensor-mib 256] [--iterations 10]
                                       [--repeats 1] [--backend dawn] [--json FILE]

The minimal kernel reads both inputs as 16-byte chunks (one per invocation, consecutive invocations consecutive
chunks, a 2-D grid of workgroups of 256) and writes C's remainder of each element computed by the function gpuops'
kernels run for a lane off their usual path, taken from gpuops' own WGSL libraries: float32 `f32_remainder_any`
(wgsl/lib/f32_bits.wgsl), float16 `f16_remainder_bits` (wgsl/lib/f16_bits.wgsl), int64 `u64_rem` on the magnitudes
with the dividend's sign (wgsl/lib/u64.wgsl). No layout, no edges, no error flags. Its result is checked against
NumPy bit for bit before it is timed, as gpuops' rows are. GB/s counts the bytes read and written; a row of gpuops
that misses its goal on this data is to be read against this kernel's figure: the distance from the copy to it is
what the slow lanes' arithmetic costs, the distance from it to gpuops what the rest of gpuops' kernel costs. A CUDA context is held through PyTorch where it is importable: NVIDIA's driver
otherwise runs Vulkan compute in a lower performance state.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import gpuops
from gpuops import backends
from gpuops.bench.reference import compare
from gpuops.bench.report import write_json
from gpuops.bench.timing import CopyKernel, GpuTimer
from gpuops.bench.cuda_context import hold_cuda_contexts
from gpuops.bench.workload import Case, Workload, bytes_moved, worst_values
from gpuops.device import record_pass
from gpuops.enums import DataType
from gpuops.shaders import WGSL_DIR

WORKGROUP = 256
# Per type: the libraries the slow lanes' function needs, and one 16-byte chunk's remainders from a and b.
KERNELS = {
    DataType.FLOAT32: (("lib/error_notes.wgsl", "lib/rem_by_estimate.wgsl", "lib/f32_bits.wgsl"), """
fn chunk(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(f32_remainder_any(a.x, b.x, false), f32_remainder_any(a.y, b.y, false),
                     f32_remainder_any(a.z, b.z, false), f32_remainder_any(a.w, b.w, false));
}
"""),
    DataType.FLOAT16: (("lib/error_notes.wgsl", "lib/f16_bits.wgsl"), """
const F16_PACK_ROUNDS_TO_NEAREST: bool = false;

fn word(a: u32, b: u32) -> u32 {
    return f16_remainder_bits(a & 0xffffu, b & 0xffffu, false) | (f16_remainder_bits(a >> 16u, b >> 16u, false) << 16u);
}

fn chunk(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(word(a.x, b.x), word(a.y, b.y), word(a.z, b.z), word(a.w, b.w));
}
"""),
    DataType.INT64: (("lib/u64.wgsl",), """
fn magnitude(x: vec2<u32>) -> vec2<u32> {
    return select(x, u64_negate(x), (x.y >> 31u) == 1u);
}

fn fmod64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let r = u64_rem(magnitude(a), magnitude(b));
    return select(r, u64_negate(r), (a.y >> 31u) == 1u);
}

fn chunk(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(fmod64(a.xy, b.xy), fmod64(a.zw, b.zw));
}
"""),
}

MAIN = """
@group(0) @binding(0) var<storage, read> a_chunks: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> b_chunks: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> out_chunks: array<vec4<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = id.y * groups.x * 256u + id.x;
    if (i < arrayLength(&out_chunks)) {
        out_chunks[i] = chunk(a_chunks[i], b_chunks[i]);
    }
}
"""


def shader(data_type: DataType) -> str:
    files, body = KERNELS[data_type]
    return "\n".join((WGSL_DIR / name).read_text() for name in files) + body + MAIN


def median_ns(timing) -> float:
    return timing.gpu_median_ns if timing.gpu_median_ns is not None else timing.host_median_ns


def measure(device: gpuops.Device, timer: GpuTimer, data_type: DataType, tensor_bytes: int, iterations: int,
            repeats: int, say) -> list[dict]:
    count = tensor_bytes // data_type.size
    rng = np.random.default_rng(7)
    a, b = (worst_values(data_type, count, rng, field) for field in ("a_tensor", "b_tensor"))
    wgpu_device, usage = device.wgpu_device, device.wgpu.BufferUsage
    storage = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
    buffers = [wgpu_device.create_buffer_with_data(data=x.tobytes(), usage=storage) for x in (a, b)]
    buffers.append(wgpu_device.create_buffer(size=tensor_bytes, usage=storage))
    # Built as gpuops builds its own kernels (without runtime checks where the backend allows), so that the
    # minimal kernel and gpuops' rows beside it pay for the same checks.
    module = backends.create_shader_module(device.wgpu, wgpu_device, f"slow lanes {data_type.name}",
                                           shader(data_type), device.runtime_checks)
    pipeline = wgpu_device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    bind_group = wgpu_device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[{"binding": i, "resource": {"buffer": buffer, "offset": 0, "size": tensor_bytes}}
                 for i, buffer in enumerate(buffers)])
    groups = -(-(tensor_bytes // 16) // WORKGROUP)
    per_dimension = device.limits["max-compute-workgroups-per-dimension"]
    grid = (min(groups, per_dimension), -(-groups // per_dimension), 1)

    def record(encoder, writes):
        record_pass(encoder, writes, pipeline, bind_group, grid)

    encoder = wgpu_device.create_command_encoder()
    record(encoder, None)
    wgpu_device.queue.submit([encoder.finish()])
    got = np.frombuffer(wgpu_device.queue.read_buffer(buffers[2]), data_type.numpy_dtype)
    with np.errstate(all="ignore"):
        want = np.fmod(a, b)
    mismatch = compare(got, want, (a, b))
    moved = 3 * tensor_bytes
    name = data_type.name.lower()
    rows = []

    def row(kernel: str, ns: float | None, exact: bool = True) -> None:
        gbps = moved / ns if ns else None
        rows.append({"type": name, "kernel": kernel, "bytes": moved, "exact": exact, "median_ns": ns, "gbps": gbps})
        say(f"{name:8s} {kernel:18s} exact={exact} {gbps or float('nan'):8.1f} GB/s")

    copy = CopyKernel(device, moved // 2)
    row("copy", median_ns(timer.run(copy.record, iterations, 2, repeats=repeats)))
    copy.release()
    if mismatch is not None:
        row("slow lanes", None, False)
        say(f"  {mismatch.describe()}: not timed")
    else:
        row("slow lanes", median_ns(timer.run(record, iterations, 2, repeats=repeats)))
    for buffer in buffers:
        buffer.destroy()
    for operator in ("MODULUS_TRUNCATE", "MODULUS_FLOOR"):
        case = Case(operator, data_type, data_type, (count,))
        assert bytes_moved(case) == moved
        # the very values the minimal kernel ran on
        workload = Workload(device, case, data=lambda _type, _count, _rng, field: {"a_tensor": a, "b_tensor": b}[field])
        try:
            exact = workload.check() is None
            ns = median_ns(timer.run(workload.record, iterations, 2, repeats=repeats)) if exact else None
            row(f"gpuops {operator.lower()}", ns, exact)
        finally:
            workload.release()
    copy_gbps = rows[0]["gbps"]
    for entry in rows:
        entry["percent_of_copy"] = 100 * entry["gbps"] / copy_gbps if entry["gbps"] and copy_gbps else None
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", nargs="+", default=["float32", "float16", "int64"],
                        choices=[t.name.lower() for t in KERNELS])
    parser.add_argument("--tensor-mib", type=int, default=256, help="MiB per tensor (default 256)")
    parser.add_argument("--iterations", type=int, default=10, help="timed runs per kernel (10)")
    parser.add_argument("--repeats", type=int, default=1, help="passes per timed span: Dawn's coarse timestamps "
                                                                "need about 40 (GpuTimer.run)")
    parser.add_argument("--backend", help="the WebGPU implementation (gpuops.Device's backend)")
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    args = parser.parse_args(argv)
    cuda_contexts = hold_cuda_contexts()  # noqa: F841 (held for the run)
    device = gpuops.Device(**({"backend": args.backend} if args.backend else {}))
    timer = GpuTimer(device)
    basis = "GPU timestamps" if timer.supported else "host time (no timestamps)"
    print(f"{device.adapter_name} ({device.backend}); worst-case data, {args.tensor_mib} MiB a tensor, median by "
          f"{basis}", flush=True)
    tensor_bytes = args.tensor_mib << 20
    rows = []
    for name in args.types:
        rows += measure(device, timer, DataType.parse(name), tensor_bytes, args.iterations, args.repeats,
                        lambda line: print(line, flush=True))
    for entry in rows:
        print(f"{entry['type']:8s} {entry['kernel']:28s} {entry['gbps'] or float('nan'):8.1f} GB/s "
              f"{entry['percent_of_copy'] or float('nan'):6.1f}% of copy")
    if args.json:
        write_json(args.json, {"adapter": device.adapter_name, "backend": device.backend, "basis": basis,
                               "tensor_bytes": tensor_bytes, "statistic": "median", "rows": rows})
    return 0 if all(entry["exact"] for entry in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
