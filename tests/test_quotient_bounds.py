"""The error argument of lib/signed_by_estimate.wgsl, checked on the CPU: int16 remainders take their quotient from
one rounding of x * (1 / y) moved by QUOTIENT_NUDGE of itself, and must be exact wherever WGSL's 1 / y lands within
its 2.5 units in the last place. NumPy's float32 arithmetic stands in for the GPU's (correctly rounded products and
sums); the reciprocal is set off by up to 3 units either way. The GPU kernels themselves are checked on every int16
pair by bench/exhaustive.py and on sampled pairs by the suite; this test keeps the constant and its bound honest on
machines that cannot run every pair. The same for float16's pair path (lib/f16_bits.wgsl), whose quotient estimate is
moved down (C's remainder) or up (Python's modulus, of a dividend that may be negative) so that one correction
suffices (below)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpuops.shaders import WGSL_DIR

SOURCE = (WGSL_DIR / "lib" / "signed_by_estimate.wgsl").read_text()
NUDGE = np.float32(float(re.search(r"const QUOTIENT_NUDGE: f32 = ([0-9.e+-]+);", SOURCE).group(1)))

# Divisors where the margins are thinnest: |y| = 1 (the largest quotients, integers everywhere), small divisors with
# large dividends (the next integer 1 / |y| away at quotients near 2^15), and the largest magnitudes.
DIVISORS = np.array([1, 2, 3, 5, 7, 11, 127, 128, 255, 257, 1000, 4095, 16383, 32767, 2, 3, 6, 9, 129, 32768],
                    np.int64) * np.array([1] * 14 + [-1] * 6, np.int64)
DIVIDENDS = np.arange(-32768, 32768, dtype=np.int64)


def kernel_quotients(x: np.ndarray, y: np.ndarray, ulps: int, floored: bool) -> np.ndarray:
    """signed_lane_rem's quotient with the reciprocal of y off by `ulps` units in the last place."""
    reciprocal = (np.float32(1) / y.astype(np.float32)).view(np.int32) + np.int32(ulps)
    estimate = x.astype(np.float32)[None, :] * reciprocal.view(np.float32)[:, None]
    if floored:
        return np.floor(estimate + np.abs(estimate) * NUDGE).astype(np.int64)
    return np.trunc(estimate * (np.float32(1) + NUDGE)).astype(np.int64)


@pytest.mark.parametrize("floored", [False, True], ids=["truncate", "floor"])
@pytest.mark.parametrize("ulps", [-3, -1, 0, 1, 3])
def test_nudged_quotient_is_exact(floored: bool, ulps: int):
    q = kernel_quotients(DIVIDENDS, DIVISORS, ulps, floored)
    remainders = DIVIDENDS[None, :] - q * DIVISORS[:, None]
    expected = (np.remainder if floored else np.fmod)(DIVIDENDS[None, :], DIVISORS[:, None])
    wrong = np.argwhere(remainders != expected)
    assert wrong.size == 0, (f"{len(wrong)} wrong, first: {DIVIDENDS[wrong[0][1]]} % {DIVISORS[wrong[0][0]]} gave "
                             f"{remainders[tuple(wrong[0])]}, want {expected[tuple(wrong[0])]}")


# lib/f16_bits.wgsl, f16_pair_rem: the quotient of float16 values x / y (y > 0) comes from x * ((1 / y) * (1 - 2^-13))
# for C's remainder (x >= 0), and floor() of it must be floor(x / y) or one less (its single correction subtracts y
# once); for Python's modulus (x of either sign) from r = x * (1 / y) moved up as r + |r| * 2^-13, and floor() of it
# must be floor(x / y) or one more (its correction adds y once). Both wherever the estimate is below 2^12 in
# magnitude (elsewhere the lane goes lane by lane).
F16_SOURCE = (WGSL_DIR / "lib" / "f16_bits.wgsl").read_text()
F16_BELOW = np.float32(float(re.search(r"const F16_ESTIMATE_BELOW: f32 = ([0-9.e+-]+);", F16_SOURCE).group(1)))
F16_UP = np.float32(float(re.search(r"const F16_ESTIMATE_UP: f32 = ([0-9.e+-]+);", F16_SOURCE).group(1)))
# Every normal float16 magnitude as dividend; as divisors, every significand at two exponents (the quotient's
# margins depend on the significands and the exponents' difference), and the extremes of the range.
F16_NORMALS = np.arange(0x0400, 0x7c00, dtype=np.uint16).view(np.float16).astype(np.float32)
F16_DIVISORS = np.concatenate([np.arange(0x3c00, 0x4000), np.arange(0x0400, 0x0800, 3), [0x7bff, 0x7800, 0x0401]]
                              ).astype(np.uint16).view(np.float16).astype(np.float32)


@pytest.mark.parametrize("floored", [False, True], ids=["truncate", "floor"])
@pytest.mark.parametrize("ulps", [-3, 0, 3])
def test_float16_pair_quotient_within_one(floored: bool, ulps: int):
    reciprocal = ((np.float32(1) / F16_DIVISORS).view(np.int32) + np.int32(ulps)).view(np.float32)
    dividends = np.concatenate([-F16_NORMALS, F16_NORMALS]) if floored else F16_NORMALS
    for y, inverse in zip(F16_DIVISORS, reciprocal):  # (float32 products and sums, correctly rounded)
        if floored:
            ratio = dividends * inverse
            estimate = ratio + np.abs(ratio) * F16_UP
        else:
            estimate = dividends * (inverse * F16_BELOW)
        usual = np.abs(estimate) < 4096
        q = np.floor(estimate[usual]).astype(np.int64)
        exact = np.floor(dividends[usual].astype(np.float64) / np.float64(y)).astype(np.int64)
        bad = np.flatnonzero((q != exact) & (q != exact + (1 if floored else -1)))
        assert bad.size == 0, f"{dividends[usual][bad[0]]} / {y}: estimate {estimate[usual][bad[0]]}"


