"""Two versions of gpuops' kernels, timed in turn on the same GPU, buffers and data: every kernel the performance
tables run, as this checkout makes it and as another version's text (written by bench/kernel_lines.py --dump under
that version), each checked against NumPy bit for bit and then timed, the two interleaved round by round.

    PYTHONPATH=OTHER python bench/kernel_lines.py --dump DIR     # the other version's kernels (OTHER: its tree)
    python bench/kernel_ab.py DIR [--rounds 3] [--iterations 10] [--match REGEX] [--backend dawn --repeats 4]
                                  [--data goals|bench|worst] [--json FILE]

With --error-flags on both, the rows of the operators that report NumPy's floating-point errors run in the variant
that does (the NumPy level's), their flag words bound to a buffer of this script's, which must hold the same flags
after either version's run.

Both versions' kernels bind the same buffers the same way (the bindings, their layout and the uniforms are this
checkout's): only the shader text differs. On Dawn the tool turns off Dawn's rounding of timestamps
(gpuops.bench.timing.exact_dawn_timestamps). A CUDA context is held through PyTorch where it is importable: NVIDIA's
driver otherwise runs Vulkan compute in a lower performance state. The table gives each row's median GPU time of each version over the
rounds and this checkout's over the other's; `--json` keeps them (and every round's figures). `--elements` must be
the one the dump was made with; `--data` picks the inputs' values (gpuops-bench targets' data sets: the goals' by
default, the benchmark's `bench` or its `worst`).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

import numpy as np

import gpuops
from gpuops import backends
from gpuops.bench.reference import compare
from gpuops.bench.report import write_json
from gpuops.bench.targets import DATA_SETS, DEFAULT_ELEMENTS, label
from gpuops.bench.timing import GpuTimer, exact_timestamps_for, timestamps_quantized
from gpuops.bench.cuda_context import hold_cuda_contexts
from gpuops.bench.workload import Workload, bytes_moved, element_view
from gpuops.device import bind_group_entries, record_pass
from gpuops.kernel import operands_of

from kernel_lines import dump_name, reports_errors, table_cases


class Variant:
    """One version of a dispatch: its pipeline, and the bind group of the workload's buffers (this checkout's)."""

    def __init__(self, device: gpuops.Device, plan, by_operand: dict, source: str | None, flags=None):
        wgpu_device, api = device.wgpu_device, device.wgpu
        pipeline, layout = device.pipeline(plan.key)
        if source is not None:
            # Built as the device builds this checkout's (without runtime checks where the backend allows): a
            # plain module keeps wgpu-native's bounds checks, which cost tiled kernels a third of their speed.
            module = backends.create_shader_module(api, wgpu_device, f"{plan.key.label} (other)", source,
                                                   device.runtime_checks)
            pipeline = wgpu_device.create_compute_pipeline(
                layout=wgpu_device.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": "main"})
        self.pipeline = pipeline
        self.uniforms = wgpu_device.create_buffer_with_data(data=plan.uniforms.to_bytes(),
                                                            usage=api.BufferUsage.UNIFORM)
        entries = bind_group_entries(device, plan, self.uniforms, by_operand,
                                     None if flags is None else gpuops.Binding(flags))
        self.bind_group = wgpu_device.create_bind_group(layout=layout, entries=entries)
        self.grid = plan.grid_size

    def record(self, encoder, timestamp_writes) -> None:
        record_pass(encoder, timestamp_writes, self.pipeline, self.bind_group, self.grid)


def result(workload: Workload, variant: Variant, flags=None) -> tuple[np.ndarray, int | None]:
    """The output elements after one run of the variant on a cleared output, and its flag word (cleared first;
    None without)."""
    device = workload.device.wgpu_device
    device.queue.write_buffer(workload.output, 0, np.zeros(-(-workload.output_size // 4) * 4, np.uint8))
    if flags is not None:
        device.queue.write_buffer(flags, 0, bytes(4))
    encoder = device.create_command_encoder()
    variant.record(encoder, None)
    device.queue.submit([encoder.finish()])
    case = workload.case
    raw = device.queue.read_buffer(workload.output, 0, -(-workload.output_size // 4) * 4)
    memory = np.frombuffer(raw, case.out_dtype.numpy_dtype, workload.output_size // case.out_dtype.size)
    word = None if flags is None else int(np.frombuffer(device.queue.read_buffer(flags, 0, 4), np.uint32)[0])
    return np.array(element_view(memory, case.sizes, workload.out_strides)), word


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other version's kernels (bench/kernel_lines.py --dump)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both versions, interleaved (default 3)")
    parser.add_argument("--iterations", type=int, default=10, help="timed runs per version and round (10)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="passes per timed span (1); a few on Dawn, whose timestamps this tool reads unrounded")
    parser.add_argument("--match", help="a regex: only the rows whose section and label match")
    parser.add_argument("--elements", type=int, default=DEFAULT_ELEMENTS, help="the tables' element count")
    parser.add_argument("--backend", help="the WebGPU implementation (gpuops.Device's backend)")
    parser.add_argument("--error-flags", action="store_true",
                        help="the variant reporting floating-point errors (the dump made with --error-flags too)")
    parser.add_argument("--data", choices=tuple(DATA_SETS), default="goals", help="the inputs' values (goals)")
    parser.add_argument("--json", type=Path, help="write every row's figures to this file")
    args = parser.parse_args(argv)
    cuda_contexts = hold_cuda_contexts()  # noqa: F841 (held for the run)
    exact_timestamps_for(args.backend)
    device = gpuops.Device(**({"backend": args.backend} if args.backend else {}))
    usage = device.wgpu.BufferUsage
    flags = device.wgpu_device.create_buffer(size=16, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST) \
        if args.error_flags else None
    timer = GpuTimer(device)
    basis = ("GPU timestamps" + (", rounded down by Dawn" if timestamps_quantized(device) else "")
             if timer.supported else "host time (no timestamps)")
    print(f"{device.adapter_name} ({device.backend}); median ns per run by {basis}; this over the other", flush=True)
    print(f"{'section':13s} {'row':42s} {'other':>10s} {'this':>10s} {'this/other':>10s}", flush=True)
    ratios, failures, rows = [], 0, []

    def save() -> None:
        """The rows so far: a run cut short by a time limit keeps what it measured."""
        if args.json:
            write_json(args.json, {"adapter": device.adapter_name, "backend": device.backend, "basis": basis,
                                   "data": args.data, "elements": args.elements, "rows": rows})
    for section, case in table_cases(device.feature_level, args.elements):
        if args.error_flags and not reports_errors(case):
            continue
        row = {"operator": case.operator, "mode": None if case.mode is None else int(case.mode),
               "dtype": case.dtype.name, "out_dtype": case.out_dtype.name}
        name = label(row)
        if args.match and not re.search(args.match, f"{section} {name}"):
            continue
        workload = Workload(device, case, data=DATA_SETS[args.data])
        try:
            plans = workload.compiled.dispatch_plans(workload.bindings, error_flags=args.error_flags)
            if len(plans) != 1:
                print(f"{section:13s} {name:42s} {len(plans)} dispatches: not compared", flush=True)
                continue
            (plan,) = plans
            other = (args.other / dump_name(section, row, 0)).read_text()
            by_operand = dict(zip(operands_of(len(case.spec.inputs)),
                                  (workload.bindings[field] for field in case.spec.tensor_fields)))
            variants = {"other": Variant(device, plan, by_operand, other, flags),
                        "this": Variant(device, plan, by_operand, None, flags)}
            expected = workload.expected()
            results = {which: result(workload, variant, flags) for which, variant in variants.items()}
            wrong = [which for which, (got, _) in results.items()
                     if compare(got, expected, tuple(workload.inputs)) is not None]
            if results["other"][1] != results["this"][1]:
                wrong.append(f"flag words {results['other'][1]} and {results['this'][1]}")
            if wrong:
                failures += 1
                print(f"{section:13s} {name:42s} not exact: {', '.join(wrong)}", flush=True)
                rows.append({"section": section, "row": name, "exact": False, "wrong": wrong})
                continue
            times = {which: [] for which in variants}
            for _ in range(args.rounds):
                for which, variant in variants.items():
                    timing = timer.run(variant.record, args.iterations, 2, repeats=args.repeats)
                    times[which].append(timing.gpu_median_ns or timing.host_median_ns)
            other_ns, this_ns = (statistics.median(times[which]) for which in ("other", "this"))
            ratios.append(this_ns / other_ns)
            rows.append({"section": section, "row": name, "exact": True, "bytes": bytes_moved(case),
                         "other_ns": other_ns, "this_ns": this_ns, "rounds_ns": times})
            print(f"{section:13s} {name:42s} {other_ns:10.0f} {this_ns:10.0f} {this_ns / other_ns:10.3f}", flush=True)
        finally:
            workload.release()
            save()
    if ratios:
        print(f"{len(ratios)} rows: this/other from {min(ratios):.3f} to {max(ratios):.3f}, geometric mean "
              f"{float(np.exp(np.mean(np.log(ratios)))):.3f}; {failures} not exact", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
