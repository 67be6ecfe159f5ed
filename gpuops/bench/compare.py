"""`gpuops-bench compare BASE.json NEW.json`: two runs of `default`, `op` or `sweep`, or two runs of `targets`, set
side by side, row by row.

Rows are matched by case: operator, mode, types, sizes, layout and cache state; in targets documents, section,
label and sizes, and every other timed figure of the document (the copies, PyTorch's and CuPy's figures, the host
section's) by its section and name. Each pair is judged on its samples, which the documents keep: the ratio of the
medians NEW / BASE, a bootstrap interval of that ratio, and the p-value of a Mann-Whitney U test (stats.py). A row
is marked slower or faster only when the difference is beyond the noise: the rank test finds it (p below `alpha`)
and it is larger than either run's noise figure for the row and than `min_change`. Reference figures (neither
gpuops' operators nor its host path: the copies, PyTorch, CuPy, wgpu alone) are judged too, never fail a comparison,
and say when the machine differed between the runs. Runs of different adapters or WebGPU implementations are refused unless allowed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import GpuOpsError
from . import report, targets
from .report import ADAPTER_IDENTITY
from .stats import mann_whitney_u, ratio_interval, resolved, summary

COMMANDS = ("default", "op", "sweep")  # the documents with result rows
TARGETS = targets.COMMAND  # the documents of the performance goals' sections, compared with each other only
DEFAULT_ALPHA = 0.01
DEFAULT_MIN_CHANGE = 0.01
CONFIDENCE = 0.95
SLOWER, FASTER, SAME = "slower", "faster", "within noise"
# What may differ between two runs of one adapter and changes the times: said beside the comparison.
ENVIRONMENT = (("adapter", "driver"), ("versions", "gpuops"), ("versions", "wgpu"), ("versions", "wgpu_native"),
               ("versions", "wgpudawn"), ("versions", "torch"), ("versions", "cupy"), ("feature_level",),
               ("runtime_checks",), ("settings", "repeats"), ("settings", "cuda_context"), ("settings", "flush_bytes"),
               ("timestamp_conversion", "method"), ("machine", "hostname"))


class CompareError(GpuOpsError):
    """A file compare cannot read, or two runs it refuses to set side by side."""


@dataclass(frozen=True)
class CompareOptions:
    fail_above: float | None = None  # a fraction: exit status 1 when a row (not a reference) is marked slower by more
    alpha: float = DEFAULT_ALPHA
    min_change: float = DEFAULT_MIN_CHANGE  # a fraction: smaller changes are never marked
    host: bool = False  # compare host time per dispatch instead of GPU time
    allow_different_adapters: bool = False


@dataclass(frozen=True)
class RowComparison:
    """One case in both runs."""

    row: dict  # NEW's row (its case names the comparison)
    basis: str  # "gpu" or "host": which samples were compared
    base_median_ns: float
    new_median_ns: float
    base_samples: int
    new_samples: int
    base_noise: float | None
    new_noise: float | None
    ratio: float  # NEW / BASE, of the medians
    low: float  # the bootstrap interval of the ratio
    high: float
    p_value: float
    verdict: str  # SLOWER, FASTER or SAME
    fails: bool  # slower by more than --fail-above (never a reference figure)

    @property
    def change(self) -> float:
        return self.ratio - 1.0


@dataclass(frozen=True)
class Comparison:
    rows: list[RowComparison]
    only_base: list[dict]
    only_new: list[dict]
    untimed: list[dict]  # a wrong result (never timed) in either run
    notes: list[str]


def load(path: str | Path) -> dict:
    """A document compare can use: JSON of schema gpuops-bench/1 from default, op, sweep or targets, keeping its
    samples."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompareError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CompareError(f"{path}: not JSON ({exc})") from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == targets.LEGACY_SCHEMA:
        raise CompareError(f"{path}: a {schema} record, written before targets rows kept their samples; compare "
                           "needs each row's samples: run 'gpuops-bench targets' again")
    if schema != report.SCHEMA:
        raise CompareError(f"{path}: schema {schema!r}: not a gpuops-bench results document ({report.SCHEMA!r})")
    if data.get("command") not in COMMANDS + (TARGETS,):
        raise CompareError(f"{path}: a {data.get('command')!r} document; compare reads those of "
                           f"{', '.join(COMMANDS + (TARGETS,))}, whose rows keep their samples")
    rows = data.get("results") or [] if data["command"] != TARGETS else \
        [row for section in targets.ROW_SECTIONS for row in data.get(section) or []]
    lacking = [row for row in rows if row.get("exact") and "host_samples_ns" not in row]
    if data["command"] == TARGETS and data.get("host") and "samples" not in data["host"]:
        lacking.append(data["host"])
    if lacking:
        raise CompareError(f"{path}: samples are missing: its {len(lacking)} timed row(s) keep summaries only "
                           "(written by a gpuops-bench that did not keep samples); compare needs each row's "
                           "samples: run the benchmark again")
    return data


