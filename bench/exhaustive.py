"""Exhaustive checks of the arithmetic kernels, bit for bit against NumPy (NaN payloads aside):
MODULUS_FLOOR and MODULUS_TRUNCATE on every pair of float16, int16 and uint16 bit patterns (2^32 pairs each),
every pair of 8-bit integers, and the unary operators on every float16 value; float32 modulus on random pairs
(uniform bit patterns, pairs whose exponents are close, where the remainder's rounding and cancellation are
hardest, and dividends near integer multiples of the divisor, where a quotient estimate is one off); int64 and
uint64 modulus on random pairs (uniform, magnitudes of random bit lengths, dividends near multiples of the
divisor, divisors related to the dividend) and on every pair of edge values.

    python bench/exhaustive.py                 # all 65536 16-bit divisors: a GPU job (minutes on an H200)
    python bench/exhaustive.py --divisors 64   # every dividend against 64 spread-out divisors (CPU-adapter sized)
    python bench/exhaustive.py --divisors 1 --float32 0 --int64 4194304   # mostly 64-bit pairs (CPU adapter)

The NumPy reference runs in a process pool; the GPU side goes through the NumPy-level API.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpuops
from gpuops.bench.reference import compare, expected
from gpuops.enums import DataType, IsInfinityMode

ALL_HALVES = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
BINARY = {"modulus_floor": "ELEMENT_WISE_MODULUS_FLOOR", "modulus_truncate": "ELEMENT_WISE_MODULUS_TRUNCATE"}
BLOCK = 1024  # 16-bit divisors per GPU call: 2^26 pairs


SIXTEEN_BIT = {"float16": DataType.FLOAT16, "int16": DataType.INT16, "uint16": DataType.UINT16}


def pairs(divisors: np.ndarray, dtype: str, across: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Every 16-bit dividend against each divisor (bit patterns viewed as `dtype`): dividend by dividend for each
    divisor, or (`across`) divisor by divisor for each dividend, so that the two lanes of a word hold different
    divisors (lane arithmetic must keep one lane's result out of the other)."""
    if across:
        return (np.repeat(ALL_HALVES, divisors.size).view(dtype), np.tile(divisors, ALL_HALVES.size).view(dtype))
    return (np.tile(ALL_HALVES, divisors.size).view(dtype), np.repeat(divisors, ALL_HALVES.size).view(dtype))


def reference(name: str, divisors: np.ndarray, dtype: str, across: bool) -> np.ndarray:
    return expected(BINARY[name], None, SIXTEEN_BIT[dtype], *pairs(divisors, dtype, across))


def report(label: str, got: np.ndarray, want: np.ndarray, inputs: tuple[np.ndarray, ...]) -> int:
    mismatch = compare(got, want, inputs)
    if mismatch is None:
        return 0
    print(f"  {label}: {mismatch.describe()}")
    return mismatch.count


def check_16bit_binary(device: gpuops.Device, divisors: np.ndarray, workers: int, types: list[str]) -> int:
    failures = 0
    blocks = [divisors[i:i + BLOCK] for i in range(0, divisors.size, BLOCK)]
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        for dtype in types:
            for name in BINARY:
                started = time.perf_counter()
                across = [i % 2 == 1 for i in range(len(blocks))]  # every other block in the other order
                wants = pool.map(reference, [name] * len(blocks), blocks, [dtype] * len(blocks), across)
                for block, want, order in zip(blocks, wants, across):
                    a, b = pairs(block, dtype, order)
                    failures += report(f"{name} {dtype}", getattr(gpuops, name)(a, b, device=device), want, (a, b))
                print(f"{name} {dtype}: {divisors.size * ALL_HALVES.size} pairs in "
                      f"{time.perf_counter() - started:.1f} s")
    return failures


def check_small(device: gpuops.Device) -> int:
    failures = 0
    for dtype in (np.int8, np.uint8):
        values = np.arange(256, dtype=np.uint16).astype(np.uint8).view(dtype)
        a, b = (m.reshape(-1) for m in np.meshgrid(values, values, indexing="ij"))
        data_type = DataType.from_numpy(np.dtype(dtype))
        for name, operator in BINARY.items():
            want = expected(operator, None, data_type, a, b)
            failures += report(f"{name} {dtype.__name__}", getattr(gpuops, name)(a, b, device=device), want, (a, b))
    x = ALL_HALVES.view(np.float16)
    unary = [("sign", gpuops.sign(x, device=device), "ELEMENT_WISE_SIGN", None, DataType.FLOAT16),
             ("is_nan", gpuops.is_nan(x, device=device).view(np.uint8), "ELEMENT_WISE_IS_NAN", None, DataType.UINT8)]
    for mode in IsInfinityMode:
        unary.append((f"is_infinity {mode.name}", gpuops.is_infinity(x, mode, device=device).view(np.uint8),
                      "ELEMENT_WISE_IS_INFINITY", mode, DataType.UINT8))
    for label, got, operator, mode, out_type in unary:
        failures += report(f"{label} float16", got, expected(operator, mode, out_type, x), (x,))
    print(f"8-bit modulus (all pairs), float16 unary operators (all values): {failures} mismatches")
    return failures


