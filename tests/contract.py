"""DirectML's contract as docs/semantics.md states it, transcribed from DirectML's documentation independently of
gpuops' operator rows: the operators table (id, the level each exists from, its tensors) and the support table (per
operator and feature level: dimension counts, input types, output types). tests/test_validation.py checks
gpuops.validate against it, so a wrong row in gpuops/operators.py, or an operator the page does not document, fails
there."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gpuops import DataType, FeatureLevel

SEMANTICS = Path(__file__).resolve().parents[1] / "docs" / "semantics.md"


@dataclass(frozen=True)
class ContractRow:
    since: FeatureLevel
    dimension_counts: tuple[int, ...]
    input_types: frozenset[DataType]
    output_types: frozenset[DataType] | None  # None: the inputs' type, which every tensor must have


def _table(text: str, header: str) -> list[list[str]]:
    """The cells of the rows of the markdown table whose header row starts with `header`."""
    lines = text[text.index(header):].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip().strip("`") for cell in line.strip("|").split("|")])
    return rows


def _types(cell: str) -> frozenset[DataType]:
    return frozenset(DataType[name.strip()] for name in cell.split(","))


def _dimensions(cell: str) -> tuple[int, ...]:
    if cell.startswith("exactly "):
        return (int(cell.removeprefix("exactly ")),)
    low, high = re.fullmatch(r"(\d+) to (\d+)", cell).groups()
    return tuple(range(int(low), int(high) + 1))


def support_rows() -> dict[str, tuple[ContractRow, ...]]:
    """Operator name (ELEMENT_WISE_...) -> its support rows, in order of level."""
    rows: dict[str, list[ContractRow]] = {}
    for operator, since, dimensions, inputs, output in _table(SEMANTICS.read_text(), "| operator | from |"):
        same = output.startswith("the input")
        rows.setdefault(operator, []).append(ContractRow(FeatureLevel.parse(since), _dimensions(dimensions),
                                                         _types(inputs), None if same else _types(output)))
    return {operator: tuple(found) for operator, found in rows.items()}


def operators_table() -> dict[str, tuple[int, str, tuple[str, ...]]]:
    """Operator name -> (DirectML's id, the level it exists from, its tensors and attributes as the page names them)."""
    return {operator: (int(dml_id), since, tuple(name.strip().strip("`") for name in tensors.split(",")))
            for operator, dml_id, since, tensors, _ in _table(SEMANTICS.read_text(), "| operator (`DML_OPERATOR_...`)")}