def case_key(row: dict) -> tuple:
    """What makes two rows the same case (for a targets document's figures, see figures)."""
    if "section" in row:
        return row["section"], row["case"], tuple(row["sizes"])
    return (row["operator"], row.get("mode"), row["dtype"], row["output_dtype"], tuple(row["sizes"]),
            row["layout"], row.get("cache", "warm"))


def case_label(row: dict) -> str:
    """'sign float32 1024 packed warm', 'contiguous sign float32 1024': a row by its case, for messages."""
    if "section" in row:
        return " ".join([row["section"], row["case"]] + (["x".join(map(str, row["sizes"]))] if row["sizes"] else []))
    return f"{report.row_name(row)} {report.row_types(row)} {'x'.join(map(str, row['sizes']))} {row['layout']} " \
           f"{row.get('cache', 'warm')}"


LIBRARIES = {"torch": "PyTorch", "cupy": "CuPy"}


def figures(doc: dict) -> list[dict]:
    """Every timed figure of a targets document as a row compare can judge: {"section", "case", "sizes", "exact",
    "reference", "gpu_samples_ns", "host_samples_ns"}. The copies ("copy": "WGSL copy", and "PyTorch copy" with the
    samples of every PyTorch copy of the run), each row of a row section by its label and PyTorch's and CuPy's
    figures for it ("sign float32 PyTorch"), and the host section's figures by their keys (samples in ns)."""
    elements = [(doc.get("settings") or {}).get("elements")]

    def figure(section, case, sizes, gpu=None, host=None, exact=True, reference=False) -> dict:
        return {"section": section, "case": case, "sizes": list(sizes), "exact": exact, "reference": reference,
                "gpu_samples_ns": gpu or None, "host_samples_ns": host or None}

    out = []
    copy = doc.get("wgsl_copy")
    if copy:
        out.append(figure("copy", "WGSL copy", elements, copy["gpu_samples_ns"], copy["host_samples_ns"],
                          reference=True))
    torch_copies = [t["gpu_samples_ns"] for t in doc.get("torch_copy_samples") or [] if "gpu_samples_ns" in t]
    if torch_copies:
        out.append(figure("copy", "PyTorch copy", elements, [t for s in torch_copies for t in s], reference=True))
    for section in targets.ROW_SECTIONS:
        for row in doc.get(section) or []:
            name = targets.label(row)
            out.append(figure(section, name, row["sizes"], row["gpu_samples_ns"], row["host_samples_ns"],
                              row["exact"]))
            for library, library_name in LIBRARIES.items():
                entry = row.get(library) or {}
                if "gpu_samples_ns" in entry:
                    out.append(figure(section, f"{name} {library_name}", row["sizes"], entry["gpu_samples_ns"],
                                      reference=True))
    host = doc.get("host") or {}
    for key, sampled in (host.get("samples") or {}).items():
        if not sampled["values"]:  # the GPU time of a run without timestamps
            continue
        values = [v * (1000 if "_us" in key else 1) for v in sampled["values"]]
        gpu = key == "large_gpu_median_ns"
        out.append(figure("host", key, [], values if gpu else None, None if gpu else values,
                          reference=key.startswith("bare_")))
    return out


def rows_of(doc: dict) -> dict[tuple, dict]:
    """A document's rows by case_key."""
    rows = figures(doc) if doc.get("command") == TARGETS else doc["results"]
    return {case_key(row): row for row in rows}