def near_multiples(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 pairs a ~ q * b for integer q below 2^26, a moved by up to 2 units either way; half the divisors have
    significands at the ends of [1, 2)."""
    b = (rng.standard_normal(n) * 1000).astype(np.float32)
    low, high = 1.0 + 2.0 ** -23 * rng.integers(0, 4, n), 2.0 - 2.0 ** -23 * rng.integers(1, 5, n)
    ends = np.where(rng.random(n) < 0.5, low, high)
    b = np.where(rng.random(n) < 0.5, b, (ends * np.exp2(rng.integers(-40, 40, n)) * np.sign(b)).astype(np.float32))
    q = np.floor(np.exp2(rng.integers(0, 27, n)) * rng.random(n))
    a = (q * b.astype(np.float64)).astype(np.float32).view(np.uint32)
    a = (a.astype(np.int64) + rng.integers(-2, 3, n)).astype(np.uint32).view(np.float32)
    return a * np.where(rng.random(n) < 0.5, 1, -1).astype(np.float32), b


def check_float32(device: gpuops.Device, count: int) -> int:
    rng = np.random.default_rng(5)
    failures = 0
    for start in range(0, count, 1 << 24):
        n = min(1 << 24, count - start)
        a = rng.integers(0, 1 << 32, n, dtype=np.uint32)
        # Half uniform patterns, half divisors within 2^+-12 of the dividend with any sign.
        near = (a & 0x7fffffff) + (rng.integers(-12, 13, n) << 23).astype(np.uint32) + rng.integers(0, 1 << 23, n,
                                                                                                     dtype=np.uint32)
        near = (near & 0x7fffffff) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
        b = np.where(np.arange(n) % 2 == 0, rng.integers(0, 1 << 32, n, dtype=np.uint32), near)
        a, b = a.view(np.float32), b.astype(np.uint32).view(np.float32)
        # Every third pair: a dividend within a few units of an integer multiple of the divisor (up to 2^26), where a
        # quotient estimate would be one off.
        third = slice(0, n, 3)
        a[third], b[third] = near_multiples(rng, a[third].size)
        for name, operator in BINARY.items():
            want = expected(operator, None, DataType.FLOAT32, a, b)
            failures += report(f"{name} float32", getattr(gpuops, name)(a, b, device=device), want, (a, b))
    print(f"float32 modulus: {count} random pairs per operator, {failures} mismatches")
    return failures


U64_MAX = np.uint64(0xffffffffffffffff)
INT64_CHUNK = 1 << 22  # pairs per GPU call


def random_words(rng, n: int) -> np.ndarray:
    return rng.integers(0, U64_MAX, n, dtype=np.uint64, endpoint=True)


def with_bit_lengths(rng, n: int, lengths: np.ndarray) -> np.ndarray:
    """Random uint64 values of exactly the given bit lengths (1..64)."""
    lengths = lengths.astype(np.uint64)
    return (random_words(rng, n) >> (np.uint64(64) - lengths)) | (np.uint64(1) << (lengths - np.uint64(1)))


def magnitudes(rng, n: int, signed: bool) -> np.ndarray:
    """Magnitudes (as uint64) whose bit lengths are uniform in 1..64: for int64, length 64 is INT64_MIN's 2^63."""
    lengths = rng.integers(1, 65, n)
    if not signed:
        return with_bit_lengths(rng, n, lengths)
    return np.where(lengths == 64, np.uint64(1 << 63), with_bit_lengths(rng, n, np.minimum(lengths, 63)))


def signed_as(values: np.ndarray, dtype, rng) -> np.ndarray:
    """uint64 magnitudes as `dtype`: for int64, each negated (two's complement) with probability 1/2."""
    if dtype == np.uint64:
        return values
    negative = rng.random(values.size) < 0.5
    return np.where(negative, np.uint64(0) - values, values).view(np.int64)


def bit_length(values: np.ndarray) -> np.ndarray:
    return sum(((values >> np.uint64(k)) != 0).astype(np.int64) for k in range(64))


def int64_pairs(rng, n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """n pairs of `dtype` in four interleaved kinds, so that neighbouring elements (one thread, one warp) take
    different paths: uniform bit patterns; magnitudes of random bit lengths (1..64, dividend and divisor
    independently: every quotient size); dividends q * b + d for random q (of random bit length, q * b in range)
    and |d| <= 3, where a quotient estimate is one off; divisors 1, a, a + 1, a - 1, 2^k, 2^k +- 1 for random a."""
    signed = dtype == np.int64
    m = -(-n // 4)
    uniform = (random_words(rng, m), random_words(rng, m))
    lengths = (magnitudes(rng, m, signed), magnitudes(rng, m, signed))

    b = magnitudes(rng, m, signed)
    limit = (U64_MAX if not signed else np.uint64((1 << 63) - 1)) // b
    q_bits = np.floor(rng.random(m) * (bit_length(limit) + 1)).astype(np.uint64)  # 0..bit length of limit
    q = np.where(q_bits == 0, np.uint64(0), random_words(rng, m) >> (np.uint64(64) - np.maximum(q_bits, 1)))
    q = np.minimum(q, limit)
    near = (q * b + rng.integers(-3, 4, m).astype(np.uint64), b)  # wraps only around 0 and the top

    a = magnitudes(rng, m, signed)
    powers = np.uint64(1) << rng.integers(0, 64 if not signed else 63, m).astype(np.uint64)
    choices = [np.full(m, 1, np.uint64), a, a + np.uint64(1), a - np.uint64(1), powers, powers + np.uint64(1),
               powers - np.uint64(1)]
    related = (a, np.choose(rng.integers(0, len(choices), m), choices))

    kinds = [uniform, lengths, near, related]
    a, b = (np.stack([kind[i] for kind in kinds], axis=1).reshape(-1)[:n] for i in (0, 1))
    if signed:  # uniform patterns already carry random signs; the others are magnitudes
        a, b = signed_as(a, dtype, rng), signed_as(b, dtype, rng)
    return a.astype(dtype, copy=False), b.astype(dtype, copy=False)


def int64_edges(dtype) -> np.ndarray:
    """0, 1, 2^k and 2^k +- 1, the type's limits, and (int64) their negations."""
    values = {0, 1, 2, 3, 5, 7, 10, 2**64 - 1, 2**64 - 2, 2**63 - 1, 2**63, 2**63 + 1}
    values |= {2**k + d for k in range(64) for d in (-1, 0, 1)}
    if dtype == np.int64:
        values = {v for v in values if v <= 2**63} | {2**64 - v for v in values if 0 < v <= 2**63}
    return np.array(sorted(v % 2**64 for v in values), dtype=np.uint64).view(dtype)


def check_int64(device: gpuops.Device, count: int) -> int:
    rng = np.random.default_rng(64)
    failures = 0
    for dtype in (np.int64, np.uint64):
        started = time.perf_counter()
        data_type = DataType.from_numpy(np.dtype(dtype))
        edges = int64_edges(dtype)
        a_edges, b_edges = (x.reshape(-1) for x in np.meshgrid(edges, edges, indexing="ij"))
        chunks = [(a_edges, b_edges)] if count else []
        chunks += (int64_pairs(rng, min(INT64_CHUNK, count - start), dtype) for start in range(0, count, INT64_CHUNK))
        for a, b in chunks:
            for name, operator in BINARY.items():
                want = expected(operator, None, data_type, a, b)
                failures += report(f"{name} {dtype.__name__}", getattr(gpuops, name)(a, b, device=device), want, (a, b))
        print(f"{dtype.__name__} modulus: {count} random pairs and {edges.size ** 2} edge pairs per operator in "
              f"{time.perf_counter() - started:.1f} s")
    print(f"int64/uint64 modulus: {failures} mismatches")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--divisors", type=int, default=1 << 16,
                        help="16-bit divisors tried against every dividend, for float16, int16 and uint16 "
                             "(65536: all pairs)")
    parser.add_argument("--sixteen-bit", nargs="+", default=list(SIXTEEN_BIT), choices=list(SIXTEEN_BIT),
                        help="16-bit types whose pairs are checked (default: all three)")
    parser.add_argument("--float32", type=int, default=1 << 28, help="random float32 pairs per operator")
    parser.add_argument("--int64", type=int, default=1 << 28,
                        help="random int64 and uint64 pairs per operator and type (plus every pair of edge values; "
                             "0 skips both)")
    parser.add_argument("--backend", default=None, help="wgpu-native or dawn (default: GPUOPS_BACKEND, else wgpu-native)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes for the NumPy reference")
    args = parser.parse_args()
    device = gpuops.Device(backend=args.backend)
    checks = "kept" if device.runtime_checks else "left out"
    print(f"device: {device.adapter_name}, {device.backend}, shader runtime checks {checks}")
    step = max(1, (1 << 16) // args.divisors)  # spread out, so a small run still crosses every exponent and sign
    divisors = ALL_HALVES[::step][:args.divisors].copy()
    failures = (check_small(device) + check_float32(device, args.float32) + check_int64(device, args.int64)
                + check_16bit_binary(device, divisors, args.workers, args.sixteen_bit))
    print("all exact" if failures == 0 else f"{failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
