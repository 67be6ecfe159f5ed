"""Every operator x every supported data type, on special values crossed with each other and on random bit
patterns, bit for bit against NumPy on the same dtype."""

import zlib

import numpy as np
import pytest

from gpuops import DataType
from gpuops.bench.workload import worst_values

from .dml import device_with, kernel_keys, make_desc, run_and_check
from .reference import (
    BINARY,
    assert_same_bits,
    op_cases,
    random_values,
    reference,
    run_numpy_api,
    special_values,
)

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


BINARY_CASES = [(c, i) for c, i in CASES if c[0] in BINARY]


@pytest.mark.parametrize("case", [c for c, _ in BINARY_CASES], ids=[i for _, i in BINARY_CASES])
def test_worst_case_data(device, case):
    """The benchmark's worst-case data (gpuops-bench --data worst): float dividends of the largest exponent over
    small subnormal divisors, every remainder step taken; integer quotients of the largest sizes."""
    operator, mode, in_type, out_type = case
    rng = np.random.default_rng(zlib.crc32(str(case).encode()))
    fields = iter(("a_tensor", "b_tensor"))
    desc = make_desc(operator, mode, in_type, out_type, (3001,))
    run_and_check(device, desc, rng, lambda t, n: worst_values(t, n, rng, next(fields)))


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
    for operator in sorted(BINARY):
        values = iter([a, b])
        data_type = DataType.from_numpy(np.dtype(dtype))
        desc = make_desc(operator, None, data_type, data_type, (len(pairs),))
        run_and_check(device, desc, np.random.default_rng(2), lambda t, n: next(values))


