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
