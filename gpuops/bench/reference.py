"""NumPy as the oracle for benchmarks: a kernel is timed only after its result matched this bit for bit.

Kept apart from the tests' oracle on purpose (an installed gpuops has no tests/), and written from the contract
(docs/semantics.md): each operator's row holds its NumPy computation (OperatorSpec.numpy_reference); SIGN gives
+0 for NaN and -0, IS_INFINITY follows its mode, MODULUS_FLOOR is np.remainder and MODULUS_TRUNCATE is np.fmod
on the same dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..enums import DataType
from ..errors import ValidationError
from ..operators import spec_by_name


def numpy_function(operator: str, mode: Any, out_type: DataType) -> Callable[..., np.ndarray]:
    """The NumPy computation of `operator` (a spec name such as 'ELEMENT_WISE_SIGN') returning `out_type`; `mode`
    sets the operator's attribute (IS_INFINITY's mode; None: its default)."""
    spec = spec_by_name(operator)
    if spec.numpy_reference is None:
        raise ValidationError(f"DML_OPERATOR_{spec.name}: OperatorSpec.numpy_reference: None; the row gives no "
                              "NumPy reference to check results against")
    reference, attributes = spec.numpy_reference, spec.mode_values(mode)
    return lambda *inputs: reference(inputs, attributes, out_type)


def expected(operator: str, mode: Any, out_type: DataType, *inputs: np.ndarray) -> np.ndarray:
    """What gpuops must produce, bit for bit (NaN payloads aside)."""
    with np.errstate(all="ignore"):  # x % 0 and friends are defined results here, not warnings
        return np.asarray(numpy_function(operator, mode, out_type)(*inputs))


@dataclass(frozen=True)
class Mismatch:
    """Where a result differs from NumPy: the count and the first few places, ready to print."""

    count: int
    total: int
    examples: tuple[str, ...]

    def describe(self) -> str:
        return (f"{self.count} of {self.total} elements differ from NumPy; first at "
                + "; ".join(self.examples))


def compare(got: np.ndarray, want: np.ndarray, inputs: tuple[np.ndarray, ...] = (), limit: int = 5) \
        -> Mismatch | None:
    """None when every element has the same bits (two NaNs match whatever their payloads), else a Mismatch."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return Mismatch(got.size, got.size, (f"result has dtype {got.dtype} and shape {got.shape}, NumPy "
                                             f"{want.dtype} and {want.shape}",))
    unsigned = np.dtype(f"u{got.dtype.itemsize}")
    differ = np.ascontiguousarray(got).view(unsigned) != np.ascontiguousarray(want).view(unsigned)
    if got.dtype.kind == "f":
        differ &= ~(np.isnan(got) & np.isnan(want))
    count = int(differ.sum())
    if count == 0:
        return None
    examples = []
    for index in map(tuple, np.argwhere(differ)[:limit]):
        operands = ", ".join(repr(x[index]) for x in inputs)
        examples.append(f"index {list(int(i) for i in index)}: inputs ({operands}) gave {got[index]!r}, "
                        f"NumPy {want[index]!r}")
    return Mismatch(count, int(got.size), tuple(examples))