def _adapter_words(doc: dict) -> str:
    adapter = doc["adapter"]
    return f"{adapter.get('name')!r} ({adapter.get('implementation')}, {adapter.get('backend')})"


def check_adapters(base: dict, new: dict, names: tuple[str, str], allow: bool) -> list[str]:
    """Refuse runs of different adapters or WebGPU implementations (unless `allow`); notes on the rest of the
    environment that differs."""
    notes = []
    identical = all(base["adapter"].get(k) == new["adapter"].get(k) for k in ADAPTER_IDENTITY)
    if not identical:
        message = f"{names[0]} ran on {_adapter_words(base)}, {names[1]} on {_adapter_words(new)}"
        if not allow:
            raise CompareError(f"{message}: compare refuses runs of different adapters or WebGPU implementations "
                               "(--allow-different-adapters compares them anyway)")
        notes.append(f"different adapters, compared as asked: {message}")
    for path in ENVIRONMENT:
        before, after = _get(base, path), _get(new, path)
        if before != after:
            notes.append(f"{'.'.join(path)} differs: {before!r} in {names[0]}, {after!r} in {names[1]}")
    return notes


def _get(doc: dict, path: tuple[str, ...]):
    for key in path:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def compare_documents(base: dict, new: dict, options: CompareOptions = CompareOptions(),
                      names: tuple[str, str] = ("BASE", "NEW")) -> Comparison:
    if (base.get("command") == TARGETS) != (new.get("command") == TARGETS):
        raise CompareError(f"{names[0]} is a {base.get('command')!r} document and {names[1]} a "
                           f"{new.get('command')!r} one: compare sets a targets document beside another targets "
                           "document only, and runs of default, op and sweep beside each other")
    notes = check_adapters(base, new, names, options.allow_different_adapters)
    base_rows, new_rows = rows_of(base), rows_of(new)
    compared, untimed = [], []
    for key, row in new_rows.items():
        before = base_rows.get(key)
        if before is None:
            continue
        if not (before["exact"] and row["exact"]):
            untimed.append(row)
            continue
        compared.append(compare_rows(before, row, options))
    only_base = [row for key, row in base_rows.items() if key not in new_rows]
    only_new = [row for key, row in new_rows.items() if key not in base_rows]
    return Comparison(compared, only_base, only_new, untimed, notes)


def compare_rows(base: dict, new: dict, options: CompareOptions = CompareOptions()) -> RowComparison:
    """The two rows' samples judged: GPU times where both runs have them (unless `options.host`), else host
    times; with `options.host`, GPU times where a figure has no host times (CUDA events)."""
    has = {basis: resolved(base.get(f"{basis}_samples_ns") or []) and resolved(new.get(f"{basis}_samples_ns") or [])
           for basis in ("gpu", "host")}
    basis = "host" if (options.host and has["host"]) or not has["gpu"] else "gpu"
    before, after = base[f"{basis}_samples_ns"], new[f"{basis}_samples_ns"]
    base_summary, new_summary = summary(before), summary(after)
    ratio = new_summary["median"] / base_summary["median"]
    low, high = ratio_interval(before, after, CONFIDENCE)
    _, p_value = mann_whitney_u(before, after)
    threshold = max(options.min_change, base_summary["noise"] or 0.0, new_summary["noise"] or 0.0)
    verdict = SAME
    if p_value < options.alpha and abs(ratio - 1.0) > threshold:
        verdict = SLOWER if ratio > 1.0 else FASTER
    fails = verdict == SLOWER and options.fail_above is not None and ratio - 1.0 > options.fail_above \
        and not new.get("reference")
    return RowComparison(new, basis, base_summary["median"], new_summary["median"], len(before), len(after),
                         base_summary["noise"], new_summary["noise"], ratio, low, high, p_value, verdict, fails)


def _percent(fraction: float) -> str:
    return f"{100 * fraction:+.1f}%"


