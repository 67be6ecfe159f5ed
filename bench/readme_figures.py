"""The README's performance figures, made from the records in bench/results/ that they name.

`python bench/readme_figures.py` prints the README's headline sentence and its performance table; tests/test_readme.py
checks that the README holds both exactly as printed, so that no figure drifts from its record. A new record for a GPU
and WebGPU implementation the table has replaces the file of the same name (then print, and paste what changed);
another GPU or implementation is another entry in COLUMNS. Figures are rounded down: a figure at a goal met it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

# The table's columns: (GPU, WebGPU implementation), as the records' file names begin: <gpu>-<implementation>-...
COLUMNS = (("h100", "wgpu-native"), ("h100", "dawn"), ("h200", "wgpu-native"), ("h200", "dawn"))
GPU_NAMES = {"h100": "H100", "h200": "H200"}
IMPLEMENTATION_NAMES = {"wgpu-native": "wgpu-native", "dawn": "Dawn"}


def load(gpu: str, implementation: str, record: str) -> dict | None:
    """bench/results/<gpu>-<implementation>-<record>, or None where there is no such record."""
    path = RESULTS / f"{gpu}-{implementation}-{record}"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def row_key(row: dict) -> tuple:
    return row["operator"], row.get("mode"), row["dtype"], row.get("out_dtype")


def exact(rows: list[dict]) -> list[dict]:
    """The rows, each checked against NumPy before it was timed (a record with a row that was not is refused)."""
    if not rows or not all(row.get("exact") for row in rows):
        raise ValueError("a record without rows, or with a row not checked exact against NumPy")
    return rows


def floor_to(value: float, decimals: int) -> float:
    scale = 10**decimals
    return math.floor(value * scale + 1e-9) / scale


def span(values: list[float], decimals: int, unit: str) -> str:
    """'lowest-highest' of `values`, each rounded down."""
    low, high = (f"{floor_to(v, decimals):.{decimals}f}" for v in (min(values), max(values)))
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"


# -- the figures: each from one record of a column, None where the column has no such record ---------------------

def contiguous_percent_of_copy(doc: dict) -> list[float]:
    """Every contiguous row's bandwidth over PyTorch's copy of the same run (the copy roof), in %."""
    roof = doc["torch_copy"]["gbps"]
    return [100 * row["gbps"] / roof for row in exact(doc["contiguous"])]


def modulus_against_torch(doc: dict) -> list[float]:
    """MODULUS_FLOOR and MODULUS_TRUNCATE rows against torch.remainder / torch.fmod on the same data (x)."""
    return [row["gbps"] / row["torch"]["gbps"] for row in exact(doc["contiguous"])
            if row["operator"].startswith("ELEMENT_WISE_MODULUS_") and (row.get("torch") or {}).get("gbps")]


def percent_of_packed(section: str) -> Callable[[dict], list[float]]:
    """A layout section's rows over the packed 2-D rows of the same operator and types in the same run, in %."""
    def figures(doc: dict) -> list[float]:
        packed = {row_key(row): row["gbps"] for row in exact(doc["packed-2d"])}
        return [100 * row["gbps"] / packed[row_key(row)] for row in exact(doc[section])]
    return figures


def conversions_percent_of_copy(doc: dict) -> list[float]:
    """Transposed 2-D and NCHW -> NHWC inputs into a row-major output over the copy roof of the same run, in %."""
    roof = doc["torch_copy"]["gbps"]
    return [100 * row["gbps"] / roof for section in ("transposed", "nchw-to-nhwc") for row in exact(doc[section])]


def default_data_modulus(doc: dict) -> list[float]:
    """float32 MODULUS_* at 2^26 elements on gpuops-bench's default data (5% special values) over a plain WGSL copy
    of the same bytes in the same run, in %."""
    return [row["percent_of_copy"] for row in exact(doc["results"])
            if row["operator"].startswith("ELEMENT_WISE_MODULUS_") and row["dtype"] == "FLOAT32"
            and row["elements"] == 1 << 26]


@dataclass(frozen=True)
class Row:
    measure: str  # what the figures are, on which data
    record: str  # the record's file name after <gpu>-<implementation>-
    figures: Callable[[dict], list[float]]
    decimals: int
    unit: str

    def cell(self, gpu: str, implementation: str) -> str:
        doc = load(gpu, implementation, self.record)
        return "-" if doc is None else span(self.figures(doc), self.decimals, self.unit)


ROWS = (
    Row("every operator x type, contiguous, 2^26-2^28 elements (40 rows): % of PyTorch's copy of the same bytes",
        "targets.json", contiguous_percent_of_copy, 1, "%"),
    Row("MODULUS_FLOOR / MODULUS_TRUNCATE (14 rows) against `torch.remainder` / `torch.fmod`", "targets.json",
        modulus_against_torch, 2, "x"),
    Row("a broadcast operand, 16384 x 16384 (14 rows): % of the packed case", "broadcast-2e28.json",
        percent_of_packed("broadcast"), 1, "%"),
    Row("`out[::2]` of 8/16-bit outputs (8 rows): % of packed (a word is the narrowest store)", "layouts.json",
        percent_of_packed("strided-out"), 1, "%"),
    Row("transposed 2-D and NCHW -> NHWC inputs into a row-major output (tiled kernels): % of PyTorch's copy",
        "layout-conversions.json", conversions_percent_of_copy, 1, "%"),
    Row("float32 MODULUS_* at 2^26 on gpuops-bench's default data (5% special values): % of a WGSL copy",
        "sweep-float32.json", default_data_modulus, 1, "%"),
)


def performance_table() -> str:
    """The README's performance table: a column per GPU and implementation, a row per measure with the record it
    comes from."""
    head = ["measure (goal data: 0.1% inf and 0.1% NaN; but where a row says otherwise)", "record"]
    head += [f"{GPU_NAMES[gpu]} {IMPLEMENTATION_NAMES[implementation]}" for gpu, implementation in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in ROWS:
        cells = [row.measure, f"`<gpu>-<implementation>-{row.record}`"]
        cells += [row.cell(gpu, implementation) for gpu, implementation in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def headline() -> str:
    """The README's headline on speed: the lowest contiguous row of every column's targets record, on the goals'
    data, and float32 modulus on the default data beside it."""
    lowest = min(min(contiguous_percent_of_copy(doc)) for gpu, implementation in COLUMNS
                 if (doc := load(gpu, implementation, "targets.json")) is not None)
    default = span(default_data_modulus(load("h100", "wgpu-native", "sweep-float32.json")), 0, "%")
    return (f"At the memory's speed: on an NVIDIA H100 and H200 every operator and type runs at "
            f"{floor_to(lowest, 1):.1f}% or more of the speed of PyTorch's own copy of the same bytes on data with "
            f"0.1% inf and 0.1% NaN (`*-targets.json`); on gpuops-bench's default data, with 5% special values, "
            f"float32 modulus runs at {default} of a plain copy (`h100-wgpu-native-sweep-float32.json`).")


if __name__ == "__main__":
    print(headline(), end="\n\n")
    print(performance_table(), end="")
