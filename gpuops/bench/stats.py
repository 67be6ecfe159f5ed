"""Statistics of timed samples, with NumPy alone: the noise figure every row carries, the rule that decides when a
row has enough samples, and what `gpuops-bench compare` judges two runs by (a rank test and a bootstrap interval).

A row's central value is the median of its samples, and its noise the relative interquartile range around it,
(Q3 - Q1) / median: a spread that one stalled sample cannot dominate (a standard deviation can: one sample ten
times the others makes it larger than the mean). For normally distributed samples it is 1.35 times the relative
standard deviation that nvbench reports as its noise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_MAX_TIME_S = 1.0  # sampling budget per row, once the minimum is taken (only with a noise target)
MAX_SAMPLES = 5000  # a row never takes more, whatever the budget: the JSON keeps every sample
STOPPED_ON = ("min_samples", "noise", "max_time", "max_samples")  # why a row's sampling ended
ABOVE_TARGET = ("max_time", "max_samples")  # endings that leave the noise above the target
EXACT_LIMIT = 2500  # n1 * n2 up to which the rank test's p-value is exact (when no sample ties)


def noise(values: Sequence[float]) -> float | None:
    """Relative interquartile range (Q3 - Q1) / median of the samples, the quartiles interpolated linearly between
    the sorted samples (NumPy's default); None for fewer than two samples, or a median of zero."""
    if len(values) < 2:
        return None
    q1, median, q3 = np.percentile(np.asarray(values, np.float64), [25, 50, 75])
    return float((q3 - q1) / median) if median > 0 else None


def summary(values: Sequence[float]) -> dict:
    """{"median", "min", "max", "noise"} of the samples; every value None when there are none."""
    if not len(values):
        return {"median": None, "min": None, "max": None, "noise": None}
    x = np.asarray(values, np.float64)
    return {"median": float(np.median(x)), "min": float(x.min()), "max": float(x.max()), "noise": noise(x)}


# ------------------------------------------------------------------------------------------ when to stop sampling

@dataclass(frozen=True)
class StoppingRule:
    """Take `min_samples`; with a `max_noise` target (a fraction: 0.01 is 1%) go on until the noise is at most the
    target, `max_time_s` seconds of sampling have passed, or `max_samples` samples are taken, whichever comes
    first. Without a target the row has exactly `min_samples` samples."""

    min_samples: int
    max_noise: float | None = None
    max_time_s: float = DEFAULT_MAX_TIME_S
    max_samples: int = MAX_SAMPLES

    def settings(self) -> dict:
        return {"max_noise": self.max_noise, "max_time_s": self.max_time_s, "max_samples": self.max_samples}


@dataclass(frozen=True)
class Sampled:
    """One row's samples: GPU times (empty without timestamps) and host times, in nanoseconds, and why sampling
    ended (one of STOPPED_ON)."""

    gpu_ns: list[float]
    host_ns: list[float]
    stopped_on: str

    @classmethod
    def kept(cls, gpu_ns: list[float], host_ns: list[float], stopped_on: str) -> Sampled:
        """The samples a row keeps: no GPU times where they are below the timestamps' resolution (resolved) and
        there are host times, so that the row is rated, judged and compared on its host times as on an adapter
        without timestamps."""
        return cls(gpu_ns if resolved(gpu_ns) or not host_ns else [], host_ns, stopped_on)

    @property
    def judged(self) -> list[float]:
        """The samples the noise target is judged on: GPU times where there are any, else host times (Sampled.kept
        keeps no GPU times below the timestamps' resolution)."""
        return self.gpu_ns or self.host_ns

    @property
    def above_target(self) -> bool:
        return self.stopped_on in ABOVE_TARGET


def sample(take: Callable[[int], tuple[list[float], list[float]]], rule: StoppingRule,
           clock: Callable[[], float] = time.perf_counter) -> Sampled:
    """Samples from `take(n)` (n more (GPU, host) samples; either list may stay empty, as CUDA events give no host
    times) until `rule` says stop; `clock` gives seconds.

    More samples come in batches of half those taken so far (at least one), cut to what the remaining time is
    expected to allow at the pace so far, so that a row overruns its budget by at most one sample."""
    start = clock()
    gpu, host = (list(values) for values in take(rule.min_samples))
    if rule.max_noise is None:
        return Sampled.kept(gpu, host, "min_samples")
    while True:
        quiet = Sampled.kept(gpu, host, "noise")  # what ends here if the noise is low enough
        figure = noise(quiet.judged)
        if figure is not None and figure <= rule.max_noise:
            return quiet
        count = max(len(gpu), len(host))
        if count >= rule.max_samples:
            return Sampled.kept(gpu, host, "max_samples")
        elapsed = clock() - start
        remaining = rule.max_time_s - elapsed
        if remaining <= 0:
            return Sampled.kept(gpu, host, "max_time")
        affordable = int(remaining * count / elapsed) if elapsed > 0 else count
        more_gpu, more_host = take(max(1, min(count // 2 + 1, affordable, rule.max_samples - count)))
        gpu += more_gpu
        host += more_host


def resolved(gpu_ns: Sequence[float]) -> bool:
    """Whether GPU samples measure anything: a median of zero means spans shorter than the timestamps' resolution
    (Dawn rounds its timestamps, and a tiny dispatch reads 0 ns)."""
    return len(gpu_ns) > 0 and float(np.median(np.asarray(gpu_ns, np.float64))) > 0


# ------------------------------------------------------------------------------------------ comparing two runs

def ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given the mean of the ranks they span."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    result = np.empty(len(values), np.float64)
    result[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return result


def mann_whitney_u(base: Sequence[float], new: Sequence[float]) -> tuple[float, float]:
    """(U of `new`, two-sided p-value) of the Mann-Whitney U test: how likely samples this far apart in rank are
    when both runs draw from one distribution. U of `new` counts the (base, new) pairs where new is the larger, ties
    half. Exact where there are no ties and n1 * n2 <= EXACT_LIMIT; otherwise the normal approximation with the
    tie correction and a continuity correction of 1/2."""
    x, y = np.asarray(base, np.float64), np.asarray(new, np.float64)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u: both sample sets need at least one value")
    combined = np.concatenate([x, y])
    rank = ranks(combined)
    u_new = float(rank[n1:].sum() - n2 * (n2 + 1) / 2)
    smaller = min(u_new, n1 * n2 - u_new)
    _, tie_counts = np.unique(combined, return_counts=True)
    if (tie_counts == 1).all() and n1 * n2 <= EXACT_LIMIT:
        distribution = _u_distribution(n1, n2)
        return u_new, float(min(1.0, 2.0 * distribution[: int(smaller) + 1].sum()))
    n = n1 + n2
    ties = float((tie_counts ** 3 - tie_counts).sum())
    variance = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:  # every sample equal
        return u_new, 1.0
    z = max(0.0, abs(u_new - n1 * n2 / 2.0) - 0.5) / math.sqrt(variance)
    return u_new, float(min(1.0, math.erfc(z / math.sqrt(2.0))))


def _u_distribution(n1: int, n2: int) -> np.ndarray:
    """P(U = u) for u = 0 .. n1 * n2 when two sets of n1 and n2 distinct values come from one distribution.

    p(m, n, u) = m/(m+n) p(m-1, n, u-n) + n/(m+n) p(m, n-1, u): the largest of the m + n values is one of the first
    set's with probability m/(m+n), and then beats all n of the second set."""
    previous = [np.ones(1)] * (n2 + 1)  # m = 0: U is 0
    for m in range(1, n1 + 1):
        row = [np.ones(1)]  # n = 0
        for n in range(1, n2 + 1):
            p = np.zeros(m * n + 1)
            p[n:] += m / (m + n) * previous[n]
            p[: m * (n - 1) + 1] += n / (m + n) * row[n - 1]
            row.append(p)
        previous = row
    return previous[n2]


def ratio_interval(base: Sequence[float], new: Sequence[float], confidence: float = 0.95, resamples: int = 2000,
                   seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of median(new) / median(base): each set resampled with replacement
    `resamples` times (a fixed seed, so the same files give the same interval)."""
    x, y = np.asarray(base, np.float64), np.asarray(new, np.float64)
    rng = np.random.default_rng(seed)
    ratios = np.empty(resamples)
    chunk = max(1, 2_000_000 // max(len(x), len(y)))  # bounded memory for long rows
    for start in range(0, resamples, chunk):
        count = min(chunk, resamples - start)
        base_medians = np.median(x[rng.integers(0, len(x), (count, len(x)))], axis=1)
        new_medians = np.median(y[rng.integers(0, len(y), (count, len(y)))], axis=1)
        ratios[start: start + count] = new_medians / base_medians
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)
