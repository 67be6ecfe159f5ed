"""NumPy as the oracle for benchmarks: a kernel is timed only after its result matched this bit for bit.

Kept apart from the tests' oracle on purpose (an installed gpuops has no tests/), and written from the contract
(docs/semantics.md): SIGN gives +0 for NaN and -0, IS_INFINITY follows its mode, MODULUS_FLOOR is np.remainder
and MODULUS_TRUNCATE is np.fmod on the same dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..enums import DataType, IsInfinityMode


def numpy_function(operator: str, mode: IsInfinityMode | None, out_type: DataType) -> Callable[..., np.ndarray]:
    """The NumPy computation of `operator` (a spec name such as 'ELEMENT_WISE_SIGN') returning `out_type`."""
    out_dtype = out_type.numpy_dtype
    if operator == "ELEMENT_WISE_SIGN":
        return _sign
    if operator == "ELEMENT_WISE_IS_NAN":
        return lambda x: np.isnan(x).astype(out_dtype)
    if operator == "ELEMENT_WISE_IS_INFINITY":
        test = {IsInfinityMode.EITHER: np.isinf, IsInfinityMode.POSITIVE: np.isposinf,
                IsInfinityMode.NEGATIVE: np.isneginf}[IsInfinityMode.parse(mode or 0)]
        return lambda x: test(x).astype(out_dtype)
    if operator == "ELEMENT_WISE_MODULUS_FLOOR":
        return np.remainder
    if operator == "ELEMENT_WISE_MODULUS_TRUNCATE":
        return np.fmod
    raise ValueError(f"no NumPy reference for {operator!r}")


def _sign(x: np.ndarray) -> np.ndarray:
    result = np.sign(x)
    if x.dtype.kind == "f":  # gpuops decision: NaN and -0 give +0
        result = np.where(np.isnan(x) | (x == 0), x.dtype.type(0), result)
    return result.astype(x.dtype)


def expected(operator: str, mode: IsInfinityMode | None, out_type: DataType, *inputs: np.ndarray) -> np.ndarray:
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