def test_float32_modulus_divisors_at_the_bounds(device):
    """float32 remainders whose divisor lies about the usual path's bounds (wgsl/lib/f32_bits.wgsl): 2^-100, from
    which a remainder is normal and the floored subtraction needs no scaling, and 2^109, below which an infinite or
    NaN dividend's exponent field is at least 20 above the divisor's. Divisors of every exponent field from 1 to 40
    and from 215 to 254 (and subnormal ones), dividends from the divisor to 2^24 times it (past the largest finite
    value: infinities and NaNs), random significands and signs, dividends next to multiples of the divisor, whose
    remainders are the smallest, the same pairs swapped (dividends below the divisor, subnormal ones among them),
    and infinite and NaN dividends against every large divisor field."""
    rng = np.random.default_rng(103)
    n = 20000
    fields = np.concatenate([rng.integers(0, 41, n), rng.integers(215, 255, n)]).astype(np.uint32)
    n = fields.size
    b = (fields << 23) | rng.integers(0, 1 << 23, n, dtype=np.uint32)
    b = np.where(b == 0, 1, b).astype(np.uint32)
    a = b + (rng.integers(0, 25, n).astype(np.uint32) << 23)
    # Past the largest exponent field a dividend's bits would reach the sign bit: large divisors' dividends stop at
    # a NaN (infinities and NaNs on the way).
    a = np.minimum(a, np.where(b >= 215 << 23, 0x7fc00000, 0xffffffff)).astype(np.uint32)
    a = np.where(rng.random(n) < 0.5, a, a & ~np.uint32(0x7fffff) | (b & 0x7fffff) ^ rng.integers(0, 4, n,
                                                                                                  dtype=np.uint32))
    # Remainders of one, two and three of the divisor's units in the last place, at every exponent field.
    edge_b = (np.repeat(np.arange(1, 41, dtype=np.uint32), 12) << 23) | rng.integers(0, 1 << 22, 480,
                                                                                      dtype=np.uint32) << 1
    edge_a = edge_b + np.tile(np.arange(1, 4, dtype=np.uint32), 160)
    a, b = np.concatenate([a, edge_a]), np.concatenate([b, edge_b])
    a, b = np.concatenate([a, b]), np.concatenate([b, a])
    special_b = np.repeat(np.arange(215, 255, dtype=np.uint32) << 23, 3) | 0x123
    special_a = np.tile(np.array([0x7f800000, 0x7fc00000, 0x7f800001], np.uint32), 40)
    a, b = np.concatenate([a, special_a]), np.concatenate([b, special_b])
    n = a.size
    signs = rng.integers(0, 2, (2, n), dtype=np.uint32) << 31
    a, b = (a | signs[0]).view(np.float32), (b | signs[1]).view(np.float32)
    for operator in sorted(BINARY):
        got = run_numpy_api(operator, None, DataType.FLOAT32, a, b, device=device)
        assert_same_bits(got, reference(operator, None, DataType.FLOAT32, a, b), a, b)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_modulus_64bit_quotients(device, dtype):
    """64-bit remainders take at most 16 quotient bits a step from a float estimate (wgsl/lib/u64.wgsl): every
    pair of 2^k - 1, 2^k, 2^k + 1 (quotients of every size up to 2^64 - 1, b = 1, b = a, b = a + 1) and dividends
    next to random multiples of random divisors, where an estimate is one off."""
    signed = dtype == np.int64
    values = {2**k + d for k in range(64) for d in (-1, 0, 1)}
    if signed:
        values = {v for v in values if v <= 2**63} | {2**64 - v for v in values if 0 < v <= 2**63}
    edges = np.array(sorted(v % 2**64 for v in values), np.uint64).view(dtype)
    a, b = (x.reshape(-1) for x in np.meshgrid(edges, edges, indexing="ij"))
    rng = np.random.default_rng(64)
    near = []
    for _ in range(2000):
        d = int(rng.integers(0, 2**63)) >> int(rng.integers(0, 63)) | 1  # every bit length
        q = int(rng.integers(0, 2**63)) >> int(rng.integers(0, 64))
        q = min(q, (2**63 - 1 if signed else 2**64 - 1) // d)  # q * d in range
        near.append(((q * d + int(rng.integers(-2, 3))) % 2**64, d))
    a = np.concatenate([a, np.array([x for x, _ in near], np.uint64).view(dtype)])
    b = np.concatenate([b, np.array([d for _, d in near], np.uint64).view(dtype)])
    if signed:  # every sign combination of the near-multiple pairs
        a[-len(near):] *= np.where(rng.random(len(near)) < 0.5, 1, -1).astype(dtype)
        b[-len(near):] *= np.where(rng.random(len(near)) < 0.5, 1, -1).astype(dtype)
    for operator in sorted(BINARY):
        data_type = DataType.from_numpy(np.dtype(dtype))
        got = run_numpy_api(operator, None, data_type, a, b, device=device)
        assert_same_bits(got, reference(operator, None, data_type, a, b), a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_modulus_float_path_boundaries(device, dtype):
    """Both sides of the bounds of the float remainders' usual paths: float32 takes one estimated step for
    quotients below 2^20 and divisors from 2^-100 to below 2^109 (wgsl/lib/f32_bits.wgsl), float16's MODULUS_FLOOR
    both lanes at once for quotients below 2^12, normal operands and results zero or from 2^-14 up
    (wgsl/lib/f16_bits.wgsl). Divisors at the ends of each exponent's range, dividends within two units of
    q * b for quotients q next to those bounds, every sign."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(16 if dtype == np.float16 else 32)
    exponents = [info.minexp - 1, info.minexp, info.minexp + 1, info.minexp + 8, info.minexp + 13, -3, 0, 7,
                 info.maxexp - 13, info.maxexp - 9, info.maxexp - 2, info.maxexp - 1]
    if dtype == np.float32:
        exponents += [-101, -100, -99, 107, 108, 109]
    eps = float(info.eps)
    significands = [1.0, 1.0 + eps, 1.5, 2.0 - eps, 2.0 - 2 * eps] + list(1.0 + rng.random(3))
    divisors = np.array([s * 2.0 ** e for s in significands for e in exponents], np.float64)
    quotients = np.array([0, 1, 2, 3, 255, 256, 257, 511, 512, 513, 4095, 4096, 4097, 2 ** 19 + 1, 2 ** 20 - 1,
                          2 ** 20, 2 ** 20 + 1, 2 ** 21 + 1], np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        products = (np.outer(divisors, quotients) + np.outer(divisors, rng.random(quotients.size) * 0.25))
        a = products.astype(dtype).reshape(-1)
        b = np.repeat(divisors.astype(dtype), quotients.size)
        bits = a.view(np.uint16 if dtype == np.float16 else np.uint32).astype(np.int64)
        a = np.concatenate([(bits + k).astype(bits.dtype) for k in (-2, -1, 0, 1, 2)])
        a = a.astype(np.uint16 if dtype == np.float16 else np.uint32).view(dtype)
        b = np.tile(b, 5)
    finite = np.isfinite(a) & np.isfinite(b)
    a, b = a[finite], b[finite]
    signs = rng.integers(0, 4, a.size)
    a = np.where(signs & 1, -a, a).astype(dtype)
    b = np.where(signs & 2, -b, b).astype(dtype)
    data_type = DataType.from_numpy(np.dtype(dtype))
    for operator in sorted(BINARY):
        got = run_numpy_api(operator, None, data_type, a, b, device=device)
        assert_same_bits(got, reference(operator, None, data_type, a, b), a, b)


@pytest.mark.parametrize("pack_rounds", [False, True], ids=["rounded-on-bits", "pack-rounds"])
def test_float16_modulus_floor_rounding(device, monkeypatch, pack_rounds):
    """float16 MODULUS_FLOOR's results where |a| < |b| and the signs differ are b + a rounded from float32 to float16 as
    NumPy rounds (to nearest, ties to even). pack2x16float may round either way (WGSL), so the kernel rounds on the bits
    first unless the device's probe found pack2x16float rounding so itself (Device.probe_pack_rounding, the Operation's
    F16_PACK_ROUNDS_TO_NEAREST). Both paths, on every divisor exponent, with dividends a unit, a half unit (ties) and a
    quarter unit of the divisor's exponent away from a few units of the sum's last place; the path that trusts
    pack2x16float only where the probe found it trustworthy."""
    if pack_rounds and not device_with(device).probe_pack_rounding():
        pytest.skip(f"pack2x16float does not round to nearest, ties to even, on {device.adapter_name}")
    rng = np.random.default_rng(1616)
    divisors = np.array([s * 2.0 ** e for e in range(-14, 16) for s in (1.0, 1.5, 1.999)], np.float64)
    # dividends below the divisor by a few of its units' fractions: the sum b + a falls between float16 values
    small = np.array([2.0 ** -k for k in range(1, 25)] + list(rng.random(8)), np.float64)
    b = np.repeat(divisors, small.size).astype(np.float16)
    a = -(np.tile(small, divisors.size) * np.repeat(divisors, small.size)).astype(np.float16)
    keep = (a != 0) & np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    a = np.concatenate([a, -a]).astype(np.float16)
    b = np.concatenate([b, -b]).astype(np.float16)
    rounded = device_with(device, pack_rounds_to_nearest=pack_rounds)
    keys = kernel_keys(rounded, monkeypatch)
    got = run_numpy_api("ELEMENT_WISE_MODULUS_FLOOR", None, DataType.FLOAT16, a, b, device=rounded)
    assert_same_bits(got, reference("ELEMENT_WISE_MODULUS_FLOOR", None, DataType.FLOAT16, a, b), a, b)
    assert keys and all(("F16_PACK_ROUNDS_TO_NEAREST", pack_rounds) in key.operation.constants for key in keys)