def render(comparison: Comparison, base: dict, new: dict, names: tuple[str, str],
           options: CompareOptions = CompareOptions()) -> str:
    """The comparison as lines: the two runs, a table (one line per case in both), what was left out, notes."""
    out = [run_line(label, name, doc) for label, name, doc in zip(("BASE", "NEW"), names, (base, new))]
    out.append(f"{'host time per dispatch' if options.host else 'GPU time'}: medians of each row's samples; ratio "
               f"NEW / BASE; {CONFIDENCE:.0%} interval: bootstrap of the ratio; p: Mann-Whitney U, two-sided; marked "
               f"only beyond the noise: p < {options.alpha:g} and a change above the larger of either row's noise "
               f"and {options.min_change:.1%}")
    of_targets = new.get("command") == TARGETS
    cache = any(c.row.get("cache") == "cold" for c in comparison.rows)
    headers = ["section", "figure", "sizes"] if of_targets else \
        ["operator", "types", "sizes", "layout"] + (["cache"] if cache else [])
    first_number = len(headers)
    headers += ["BASE", "NEW", "ratio", f"{CONFIDENCE:.0%} interval", "p", "samples", "noise", "verdict"]
    lines = []
    for c in comparison.rows:
        row = c.row
        if of_targets:
            cells = [row["section"], row["case"] + (" (ref)" if row["reference"] else ""),
                     "x".join(map(str, row["sizes"])) or "-"]
        else:
            cells = [report.row_name(row), report.row_types(row), "x".join(map(str, row["sizes"])), row["layout"]]
            cells += [row.get("cache", "warm")] if cache else []
        host = "*" if c.basis != ("host" if options.host else "gpu") else ""
        verdict = c.verdict if c.verdict == SAME else f"{c.verdict.upper()} {_percent(c.change)}"
        if c.fails:
            verdict += f" (above {options.fail_above:.1%})"
        cells += [report.format_ns(c.base_median_ns) + host, report.format_ns(c.new_median_ns) + host,
                  f"{c.ratio:.3f}", f"[{c.low:.3f}, {c.high:.3f}]", f"{c.p_value:.2g}",
                  f"{c.base_samples}/{c.new_samples}",
                  f"{report.format_noise(c.base_noise)}/{report.format_noise(c.new_noise)}", verdict]
        lines.append(cells)
    out += ["", report.aligned(headers, lines, first_number) if lines else "no case is in both runs", ""]
    slower = sum(c.verdict == SLOWER for c in comparison.rows)
    faster = sum(c.verdict == FASTER for c in comparison.rows)
    out.append(f"{len(comparison.rows)} case(s) in both runs: {slower} slower, {faster} faster beyond the noise, "
               f"{len(comparison.rows) - slower - faster} within it")
    for what, rows in (("only in BASE", comparison.only_base), ("only in NEW", comparison.only_new),
                       ("not timed (a wrong result) in a run", comparison.untimed)):
        if rows:
            out.append(f"{what}: " + "; ".join(case_label(row) for row in rows))
    if any(c.basis == "host" for c in comparison.rows) and not options.host:
        out.append("*: host time (a run without GPU times, or a host-side figure)" if of_targets else
                   "*: host time per dispatch (a run without GPU times)")
    if any(c.basis == "gpu" for c in comparison.rows) and options.host:
        out.append("*: GPU time (a figure without host times: CUDA events, or the host section's GPU time)")
    if of_targets:
        out.append("(ref): a reference figure, neither gpuops' operators nor its host path (the copies, PyTorch, "
                   "CuPy, wgpu alone): never fails --fail-above")
        moved = [c for c in comparison.rows if c.row["reference"] and c.verdict != SAME]
        if moved:
            out.append(f"note: {len(moved)} reference figure(s) changed beyond the noise ("
                       + "; ".join(f"{case_label(c.row)} {_percent(c.change)}" for c in moved)
                       + "): the machine differed between the runs; read the other verdicts with that in mind")
    out += [f"note: {note}" for note in comparison.notes]
    return "\n".join(out)


def run_line(label: str, name: str, doc: dict) -> str:
    adapter = doc["adapter"]
    return (f"{label} {name}: {doc.get('command')} run of {doc.get('created')} on {adapter.get('name')} "
            f"({adapter.get('implementation')}, {adapter.get('backend')}; driver {adapter.get('driver') or '-'})")


def failures(comparison: Comparison) -> list[RowComparison]:
    return [c for c in comparison.rows if c.fails]
