"""The WGSL line count of every kernel the performance tables run (gpuops-bench targets' contiguous and layouts
sections, at their default element count), planned for a GPU whose storage bindings hold 2 GiB, so that no table
row is split into several dispatches (on a software adapter too). Nothing is dispatched and no memory is
touched: the buffers are made at the rows' sizes and only planned for.

    python bench/kernel_lines.py                     # a table: section, row, lines of each kernel it runs
    python bench/kernel_lines.py --dump DIR          # and each kernel's text, DIR/<section>/<row>.<k>.wgsl
    python bench/kernel_lines.py --compare A.json B.json   # two --json records side by side, with the change
    python bench/kernel_lines.py --error-flags       # the rows of operators that report NumPy's floating-point
                                                     # errors, in the variant that does (the NumPy level's)

`--json FILE` keeps the counts, so that two checkouts can be compared: this script uses only what every version of
gpuops has, so it runs from this checkout with another version's tree first on the path (PYTHONPATH=OTHER), as
bench/kernel_ab.py's timing of two versions' kernels needs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import gpuops
from gpuops.bench.targets import (DEFAULT_ELEMENTS, LAYOUT_OPS, LAYOUT_TYPES, OPS, _member, contiguous_elements,
                                  label, layout_cases, type_pairs)
from gpuops.bench.workload import Case, buffer_usage, make_desc, tensor_strides
from gpuops.operators import spec_by_name
from gpuops.tensor import implied_size_in_bytes

BINDING_LIMIT = 2**31 - 4  # the H100's and H200's max-storage-buffer-binding-size


def dump_name(section: str, row: dict, k: int) -> str:
    """Where --dump puts the row's k-th kernel: <section>/<label>.<k>.wgsl."""
    return f"{section}/{label(row).replace(' ', '_').replace('>', '')}.{k}.wgsl"


def table_cases(level, n: int = DEFAULT_ELEMENTS) -> list[tuple[str, Case]]:
    """(section, case) of every row of the targets tables, in their order (targets.measure)."""
    cases = []
    for operator, mode in OPS:
        for in_type, out_type in type_pairs(operator, level):
            count = contiguous_elements(n, in_type, out_type)
            cases.append(("contiguous", Case(operator, in_type, out_type, (count,), mode=_member(operator, mode))))
    for operator, mode in LAYOUT_OPS:
        spec = spec_by_name(operator)
        for in_type, out_type in type_pairs(operator, level):
            if in_type not in LAYOUT_TYPES or out_type != spec.output_type(in_type):
                continue
            for section, case in layout_cases(operator, in_type, out_type, n, mode).items():
                if section == "strided-out" and out_type.size >= 4:
                    continue
                cases.append((section, case))
    return cases


def reporting_kernels(compiled, bindings) -> list:
    """The kernels of compiled.bind_with_error_flags(bindings, ...): the NumPy level's variant, which reports
    floating-point errors into a flag word."""
    try:
        return list(compiled.kernels(bindings, error_flags=True))
    except TypeError:  # a version whose kernels() shows the DirectML level's alone, the flag a field of its key
        from gpuops.shaders import Kernel, shader_source
        return [Kernel(plan.key, plan.grid_size, shader_source(plan.key))
                for plan in compiled._dispatch_plans(bindings, error_flags=True)]


def reports_errors(case: Case) -> bool:
    """Whether the case's operator has a variant reporting NumPy's floating-point errors (its row's error_flags)."""
    return getattr(case.spec, "error_flags", False)


def kernels_of(device: gpuops.Device, case: Case, error_flags: bool = False) -> list:
    """The kernels (gpuops.shaders.Kernel) the case's row runs, planned on buffers of its sizes (`error_flags`: the
    variant that reports NumPy's floating-point errors)."""
    desc = make_desc(case)
    spec = case.spec
    strides = tensor_strides(case)
    bindings = {}
    for name in spec.tensor_fields:
        data_type = case.out_dtype if name == spec.output else case.dtype
        size = max(16, -(-implied_size_in_bytes(data_type, case.sizes, strides[name]) // 16) * 16)
        buffer = device.wgpu_device.create_buffer(size=size, usage=buffer_usage(device))
        bindings[name] = gpuops.Binding(buffer, 0, size)
    try:
        compiled = device.compile(desc)
        return reporting_kernels(compiled, bindings) if error_flags else list(compiled.kernels(bindings))
    finally:
        for binding in bindings.values():
            binding.buffer.destroy()


def measure(dump: Path | None, elements: int, backend: str | None, error_flags: bool = False) -> list[dict]:
    policy = gpuops.DispatchPolicy(binding_size_limit=BINDING_LIMIT)
    device = gpuops.Device(policy=policy, **({"backend": backend} if backend else {}))
    rows = []
    for section, case in table_cases(device.feature_level, elements):
        if error_flags and not reports_errors(case):
            continue
        row = {"section": section, "operator": case.operator, "mode": None if case.mode is None else int(case.mode),
               "dtype": case.dtype.name, "out_dtype": case.out_dtype.name}
        row["label"] = label(row)
        kernels = kernels_of(device, case, error_flags)
        row["lines"] = [kernel.source.count("\n") + (not kernel.source.endswith("\n")) for kernel in kernels]
        rows.append(row)
        if dump is not None:
            for k, kernel in enumerate(kernels):
                path = dump / dump_name(section, row, k)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(kernel.source)
    return rows


def show(rows: list[dict]) -> None:
    print(f"{'section':13s} {'row':42s} lines")
    for row in rows:
        print(f"{row['section']:13s} {row['label']:42s} {' + '.join(map(str, row['lines']))}")
    totals = [sum(row["lines"]) for row in rows]
    print(f"{len(rows)} rows; lines per row: min {min(totals)}, median {sorted(totals)[len(totals) // 2]}, "
          f"max {max(totals)}")


def compare(before: list[dict], after: list[dict]) -> None:
    """Rows matched by section and label; a row whose dispatch count changed is shown as it is."""
    after_by = {(row["section"], row["label"]): row for row in after}
    print(f"{'section':13s} {'row':42s} {'before':>7s} {'after':>7s} {'change':>7s}")
    ratios = []
    for row in before:
        other = after_by.get((row["section"], row["label"]))
        was = sum(row["lines"])
        now = sum(other["lines"]) if other else None
        if now is not None:
            ratios.append(now / was)
        change = f"{now / was - 1:+7.0%}" if now is not None else "   gone"
        print(f"{row['section']:13s} {row['label']:42s} {was:7d} {now if now is not None else '-':>7} {change}")
    if ratios:
        print(f"{len(ratios)} rows; after / before: geometric mean {math.prod(ratios) ** (1 / len(ratios)):.2f}, "
              f"from {min(ratios):.2f} to {max(ratios):.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the counts to this file")
    parser.add_argument("--dump", type=Path, help="write every kernel's text under this folder")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="compare two --json records instead of measuring")
    parser.add_argument("--elements", type=int, default=DEFAULT_ELEMENTS, help="the tables' element count")
    parser.add_argument("--backend", help="the WebGPU implementation (gpuops.Device's backend)")
    parser.add_argument("--error-flags", action="store_true",
                        help="only the rows of operators that report floating-point errors, in the variant that does")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(path.read_text()) for path in args.compare)
        compare(before, after)
        return 0
    rows = measure(args.dump, args.elements, args.backend, args.error_flags)
    show(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