# lib/f32_bits.wgsl, f32_rem_magnitudes: (ma * 2^n) mod m for a divisor significand m normalised into [2^23, 2^24),
# F32_REM_STEP_BITS factors of two a step, each step's quotient rounded from r * 2^k * (1 / m) and corrected once in
# u32 arithmetic modulo 2^32. Each step's rounded estimate must be the quotient or one more, and the remainder the
# exact one, wherever 1 / m lands within its 2.5 units in the last place.
F32_SOURCE = (WGSL_DIR / "lib" / "f32_bits.wgsl").read_text()
F32_STEP_BITS = int(re.search(r"const F32_REM_STEP_BITS: u32 = (\d+)u;", F32_SOURCE).group(1))


def f32_magnitude_pairs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Finite magnitudes |a| >= |b| > 0 as bits: the largest exponent gaps (dividends of exponent field 254,
    subnormal divisors of few significant bits, whose normalisation adds the most steps, and of any), random pairs of
    any exponents, and dividends next to multiples of the divisor."""
    top = (np.uint32(254) << 23) | rng.integers(0, 1 << 23, n, dtype=np.uint32)
    few_bits = rng.integers(1, 16, n, dtype=np.uint32) | 1
    subnormal = rng.integers(1, 1 << 23, n, dtype=np.uint32) >> rng.integers(0, 23, n, dtype=np.uint32) | 1
    x = rng.integers(1, 0x7f800000, n, dtype=np.uint32)
    y = rng.integers(1, 0x7f800000, n, dtype=np.uint32)
    near = np.maximum(x, y) & ~np.uint32(0x7fffff) | np.minimum(x, y) & 0x7fffff
    a = np.concatenate([top, top, np.maximum(x, y), near + 1, near - 1])
    b = np.concatenate([few_bits, subnormal, np.minimum(x, y), np.minimum(x, y), np.minimum(x, y)])
    keep = (a >= b) & (b > 0)
    return a[keep], b[keep]


def f32_rem_magnitudes_model(ua: np.ndarray, ub: np.ndarray, ulps: int) -> np.ndarray:
    """f32_rem_magnitudes' remainder of the significands, (ma * 2^d) mod mb, with 1 / m off by `ulps` units in the
    last place; every step's quotient is checked against the bound its correction needs."""
    eb, ea = np.maximum(ub >> 23, 1), np.maximum(ua >> 23, 1)
    mb = np.where(ub >> 23 != 0, ub & 0x7fffff | 0x800000, ub & 0x7fffff).astype(np.uint32)
    ma = np.where(ua >> 23 != 0, ua & 0x7fffff | 0x800000, ua & 0x7fffff).astype(np.uint32)
    s = np.uint32(150) - (mb.astype(np.float32).view(np.uint32) >> 23)
    m = mb << s
    assert ((m >= 1 << 23) & (m < 1 << 24)).all()
    minus_m = np.uint32(0) - m
    inverse = ((np.float32(1) / m.astype(np.float32)).view(np.int32) + np.int32(ulps)).view(np.float32)
    r = np.where(ma >= m, ma - m, ma).astype(np.uint32)
    n = (ea - eb + s).astype(np.uint32)
    steps = 0
    while ((n != 0) & (r != 0)).any():
        live = (n != 0) & (r != 0)
        k = np.minimum(n, np.uint32(F32_STEP_BITS))
        scale = ((np.uint32(127) + k) << 23).view(np.float32)
        estimate = r.astype(np.float32) * scale * inverse  # float32 products, correctly rounded
        q = (estimate + np.float32(2 ** 23)).view(np.uint32) & np.uint32(0x7fffff)
        quotient = (r.astype(np.uint64) << k.astype(np.uint64)) // m
        assert ((q == quotient) | (q == quotient + 1))[live].all()
        t = (r << k) + q * minus_m  # modulo 2^32
        fixed = t + minus_m * (t.view(np.int32) >> 31).view(np.uint32)
        assert (fixed < m).all()
        r, n = np.where(live, fixed, r), np.where(live, n - k, n)
        steps += 1
    assert steps <= 14
    return r >> s


@pytest.mark.parametrize("ulps", [-3, -1, 0, 1, 3])
def test_float32_remainder_steps_are_exact(ulps: int):
    ua, ub = f32_magnitude_pairs(np.random.default_rng(32 + ulps), 20000)
    got = f32_rem_magnitudes_model(ua, ub, ulps)
    eb = np.maximum(ub >> 23, 1).astype(np.float64)
    want = np.fmod(ua.view(np.float32), ub.view(np.float32)).astype(np.float64) * 2.0 ** (150 - eb)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{len(bad)} wrong, first {ua[bad[0]]:#x} mod {ub[bad[0]]:#x}: {got[bad[0]]} not "
                           f"{want[bad[0]]}")
