"""The shape of DirectML's support tables (docs/semantics.md): rows by feature level, in DirectML's type groups.
Each operator's rows are part of its declaration (gpuops/operators.py: OperatorSpec.support).

A row applies from its feature level up to the next row of the same operator. `dimension_counts` lists the
allowed DimensionCount values; `input_types` the data types every input allows, `output_types` the output's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .enums import DataType as T
from .enums import FeatureLevel as L

FOUR_D = (4,)
ONE_TO_EIGHT = tuple(range(1, 9))
FLOATS = frozenset({T.FLOAT32, T.FLOAT16})
SMALL_INTS = frozenset({T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8})
INT64S = frozenset({T.INT64, T.UINT64})


@dataclass(frozen=True)
class SupportRow:
    since: L
    dimension_counts: tuple[int, ...]
    input_types: frozenset[T]
    output_types: frozenset[T] | None = None  # None: the input types

    def __post_init__(self) -> None:
        if self.output_types is None:
            object.__setattr__(self, "output_types", self.input_types)


def row_at(rows: Sequence[SupportRow], level: L) -> SupportRow | None:
    """The row in force at `level`, or None where the operator does not exist there."""
    current = None
    for row in rows:
        if row.since <= level:
            current = row
    return current
