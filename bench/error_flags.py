"""What reporting NumPy's floating-point errors costs the modulus kernels: each case's kernels with and without the
error flag word (kernel.Operation.error_flags, the NumPy-level functions' variant), timed alternately on the same
buffers in one process.

    python bench/error_flags.py [--elements 16777216] [--dtypes ...] [--layouts packed broadcast-b transposed]
                                [--rounds 5] [--iterations 20] [--warmup 3] [--repeats 1] [--backend ...]
                                [--json FILE]

For every MODULUS_FLOOR and MODULUS_TRUNCATE case (each type, each layout, a square of --elements), two data sets:
"bench", gpuops-bench's values (zero divisors and infinite dividends among them: the error path is taken), and
"clean", the same with those replaced by 1 (the common path only). Both kernels are checked against NumPy first;
then each round times the plain kernel and the flagged one (in the order ABBA, then BAAB, ...), --iterations
each, and the case's figure is the median over rounds of each round's median GPU time. `ratio` is flagged / plain:
the goal is at most 1.01 on every row. `flag` is the word the flagged kernel wrote (NumPy's bit: 1 divide by zero,
8 invalid, 0 none), which must be 0 for "clean" data. A CUDA context is held on every GPU where PyTorch or CuPy
reaches CUDA (gpuops.bench.cuda_context): without one NVIDIA's driver runs Vulkan compute in a lower performance
state, and the rounds of one kernel spread by tens of percent.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import numpy as np

import gpuops
from gpuops.bench.cuda_context import hold_cuda_contexts
from gpuops.bench.reference import compare
from gpuops.bench.timing import GpuTimer
from gpuops.bench.workload import OUTPUT_FILL, Workload, element_view, make_case, random_values
from gpuops.device import Binding
from gpuops.enums import DataType

TYPES = ["float32", "float16", "int32", "int16", "int8", "uint32", "uint16", "uint8", "int64", "uint64"]
OPERATORS = ["modulus_floor", "modulus_truncate"]


def clean(data_type: DataType, count: int, rng: np.random.Generator, name: str) -> np.ndarray:
    """gpuops-bench's values without the modulus's error cases: no zero divisor, no infinite dividend."""
    values = random_values(data_type, count, rng)
    if name == "b_tensor":
        values[values == 0] = 1
    elif values.dtype.kind == "f":
        values[np.isinf(values)] = 1
    return values


class Flagged:
    """A workload's kernels with the error flag word (CompiledOperator.bind_with_error_flags), on its buffers."""

    def __init__(self, workload: Workload):
        self.workload = workload
        device = workload.device
        usage = device.wgpu.BufferUsage
        self.flags = device.wgpu_device.create_buffer(size=256, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
        self.table = workload.compiled.bind_with_error_flags(workload.bindings, Binding(self.flags))

    def record(self, encoder, timestamp_writes) -> None:
        self.workload.compiled.record(encoder, self.table, timestamp_writes)

    def check(self) -> tuple[str | None, int]:
        """Run once on an output filled with OUTPUT_FILL: (None, or how the result differs from NumPy; the flag
        word)."""
        workload = self.workload
        case, queue = workload.case, workload.device.wgpu_device.queue
        size = -(-workload.output_size // 4) * 4
        queue.write_buffer(workload.output, 0, bytes([OUTPUT_FILL]) * size)
        queue.write_buffer(self.flags, 0, bytes(4))
        workload.compiled.execute(self.table)
        flag = int(np.frombuffer(queue.read_buffer(self.flags, 0, 4), np.uint32)[0])
        memory = np.frombuffer(queue.read_buffer(workload.output, 0, size), case.out_dtype.numpy_dtype,
                               workload.output_size // case.out_dtype.size)
        got = np.array(element_view(memory, case.sizes, workload.out_strides))
        mismatch = compare(got, workload.expected(), tuple(workload.inputs))
        return (mismatch.describe() if mismatch else None), flag

    def release(self) -> None:
        self.flags.destroy()


def run_case(device, timer: GpuTimer, operator: str, dtype: str, layout: str, side: int, data: str, args) -> dict:
    case = make_case(operator, dtype, (side, side), layout)
    workload = Workload(device, case, seed=1, data=clean if data == "clean" else None)
    flagged = Flagged(workload)
    row = {"operator": operator, "dtype": dtype, "layout": layout, "sizes": [side, side], "data": data}
    try:
        plain_error = workload.check()
        flagged_error, flag = flagged.check()
        row["flag"] = flag
        if plain_error is not None or flagged_error is not None:
            row["error"] = (plain_error.describe() if plain_error else None) or flagged_error
            return row
        times = {"plain": [], "flagged": []}
        variants = {"plain": workload.record, "flagged": flagged.record}
        for round_index in range(args.rounds):
            order = ["plain", "flagged", "flagged", "plain"] if round_index % 2 == 0 else \
                ["flagged", "plain", "plain", "flagged"]
            for name in order:
                timing = timer.run(variants[name], args.iterations, args.warmup, args.repeats)
                times[name].append(timing.gpu_median_ns or timing.host_median_ns)
        for name, values in times.items():
            row[f"{name}_ns"] = statistics.median(values)
            row[f"{name}_spread"] = (max(values) - min(values)) / statistics.median(values)
        row["ratio"] = row["flagged_ns"] / row["plain_ns"]
        return row
    finally:
        flagged.release()
        workload.release()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1 << 24, help="elements per tensor (a square)")
    parser.add_argument("--ops", nargs="+", default=OPERATORS, choices=OPERATORS)
    parser.add_argument("--dtypes", nargs="+", default=TYPES, choices=TYPES)
    parser.add_argument("--layouts", nargs="+", default=["packed", "broadcast-b", "transposed"],
                        choices=["packed", "broadcast-b", "transposed", "strided"])
    parser.add_argument("--data", nargs="+", default=["bench", "clean"], choices=["bench", "clean"])
    parser.add_argument("--rounds", type=int, default=5, help="ABBA rounds per case")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1, help="passes per timed span (Dawn: 40)")
    parser.add_argument("--backend", default=None, help="wgpu-native or dawn (default: gpuops' default)")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    args = parser.parse_args(argv)
    cuda_contexts = hold_cuda_contexts()  # noqa: F841 (held for the run: see cuda_context)
    device = gpuops.Device(backend=args.backend) if args.backend else gpuops.default_device()
    timer = GpuTimer(device)
    side = int(round(args.elements ** 0.5))
    print(f"# {device.adapter_name} ({device.backend}); {side}x{side} elements; ratio = flagged / plain GPU time",
          file=sys.stderr)
    print(f"{'operator':17} {'dtype':8} {'layout':12} {'data':6} {'plain us':>9} {'flagged us':>10} {'ratio':>7} "
          f"{'spread':>7} flag")
    rows, worst = [], 0.0
    for operator in args.ops:
        for dtype in args.dtypes:
            for layout in args.layouts:
                for data in args.data:
                    row = run_case(device, timer, operator, dtype, layout, side, data, args)
                    rows.append(row)
                    if "error" in row:
                        print(f"{operator:17} {dtype:8} {layout:12} {data:6} WRONG RESULT: {row['error']}")
                        continue
                    worst = max(worst, row["ratio"])
                    spread = max(row["plain_spread"], row["flagged_spread"])
                    print(f"{operator:17} {dtype:8} {layout:12} {data:6} {row['plain_ns'] / 1e3:9.1f} "
                          f"{row['flagged_ns'] / 1e3:10.1f} {row['ratio']:7.4f} {spread:7.3f} {row['flag']}",
                          flush=True)
    print(f"# worst ratio {worst:.4f}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"adapter": device.adapter_name, "backend": device.backend, "rows": rows}, handle, indent=1)
    wrong = any("error" in row for row in rows) or any(row["data"] == "clean" and row.get("flag") for row in rows)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
