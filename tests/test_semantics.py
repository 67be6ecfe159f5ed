"""Every operator x every supported data type, on special values crossed with each other and on random bit
patterns, bit for bit against NumPy on the same dtype."""

import zlib

import numpy as np
import pytest

from .dml import make_desc, run_and_check
from .reference import BINARY, op_cases, random_values, special_values

CASES = list(op_cases())


@pytest.mark.parametrize("case", [c for c, _ in CASES], ids=[i for _, i in CASES])
def test_special_values(device, case):
    operator, mode, in_type, out_type = case
    specials = special_values(in_type)
    if operator in BINARY:
        a, b = np.meshgrid(specials, specials, indexing="ij")  # every special against every special
        values = {0: a.reshape(-1), 1: b.reshape(-1)}
    else:
        values = {0: specials, 1: specials}
    count = values[0].size
    calls = iter(range(2))

    def source(data_type, n):
        return values[next(calls)]

    desc = make_desc(operator, mode, in_type, out_type, (count,))
    run_and_check(device, desc, np.random.default_rng(1), source)


@pytest.mark.parametrize("case", [c for c, _ in CASES], ids=[i for _, i in CASES])
def test_random_bits(device, case):
    operator, mode, in_type, out_type = case
    rng = np.random.default_rng(zlib.crc32(str(case).encode()))
    desc = make_desc(operator, mode, in_type, out_type, (3001,))  # odd count: a partial last word
    run_and_check(device, desc, rng, lambda t, n: random_values(t, n, rng))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_modulus_hard_cases(device, dtype):
    """Huge quotients, subnormal operands and results that round: where a - b*floor(a/b) goes wrong."""
    info = np.finfo(dtype)
    pairs = [(3e38, 1e-38), (float(info.max), float(info.smallest_subnormal)), (1e-30, 1.0), (-1e-30, 1.0),
             (float(info.smallest_subnormal), -1.0), (-float(info.smallest_subnormal), 1.0), (5.0, 3.0),
             (-5.0, 3.0), (5.0, -3.0), (-5.0, -3.0), (0.0, -3.0), (-0.0, 3.0), (1.0, np.inf), (-1.0, np.inf),
             (1.0, -np.inf), (np.inf, 2.0), (np.nan, 2.0), (2.0, np.nan), (2.0, 0.0), (2.0, -0.0), (0.1, 0.01),
             (16777217.0, 3.0), (1e10, 3.0), (7.0, 7.0), (-7.0, 7.0), (float(info.max), 3.0)]
    with np.errstate(over="ignore"):
        a = np.array([p[0] for p in pairs], dtype)
        b = np.array([p[1] for p in pairs], dtype)
    values = iter([a, b])
    for operator in ("ELEMENT_WISE_MODULUS_FLOOR", "ELEMENT_WISE_MODULUS_TRUNCATE"):
        values = iter([a, b])
        from gpuops import DataType
        data_type = DataType.from_numpy(np.dtype(dtype))
        desc = make_desc(operator, None, data_type, data_type, (len(pairs),))
        run_and_check(device, desc, np.random.default_rng(2), lambda t, n: next(values))
