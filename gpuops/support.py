"""DirectML's support tables for the five operators, as declarative rows (docs/semantics.md).

A row applies from its feature level up to the next row of the same operator. `dimension_counts` lists the
allowed DimensionCount values; `types` maps each tensor field to its allowed data types.
"""

from __future__ import annotations

from dataclasses import dataclass

from .enums import DataType as T
from .enums import FeatureLevel as L


@dataclass(frozen=True)
class SupportRow:
    since: L
    dimension_counts: tuple[int, ...]
    types: dict[str, frozenset[T]]

    def __hash__(self) -> int:  # rows are constants; hash by level
        return hash((self.since, self.dimension_counts))


FOUR_D = (4,)
ONE_TO_EIGHT = tuple(range(1, 9))
FLOATS = frozenset({T.FLOAT32, T.FLOAT16})
SMALL_INTS = frozenset({T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8})
INT64S = frozenset({T.INT64, T.UINT64})


def _same(types: frozenset[T], *names: str) -> dict[str, frozenset[T]]:
    return {name: types for name in names}


_UNARY = ("input_tensor", "output_tensor")
_BINARY = ("a_tensor", "b_tensor", "output_tensor")

SUPPORT: dict[str, tuple[SupportRow, ...]] = {
    "ELEMENT_WISE_SIGN": (
        SupportRow(L.LEVEL_2_0, FOUR_D, _same(FLOATS, *_UNARY)),
        SupportRow(L.LEVEL_2_1, FOUR_D, _same(FLOATS | SMALL_INTS, *_UNARY)),
        SupportRow(L.LEVEL_3_0, ONE_TO_EIGHT, _same(FLOATS | SMALL_INTS, *_UNARY)),
        SupportRow(L.LEVEL_4_1, ONE_TO_EIGHT, _same(FLOATS | SMALL_INTS | INT64S, *_UNARY)),
    ),
    "ELEMENT_WISE_IS_NAN": (
        SupportRow(L.LEVEL_2_0, FOUR_D, {"input_tensor": FLOATS, "output_tensor": frozenset({T.UINT8})}),
        SupportRow(L.LEVEL_3_0, ONE_TO_EIGHT,
                   {"input_tensor": FLOATS, "output_tensor": frozenset({T.UINT8, T.UINT32})}),
    ),
    "ELEMENT_WISE_IS_INFINITY": (
        SupportRow(L.LEVEL_2_1, FOUR_D, {"input_tensor": FLOATS, "output_tensor": frozenset({T.UINT8})}),
        SupportRow(L.LEVEL_3_0, ONE_TO_EIGHT, {"input_tensor": FLOATS, "output_tensor": frozenset({T.UINT8})}),
    ),
    "ELEMENT_WISE_MODULUS_TRUNCATE": (
        SupportRow(L.LEVEL_2_1, FOUR_D, _same(FLOATS | SMALL_INTS, *_BINARY)),
        SupportRow(L.LEVEL_3_0, ONE_TO_EIGHT, _same(FLOATS | SMALL_INTS, *_BINARY)),
        SupportRow(L.LEVEL_6_0, ONE_TO_EIGHT, _same(FLOATS | SMALL_INTS | INT64S, *_BINARY)),
    ),
}
SUPPORT["ELEMENT_WISE_MODULUS_FLOOR"] = SUPPORT["ELEMENT_WISE_MODULUS_TRUNCATE"]


def support_row(operator: str, level: L) -> SupportRow | None:
    """The row in force for `operator` at `level`, or None when the operator does not exist there."""
    current = None
    for row in SUPPORT[operator]:
        if row.since <= level:
            current = row
    return current
