"""gpuops-bench's statistics: the noise figure and the rank test against known sample sets, the rule that decides
when a row has enough samples (driven by a fake sample source and clock), cold samples after a cache flush, the
compare command on planted differences and refused inputs (runs of cases, and runs of targets), targets runs pooled
and bench/ab_targets.py's rounds, and docs/bench-json.md's tables against the files."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

import gpuops
from gpuops.bench import compare, stats, suite, targets, timing, torch_compare
from gpuops.bench.workload import timed_fields

from .cli_run import one_error_line, run
from .test_bench import RESULT_KEYS, validate_document

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "bench-json.md"


# ------------------------------------------------------------------------------------------------ statistics

def test_noise_is_the_relative_interquartile_range():
    assert stats.noise([100, 102, 98, 101, 99]) == pytest.approx(0.02)  # Q1 99, Q3 101, median 100
    assert stats.noise([10, 20]) == pytest.approx(1 / 3)  # Q1 12.5, Q3 17.5, median 15
    assert stats.noise([7.0] * 9) == 0.0
    assert stats.noise([5.0]) is None and stats.noise([]) is None
    # One stalled sample moves it little, unlike a standard deviation.
    steady = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1]
    assert stats.noise(steady + [1000.0]) < 2 * stats.noise(steady)
    assert stats.summary([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "noise": 0.5}
    assert stats.summary([]) == {"median": None, "min": None, "max": None, "noise": None}


def test_ranks_share_ties():
    assert stats.ranks(np.array([3.0, 1.0, 3.0, 2.0, 3.0])).tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]


# Two-sided p-values of SciPy's mannwhitneyu(new, base) (method "auto": exact without ties for small sets,
# else the normal approximation with tie and continuity corrections).
KNOWN = [
    ([12.0, 15.5, 11.2, 14.1, 13.3, 16.8, 12.9], [17.2, 18.1, 15.9, 19.4, 16.6, 17.7], 40.0, 0.004662004662004662),
    ([1, 2, 2, 3, 3, 3, 4, 5, 5, 6], [3, 4, 4, 5, 5, 6, 6, 7, 8, 8, 9], 92.5, 0.008507986774119168),
    (list(100 + np.arange(60) % 7), list(101.5 + np.arange(55) % 9), 2520.0, 1.0686609690482864e-06),
]


@pytest.mark.parametrize("base, new, u, p", KNOWN, ids=["exact", "ties", "normal"])
def test_mann_whitney_u_matches_known_values(base, new, u, p):
    assert stats.mann_whitney_u(base, new) == (u, pytest.approx(p, rel=1e-9))
    assert stats.mann_whitney_u(new, base) == (len(base) * len(new) - u, pytest.approx(p, rel=1e-9))


def test_mann_whitney_u_exact_p_is_the_permutation_count():
    rng = np.random.default_rng(3)
    for n1, n2 in [(1, 5), (3, 4), (4, 6), (5, 5)]:
        base, new = rng.random(n1), rng.random(n2) + 0.2
        observed, p = stats.mann_whitney_u(base, new)
        pooled = np.concatenate([base, new])
        extreme = min(observed, n1 * n2 - observed)
        counts = []
        for chosen in itertools.combinations(range(n1 + n2), n2):
            mask = np.zeros(n1 + n2, bool)
            mask[list(chosen)] = True
            u = sum(int(b > a) for a in pooled[~mask] for b in pooled[mask])
            counts.append(min(u, n1 * n2 - u) <= extreme)
        assert p == pytest.approx(min(1.0, float(np.mean(counts))), rel=1e-12), (n1, n2)


def test_mann_whitney_u_of_one_distribution():
    assert stats.mann_whitney_u([5.0] * 12, [5.0] * 9) == (54.0, 1.0)
    same = [3.1, 2.7, 3.3, 2.9, 3.0]
    assert stats.mann_whitney_u(same, same)[1] == 1.0
    with pytest.raises(ValueError, match="at least one value"):
        stats.mann_whitney_u([], [1.0])


def test_ratio_interval_brackets_the_ratio():
    base = np.random.default_rng(0).normal(100, 1, 40)
    low, high = stats.ratio_interval(base, 1.1 * base)
    assert low < 1.1 < high and high - low < 0.02
    low, high = stats.ratio_interval(base, np.random.default_rng(1).normal(110, 1, 40))
    assert low < 1.1 < high and high - low < 0.02
    assert stats.ratio_interval([7.0] * 5, [14.0] * 3) == (2.0, 2.0)
    assert stats.ratio_interval(base, base * 1.05) == stats.ratio_interval(base, base * 1.05)  # seeded


# ---------------------------------------------------------------------------------------- the stopping rule

class FakeSource:
    """Samples from a list, each costing `pace` seconds on a fake clock; records the batch sizes asked for."""

    def __init__(self, values, pace=0.01, gpu=True):
        self.values, self.pace, self.gpu = iter(values), pace, gpu
        self.now, self.batches = 0.0, []

    def take(self, count):
        self.batches.append(count)
        taken = [next(self.values) for _ in range(count)]
        self.now += self.pace * count
        return (taken if self.gpu else []), [t + 5000 for t in taken]

    def clock(self):
        return self.now


def noisy(seed=0, spread=0.2):
    rng = np.random.default_rng(seed)
    while True:
        yield float(1000 * (1 + spread * rng.standard_normal()))


def test_without_a_target_a_row_takes_exactly_its_samples():
    source = FakeSource(noisy())
    sampled = stats.sample(source.take, stats.StoppingRule(20), source.clock)
    assert (len(sampled.gpu_ns), len(sampled.host_ns), sampled.stopped_on) == (20, 20, "min_samples")
    assert source.batches == [20] and not sampled.above_target


def test_sampling_stops_once_the_noise_is_below_the_target():
    settling = itertools.chain([1000.0, 1400.0, 700.0, 1300.0, 800.0, 1200.0], itertools.repeat(1000.0))
    source = FakeSource(settling)
    sampled = stats.sample(source.take, stats.StoppingRule(3, max_noise=0.01, max_time_s=10), source.clock)
    assert sampled.stopped_on == "noise" and stats.noise(sampled.gpu_ns) <= 0.01
    assert source.batches == [3, 2, 3, 5]  # half as many more (and one) each time, until both quartiles are 1000
    assert len(sampled.gpu_ns) == 13 and source.now == pytest.approx(0.13)


def test_a_row_ends_on_its_time_budget_above_the_target():
    source = FakeSource(noisy(), pace=0.01)
    rule = stats.StoppingRule(10, max_noise=0.001, max_time_s=0.5)
    sampled = stats.sample(source.take, rule, source.clock)
    assert sampled.stopped_on == "max_time" and sampled.above_target
    assert stats.noise(sampled.gpu_ns) > 0.001
    assert 0.5 <= source.now <= 0.5 + 0.01 + 1e-9  # at most one sample past the budget
    assert len(sampled.gpu_ns) == round(source.now / 0.01)


def test_minimum_samples_come_first_whatever_the_budget():
    source = FakeSource(noisy(), pace=1.0)
    sampled = stats.sample(source.take, stats.StoppingRule(7, max_noise=0.001, max_time_s=0.5), source.clock)
    assert (len(sampled.host_ns), sampled.stopped_on, source.batches) == (7, "max_time", [7])


def test_a_row_ends_on_the_sample_cap():
    source = FakeSource(noisy(), pace=1e-6)
    rule = stats.StoppingRule(4, max_noise=0.0001, max_time_s=100, max_samples=50)
    sampled = stats.sample(source.take, rule, source.clock)
    assert (len(sampled.gpu_ns), sampled.stopped_on) == (50, "max_samples")


def test_without_timestamps_the_host_samples_are_judged():
    source = FakeSource(itertools.repeat(1000.0), gpu=False)
    sampled = stats.sample(source.take, stats.StoppingRule(5, max_noise=0.01), source.clock)
    assert sampled.gpu_ns == [] and sampled.judged == sampled.host_ns and sampled.stopped_on == "noise"
    assert len(sampled.host_ns) == 5


def test_gpu_times_below_the_timestamps_resolution_give_way_to_host_times():
    """Dawn rounds its timestamps: a tiny dispatch's spans read 0 ns. Such a row is sampled, rated and compared on
    its host times, as without timestamps."""
    class ZeroSpans(FakeSource):
        def take(self, count):
            _, host = super().take(count)
            return [0.0] * count, host

    for rule in (stats.StoppingRule(5), stats.StoppingRule(5, max_noise=0.5, max_time_s=10)):
        sampled = stats.sample(ZeroSpans(itertools.repeat(1000.0)).take, rule)
        assert sampled.gpu_ns == [] and sampled.host_ns == [6000.0] * 5 and sampled.judged == sampled.host_ns
    assert not stats.resolved([0.0, 0.0, 1.0]) and stats.resolved([0.0, 1.0, 1.0])
    row = {"exact": True, "gpu_samples_ns": [0.0] * 5, "host_samples_ns": [6000.0] * 5}
    judged = compare.compare_rows(row, dict(row))
    assert (judged.basis, judged.ratio) == ("host", 1.0)


def test_one_estimate_disturbed_by_a_busy_machine_keeps_the_gpu_times():
    """Calibration gives up GPU times only when most of its estimates saw the ticks stand still."""
    from gpuops.bench.ticks import settle

    class Timer:
        tick_ns = 1.0

    def estimate(ratio):
        return ratio, {"dispatches": 10, "ticks": 9e6, "host_ns": 9e6}, {"dispatches": 40, "ticks": 8e6,
                                                                         "host_ns": 3e7}

    timer = Timer()
    kept = settle(timer, [estimate(None), estimate(1.02), estimate(0.99)])
    assert (kept.method, kept.tick_ns, kept.measured_ns_per_tick, timer.tick_ns) == ("nanoseconds", 1.0, 1.02, 1.0)
    calibrated = settle(timer, [estimate(1.5), estimate(None), estimate(1.6)])
    assert (calibrated.method, calibrated.tick_ns, timer.tick_ns) == ("calibrated", 1.6, 1.6)
    lost = settle(timer, [estimate(None), estimate(None), estimate(1.0)])
    assert lost.method == "unavailable" and lost.tick_ns is None
    assert lost.note == "timestamps did not advance with the work (ticks 9000000 then 8000000): only host times " \
                        "are reported"
    assert settle(timer, [estimate(1.001)]).method == "nanoseconds"


# ------------------------------------------------------------------------------------- cold samples, on lavapipe

def test_cold_rows_flush_before_every_sample(capsys, tmp_path, monkeypatch):
    flushes = []
    real_flush = timing.CacheFlush.__call__

    def counted(self):
        flushes.append(self.size_bytes)
        real_flush(self)

    monkeypatch.setattr(timing.CacheFlush, "__call__", counted)
    path = tmp_path / "cold.json"
    status, out, err = run(capsys, "op", "sign", "--sizes", "4096", "-i", "3", "-w", "1", "--cache", "both",
                           "--flush-bytes", "1MiB", "-q", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_document(doc)
    assert doc["settings"]["cache"] == ["warm", "cold"] and doc["settings"]["flush_bytes"] == 1 << 20
    assert [row["cache"] for row in doc["results"]] == ["warm", "cold"]
    assert sorted(entry["cache"] for entry in doc["copy_roof"]) == ["cold", "warm"]
    assert flushes == [1 << 20] * 6  # three cold samples of the case, three of its copy roof
    assert re.search(r"^sign\s+float32\s+4096\s+packed\s+cold\s", out, re.M)
    assert "note: cache cold: 1 MiB written on the GPU before each sample" in out
    # A run compared with itself: every case within the noise, ratio 1.
    status, out, err = run(capsys, "compare", path, path, "--fail-above", "0%")
    assert status == 0, err
    assert "2 case(s) in both runs: 0 slower, 0 faster beyond the noise, 2 within it" in out
    assert re.search(r"^sign\s+float32\s+4096\s+packed\s+cold\s.*\s1\.000\s.*within noise$", out, re.M)


def test_flush_size_follows_the_adapter(tmp_path):
    for index, size in enumerate(("32K", "512K", "32768K")):
        (tmp_path / f"index{index}").mkdir()
        (tmp_path / f"index{index}" / "size").write_text(size + "\n")
    assert suite.host_cache_bytes(tmp_path) == 32 << 20
    assert suite.host_cache_bytes(tmp_path / "missing") is None
    import gpuops

    device = gpuops.Device()
    largest = suite.host_cache_bytes()
    expected = max(suite.MIN_FLUSH_BYTES, 2 * largest) if largest else suite.SOFTWARE_FLUSH_BYTES
    assert suite.default_flush_bytes(device) == (expected if suite.is_software(device) else suite.GPU_FLUSH_BYTES)


def test_a_noise_target_out_of_reach_ends_on_the_budget(capsys, tmp_path, monkeypatch):
    # Out of reach on any adapter: a steady GPU's timestamps can meet even 0.0001% at once.
    monkeypatch.setattr(stats, "noise", lambda values: 1.0)
    path = tmp_path / "noisy.json"
    status, out, err = run(capsys, "op", "sign", "--sizes", "64", "-i", "3", "-w", "1", "--max-noise", "0.0001%",
                           "--max-time", "0.2", "-q", "--json", path)
    assert status == 0, err
    doc = json.loads(path.read_text())
    validate_document(doc)
    (row,) = doc["results"]
    assert doc["settings"]["max_noise"] == pytest.approx(1e-6) and doc["settings"]["max_time_s"] == 0.2
    assert row["stopped_on"] in ("max_time", "max_samples") and row["iterations"] > 3
    assert "!" in out.split("\n\n")[1] and "note: !: 1 row(s) ended above the noise target 0.00%" in out


# ------------------------------------------------------------------------------------------------- compare

def document(seed: int, adapter: str = "NVIDIA H100 80GB HBM3", implementation: str = "wgpu-native",
             slower: dict | None = None, samples: int = 30) -> dict:
    """A default run of three cases with 1%-noisy GPU and host samples; `slower` scales a case's times."""
    rng = np.random.default_rng(seed)
    results = []
    for operator, dtype, median in [("ELEMENT_WISE_SIGN", "FLOAT32", 170_000.0),
                                    ("ELEMENT_WISE_SIGN", "FLOAT16", 90_000.0),
                                    ("ELEMENT_WISE_MODULUS_FLOOR", "INT32", 260_000.0)]:
        factor = (slower or {}).get((operator, dtype), 1.0)
        gpu = (median * factor * (1 + 0.01 * rng.standard_normal(samples))).tolist()
        host = (2 * median * factor * (1 + 0.01 * rng.standard_normal(samples))).tolist()
        results.append({"operator": operator, "mode": None, "dtype": dtype, "output_dtype": dtype,
                        "sizes": [1 << 26], "layout": "packed", "cache": "warm", "exact": True,
                        "iterations": samples, "gpu_samples_ns": gpu, "host_samples_ns": host})
    return {"schema": "gpuops-bench/1", "command": "default", "created": f"2026-11-2{seed % 10}T10:00:00+00:00",
            "machine": {"hostname": "gpu-host"},
            "adapter": {"name": adapter, "implementation": implementation, "backend": "Vulkan",
                        "driver": "570.86", "vendor_id": 0x10DE, "device_id": 0x2330},
            "versions": {"gpuops": "0.1.0", "wgpu": "0.32.0"}, "feature_level": "6_4", "runtime_checks": False,
            "settings": {"repeats": 1, "cuda_context": True, "flush_bytes": None}, "results": results}


def write(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def verdicts(out: str) -> dict[str, str]:
    table = out.split("\n\n")[1].splitlines()[2:]
    return {" ".join(line.split()[:2]): line.split("  ")[-1].strip() for line in table}


def test_identical_runs_compare_as_equal(capsys, tmp_path):
    path = write(tmp_path, "a.json", document(1))
    status, out, err = run(capsys, "compare", path, path, "--fail-above", "0%")
    assert (status, err) == (0, "")
    assert set(verdicts(out).values()) == {"within noise"}
    assert "3 case(s) in both runs: 0 slower, 0 faster beyond the noise, 3 within it" in out


def test_a_rerun_compares_as_equal_and_a_planted_slowdown_is_flagged(capsys, tmp_path):
    base = write(tmp_path, "base.json", document(1))
    rerun = write(tmp_path, "rerun.json", document(2))
    status, out, err = run(capsys, "compare", base, rerun, "--fail-above", "2%")
    assert (status, err) == (0, "")
    assert set(verdicts(out).values()) == {"within noise"}
    slow = write(tmp_path, "slow.json", document(2, slower={("ELEMENT_WISE_SIGN", "FLOAT16"): 1.10}))
    status, out, err = run(capsys, "compare", base, slow)
    assert status == 0, err  # no --fail-above: a report only
    marked = verdicts(out)
    assert re.fullmatch(r"SLOWER \+(9\.\d|10\.\d)%", marked["sign float16"]), marked
    assert marked["sign float32"] == marked["modulus_floor int32"] == "within noise"
    assert "1 slower, 0 faster beyond the noise, 2 within it" in out
    status, out, err = run(capsys, "compare", base, slow, "--fail-above", "2%")
    assert status == 1
    message = one_error_line(err)
    assert message.startswith(f"1 case(s) slower than {base} by more than 2.0%, beyond the noise: sign float16 "
                              f"{1 << 26} packed warm +")
    assert "(above 2.0%)" in verdicts(out)["sign float16"]
    assert run(capsys, "compare", base, slow, "--fail-above", "15%")[0] == 0
    status, out, _ = run(capsys, "compare", slow, base)  # the other way round: faster
    assert status == 0 and re.fullmatch(r"FASTER -\d\.\d%", verdicts(out)["sign float16"])


def test_host_times_compare_on_request(capsys, tmp_path):
    base = write(tmp_path, "base.json", document(1))
    doc = document(2)
    for row in doc["results"]:
        row["host_samples_ns"] = [1.2 * t for t in row["host_samples_ns"]]  # slower host, same GPU
    new = write(tmp_path, "new.json", doc)
    _, out, _ = run(capsys, "compare", base, new)
    assert set(verdicts(out).values()) == {"within noise"}
    status, out, _ = run(capsys, "compare", base, new, "--host", "--fail-above", "10%")
    assert status == 1 and out.splitlines()[2].startswith("host time per dispatch: ")
    assert all(v.startswith("SLOWER +") for v in verdicts(out).values())
    for row in doc["results"]:
        row["gpu_samples_ns"] = None  # a run without timestamps: its rows compare host times
    status, out, _ = run(capsys, "compare", base, write(tmp_path, "untimed.json", doc))
    assert status == 0 and "*: host time per dispatch (a run without GPU times)" in out.splitlines()
    assert all(v.startswith("SLOWER +") for v in verdicts(out).values())


def test_mismatched_adapters_and_implementations_are_refused(capsys, tmp_path):
    base = write(tmp_path, "base.json", document(1))
    other = write(tmp_path, "other.json", document(2, adapter="NVIDIA H200"))
    status, out, err = run(capsys, "compare", base, other)
    assert status == 2 and out == ""
    assert one_error_line(err) == (
        f"{base} ran on 'NVIDIA H100 80GB HBM3' (wgpu-native, Vulkan), {other} on 'NVIDIA H200' (wgpu-native, "
        "Vulkan): compare refuses runs of different adapters or WebGPU implementations (--allow-different-adapters "
        "compares them anyway)")
    status, out, err = run(capsys, "compare", base, other, "--allow-different-adapters")
    assert status == 0, err
    assert "note: different adapters, compared as asked: " in out
    dawn = write(tmp_path, "dawn.json", document(2, implementation="dawn"))
    status, _, err = run(capsys, "compare", base, dawn)
    assert status == 2 and "(dawn, Vulkan): compare refuses" in one_error_line(err)


def test_environment_differences_and_unmatched_rows_are_said(capsys, tmp_path):
    base_doc, new_doc = document(1), document(2)
    new_doc["adapter"]["driver"] = "575.51"
    new_doc["versions"]["gpuops"] = "0.2.0"
    new_doc["results"][1]["sizes"] = [1 << 20]
    new_doc["results"][2].update(exact=False, gpu_samples_ns=None, host_samples_ns=None)
    status, out, err = run(capsys, "compare", write(tmp_path, "a.json", base_doc), write(tmp_path, "b.json", new_doc))
    assert status == 0, err
    assert "1 case(s) in both runs" in out
    assert f"only in BASE: sign float16 {1 << 26} packed warm" in out.splitlines()
    assert f"only in NEW: sign float16 {1 << 20} packed warm" in out.splitlines()
    assert f"not timed (a wrong result) in a run: modulus_floor int32 {1 << 26} packed warm" in out.splitlines()
    assert "note: adapter.driver differs: '570.86' in " in out and "note: versions.gpuops differs: '0.1.0' in " in out


@pytest.mark.parametrize("name, fragment", [
    ("h100-wgpu-native-sweep-float32.json", "samples are missing: its 95 timed row(s) keep summaries only"),
    ("h100-wgpu-native-layout-conversions.json", "samples are missing: its 32 timed row(s) keep summaries only"),
    ("h100-wgpu-native-targets.json", "a gpuops-targets/1 record, written before targets rows kept their samples; "
                                      "compare needs each row's samples: run 'gpuops-bench targets' again"),
])
def test_records_without_samples_are_refused(capsys, tmp_path, name, fragment):
    fresh = write(tmp_path, "fresh.json", targets_document(1) if "targets" in name or "layout" in name
                  else document(1))
    status, out, err = run(capsys, "compare", RESULTS / name, fresh)
    assert status == 2 and out == ""
    message = one_error_line(err)
    assert message.startswith(f"{RESULTS / name}: ") and fragment in message, message


def test_unreadable_files_are_refused(capsys, tmp_path):
    fresh = write(tmp_path, "fresh.json", document(1))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    status, _, err = run(capsys, "compare", fresh, broken)
    assert status == 2 and one_error_line(err).startswith(f"{broken}: not JSON (")
    status, _, err = run(capsys, "compare", fresh, tmp_path / "missing.json")
    assert status == 2 and "missing.json: cannot read: No such file or directory" in one_error_line(err)
    status, _, err = run(capsys, "compare", fresh, fresh, "--fail-above", "two")
    assert status == 2 and "argument --fail-above: 'two' is not a percentage (e.g. 2%)" in one_error_line(err)


def test_compare_judges_rows_directly():
    base, slow = document(1), document(2, slower={("ELEMENT_WISE_SIGN", "FLOAT32"): 1.05})
    options = compare.CompareOptions(fail_above=0.03)
    row = compare.compare_rows(base["results"][0], slow["results"][0], options)
    assert row.basis == "gpu" and row.verdict == compare.SLOWER and row.fails
    assert row.low < row.ratio < row.high and row.p_value < 1e-6 and row.base_samples == row.new_samples == 30
    loose = compare.compare_rows(base["results"][0], slow["results"][0], compare.CompareOptions(min_change=0.08))
    assert loose.verdict == compare.SAME and not loose.fails  # a 5% change under --min-change 8%


# ------------------------------------------------------------------------------------- compare, targets runs

def targets_document(seed: int, adapter: str = "NVIDIA H100 80GB HBM3", slower: dict | None = None,
                     samples: int = 30) -> dict:
    """A targets run with every kind of timed figure, from 1%-noisy samples (host figures 2%): the WGSL and
    PyTorch copies, contiguous rows, a transposed row with PyTorch's and CuPy's figures, and the host section.
    `slower` scales a figure's times, by (section, figure) as compare names them."""
    rng = np.random.default_rng(seed)
    slower = slower or {}

    def noisy(median: float, where: tuple[str, str], spread: float = 0.01) -> list[float]:
        return (median * slower.get(where, 1.0) * (1 + spread * rng.standard_normal(samples))).tolist()

    def timed(median: float, moved: int, where: tuple[str, str]) -> dict:
        fields = timed_fields(stats.Sampled(noisy(median, where), noisy(2 * median, where), "min_samples"))
        return {**fields, "gbps": moved / fields["gpu_median_ns"], "gbps_basis": "gpu"}

    def library(median: float, moved: int, layout: str, where: tuple[str, str]) -> dict:
        return torch_compare.summary(stats.Sampled(noisy(median, where), [], "min_samples"), moved, layout)

    def row(section: str, dtype: str, sizes: list[int], median: float, libraries: tuple[str, ...] = ()) -> dict:
        moved = 2 * int(np.prod(sizes)) * {"FLOAT32": 4, "FLOAT16": 2}[dtype]
        name = f"sign {dtype.lower()}"
        entry = {"operator": "ELEMENT_WISE_SIGN", "mode": None, "dtype": dtype, "out_dtype": dtype, "sizes": sizes,
                 "strides": {}, "bytes": moved, "exact": True, "error": None,
                 **timed(median, moved, (section, name)), "torch": None, "cupy": None}
        for key, label in (("torch", "PyTorch"), ("cupy", "CuPy")):
            if key in libraries:
                entry[key] = library(2.5 * median, moved, "row-major out", (section, f"{name} {label}"))
        return entry

    host = {key: noisy(value, ("host", key), 0.02) for key, value in [
        ("batch_host_us_per_op", 6.0), ("batch_table_host_us_per_op", 5.0), ("bare_batch_host_us_per_op", 3.5),
        ("small_op_readback_us", 200.0), ("bare_submit_readback_us", 195.0), ("numpy_api_small_op_us", 600.0),
        ("large_gpu_median_ns", 711_000.0), ("large_batch_wall_ns_per_op", 730_000.0)]}
    doc = document(seed, adapter)
    del doc["results"]
    doc.update(command="targets", settings={"iterations": samples, "warmup": 2, "repeats": 1, "max_noise": None,
                                            "max_time_s": 1.0, "max_samples": 5000, "elements": 1 << 26},
               wgsl_copy={"bytes": 1 << 29, **timed(180_000.0, 1 << 29, ("copy", "WGSL copy"))},
               torch_copy_samples=[library(185_000.0, 1 << 29, "contiguous", ("copy", "PyTorch copy"))],
               contiguous=[row("contiguous", "FLOAT32", [1 << 26], 180_000.0, ("torch",)),
                           row("contiguous", "FLOAT16", [1 << 27], 181_000.0, ("torch",))],
               transposed=[row("transposed", "FLOAT32", [8192, 8192], 190_000.0, ("torch", "cupy"))],
               host=targets.host_figures(host, 1 << 28))
    doc.update({section: [] for section in targets.ROW_SECTIONS if section not in doc},
               wgsl_copy_gbps=doc["wgsl_copy"]["gbps"], torch_copy=doc["torch_copy_samples"][0])
    return doc


def figure_verdicts(out: str) -> dict[str, str]:
    """'contiguous sign float16': its verdict, from compare's table of a targets run."""
    table = out.split("\n\n")[1].splitlines()[2:]
    return {" ".join(cells[:2]): cells[-1] for cells in (re.split(r"\s{2,}", line.strip()) for line in table)}


def test_targets_runs_compare_figure_by_figure(capsys, tmp_path):
    path = write(tmp_path, "a.json", targets_document(1))
    status, out, err = run(capsys, "compare", path, path, "--fail-above", "0%")
    assert (status, err) == (0, "")
    marked = figure_verdicts(out)
    assert sorted(marked) == sorted([
        "copy WGSL copy (ref)", "copy PyTorch copy (ref)", "contiguous sign float32",
        "contiguous sign float32 PyTorch (ref)", "contiguous sign float16", "contiguous sign float16 PyTorch (ref)",
        "transposed sign float32", "transposed sign float32 PyTorch (ref)", "transposed sign float32 CuPy (ref)",
        *(f"host {key}" + (" (ref)" if key.startswith("bare_") else "") for key in targets.HOST_FIGURES)])
    assert set(marked.values()) == {"within noise"}
    assert "17 case(s) in both runs: 0 slower, 0 faster beyond the noise, 17 within it" in out
    assert re.search(r"^host\s+batch_host_us_per_op\s+-\s+[56](\.\d+)? us\* ", out, re.M)  # host time, in ns
    assert "*: host time (a run without GPU times, or a host-side figure)" in out.splitlines()


def test_a_planted_slowdown_in_a_targets_row_is_flagged_and_fails(capsys, tmp_path):
    base = write(tmp_path, "base.json", targets_document(1))
    status, out, err = run(capsys, "compare", base, write(tmp_path, "rerun.json", targets_document(2)),
                           "--fail-above", "2%")
    assert (status, err) == (0, "") and set(figure_verdicts(out).values()) == {"within noise"}
    slow = write(tmp_path, "slow.json", targets_document(2, slower={("contiguous", "sign float16"): 1.10,
                                                                     ("host", "batch_host_us_per_op"): 1.25}))
    status, out, err = run(capsys, "compare", base, slow, "--fail-above", "2%")
    assert status == 1
    marked = figure_verdicts(out)
    assert re.fullmatch(r"SLOWER \+(9\.\d|10\.\d)% \(above 2\.0%\)", marked["contiguous sign float16"]), marked
    assert re.fullmatch(r"SLOWER \+2\d\.\d% \(above 2\.0%\)", marked["host batch_host_us_per_op"]), marked
    assert "2 slower, 0 faster beyond the noise, 15 within it" in out
    assert one_error_line(err).startswith(f"2 case(s) slower than {base} by more than 2.0%, beyond the noise: "
                                          f"contiguous sign float16 {1 << 27} +")
    assert "host batch_host_us_per_op +2" in one_error_line(err)


def test_a_reference_figure_moving_never_fails_and_is_said(capsys, tmp_path):
    """The copies and PyTorch's and CuPy's figures are not gpuops' code: when they move, the machine did."""
    base = write(tmp_path, "base.json", targets_document(1))
    drifted = write(tmp_path, "drifted.json", targets_document(2, slower={("copy", "WGSL copy"): 1.08,
                                                                          ("transposed", "sign float32 CuPy"): 1.1}))
    status, out, err = run(capsys, "compare", base, drifted, "--fail-above", "2%")
    assert (status, err) == (0, "")
    marked = figure_verdicts(out)
    assert marked["copy WGSL copy (ref)"].startswith("SLOWER +") and "above" not in marked["copy WGSL copy (ref)"]
    assert marked["transposed sign float32 CuPy (ref)"].startswith("SLOWER +")
    assert "note: 2 reference figure(s) changed beyond the noise (copy WGSL copy 67108864 +" in out
    assert "the machine differed between the runs" in out


def test_targets_rows_match_by_section_and_sizes(capsys, tmp_path):
    new = targets_document(2)
    new["contiguous"][1]["sizes"] = [1 << 26]  # run at another size: another case
    new["transposed"][0].update(exact=False, error="1 of 67108864 elements differ from NumPy: not timed",
                                **dict.fromkeys(targets.TIMED_KEYS), torch=None, cupy=None)
    status, out, err = run(capsys, "compare", write(tmp_path, "a.json", targets_document(1)),
                           write(tmp_path, "b.json", new))
    assert status == 0, err
    lines = out.splitlines()
    # A wrong row has no PyTorch or CuPy figure: those are in BASE only.
    assert f"only in BASE: contiguous sign float16 {1 << 27}; contiguous sign float16 PyTorch {1 << 27}; transposed " \
           "sign float32 PyTorch 8192x8192; transposed sign float32 CuPy 8192x8192" in lines
    assert f"only in NEW: contiguous sign float16 {1 << 26}; contiguous sign float16 PyTorch {1 << 26}" in lines
    assert "not timed (a wrong result) in a run: transposed sign float32 8192x8192" in lines
    assert "12 case(s) in both runs" in out


def test_targets_runs_of_other_adapters_or_commands_are_refused(capsys, tmp_path):
    base = write(tmp_path, "base.json", targets_document(1))
    other = write(tmp_path, "other.json", targets_document(2, adapter="NVIDIA H200"))
    status, out, err = run(capsys, "compare", base, other)
    assert status == 2 and out == "" and "compare refuses runs of different adapters" in one_error_line(err)
    assert run(capsys, "compare", base, other, "--allow-different-adapters")[0] == 0
    cases = write(tmp_path, "default.json", document(1))
    for first, second, kinds in [(base, cases, "'targets' document and {} a 'default' one"),
                                 (cases, base, "'default' document and {} a 'targets' one")]:
        status, out, err = run(capsys, "compare", first, second)
        assert status == 2 and out == ""
        assert one_error_line(err) == (
            f"{first} is a {kinds.format(second)}: compare sets a targets document beside another targets document "
            "only, and runs of default, op and sweep beside each other")


# ------------------------------------------------------------------------------------- pooled targets runs

def test_pooled_runs_keep_every_sample_and_summarise_them_again():
    runs = [targets_document(seed, samples=10) for seed in (1, 2, 3)]
    runs[1]["contiguous"][0]["stopped_on"] = "max_time"
    pooled = targets.pool(runs, ["a-1.json", "a-2.json", "a-3.json"])
    assert pooled["pooled_from"] == [{"file": f"a-{i}.json", "created": run["created"]}
                                     for i, run in enumerate(runs, 1)]
    row = pooled["contiguous"][0]
    gpu = [t for run in runs for t in run["contiguous"][0]["gpu_samples_ns"]]
    assert row["gpu_samples_ns"] == gpu and row["iterations"] == 30 and row["stopped_on"] == "max_time"
    assert (row["gpu_median_ns"], row["gpu_noise"]) == (stats.summary(gpu)["median"], stats.noise(gpu))
    assert row["gbps"] == row["bytes"] / row["gpu_median_ns"]
    cupy = pooled["transposed"][0]["cupy"]
    assert cupy["iterations"] == 30 and cupy["gpu_samples_ns"] == [
        t for run in runs for t in run["transposed"][0]["cupy"]["gpu_samples_ns"]]
    assert pooled["wgsl_copy"]["iterations"] == 30 and pooled["wgsl_copy_gbps"] == pooled["wgsl_copy"]["gbps"]
    assert len(pooled["torch_copy_samples"]) == 3 and pooled["torch_copy"] == max(
        pooled["torch_copy_samples"], key=lambda c: c["gbps"])
    host = pooled["host"]
    assert host["samples"]["small_op_readback_us"]["iterations"] == 30
    assert host["small_op_readback_us"] == stats.summary(host["samples"]["small_op_readback_us"]["values"])["median"]
    runs[2]["contiguous"][1].update(exact=False, error="wrong")
    assert targets.pool(runs, ["1", "2", "3"])["contiguous"][1]["error"] == "wrong"  # a row wrong in any run
    with pytest.raises(targets.TargetsDocumentError, match=r"b\.json ran on 'NVIDIA H200' \(wgpu-native\), a\.json "
                                                           r"on 'NVIDIA H100 80GB HBM3' \(wgpu-native\): runs of "
                                                           "different adapters"):
        targets.pool([runs[0], targets_document(4, adapter="NVIDIA H200")], ["a.json", "b.json"])


def ab_targets():
    spec = importlib.util.spec_from_file_location("bench_ab_targets", ROOT / "bench" / "ab_targets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ab_rounds_alternate_and_pool_each_tree(capsys, tmp_path, monkeypatch):
    """bench/ab_targets.py with its targets runs faked: rounds in ABBA order, numbered on from those already there,
    each tree's runs pooled, and compare's verdict its exit status."""
    script = ab_targets()
    runs = []

    def fake_run(tree, options, json_path):
        runs.append((json_path.stem, tree, options))
        slower = {("contiguous", "sign float16"): 1.1} if json_path.stem.startswith("after") else None
        json_path.write_text(json.dumps(targets_document(len(runs), slower=slower, samples=10)))

    monkeypatch.setattr(script, "run_targets", fake_run)
    monkeypatch.setattr(script, "check_tree", lambda tree: None)
    out_dir = tmp_path / "ab"
    status = script.main(["old", "new", "--out", str(out_dir), "--rounds", "2", "--", "--only", "contiguous"])
    assert status == 0
    assert [(name, str(tree)) for name, tree, _ in runs] == [("before-1", "old"), ("after-1", "new"),
                                                             ("after-2", "new"), ("before-2", "old")]
    assert all(options == ["--only", "contiguous"] for *_, options in runs)
    assert json.loads((out_dir / "after.json").read_text())["contiguous"][1]["iterations"] == 20
    assert "SLOWER +" in capsys.readouterr().out
    assert script.main(["old", "new", "--out", str(out_dir), "--rounds", "1", "--fail-above", "2%"]) == 1
    assert [name for name, *_ in runs[4:]] == ["before-3", "after-3"]
    pooled = json.loads((out_dir / "before.json").read_text())
    assert [run["file"] for run in pooled["pooled_from"]] == ["before-1.json", "before-2.json", "before-3.json"]


def test_ab_runs_targets_from_the_tree_given(tmp_path):
    """One real run of a tree's targets by bench/ab_targets.py, at a size a software adapter runs in a moment."""
    script = ab_targets()
    tree = Path(gpuops.__file__).resolve().parents[1]  # the imported gpuops' (in CI the installed wheel's folder)
    script.check_tree(tree)
    path = tmp_path / "before-1.json"
    script.run_targets(tree, ["--elements", "256", "--only", "contiguous", "--match", "^sign float32$", "-i", "2"],
                       path)
    doc = json.loads(path.read_text())
    assert [targets.label(row) for row in doc["contiguous"]] == ["sign float32"]
    assert len(doc["contiguous"][0]["host_samples_ns"]) == 2
    assert "| sign float32 | 2^8 | " in path.with_suffix(".txt").read_text()


# --------------------------------------------------------------------------------- docs/bench-json.md, checked

def table_keys(heading: str) -> set[str]:
    """The backticked names in the first column of the first table under `heading` in docs/bench-json.md."""
    text = DOC.read_text(encoding="utf-8")
    lines = text[text.index(heading + "\n"):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| key |"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    cells = [line.split("|")[1] for line in lines[start + 2: end]]
    return {name for cell in cells for name in re.findall(r"`([^`]+)`", cell)}


def test_the_schema_page_names_every_key_the_files_have():
    assert table_keys("## `results[]`: one case") == set(RESULT_KEYS)
    assert table_keys("### `copy_roof[]`") == {"bytes_moved", "cache", "iterations", "gpu_median_ns", "gpu_noise",
                                               "host_median_ns", "host_noise", "gbps", "gbps_basis"}
    example = json.loads(re.search(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1))
    (row,) = example["results"]
    assert set(row) == set(RESULT_KEYS)
    assert row["gpu_noise"] == pytest.approx(stats.noise(row["gpu_samples_ns"]), abs=1e-3)
    assert row["host_noise"] == pytest.approx(stats.noise(row["host_samples_ns"]), abs=1e-3)
    settings = table_keys("### `settings`")
    assert set(example["settings"]) <= settings
    assert settings == set(example["settings"]) - {"case"} | {"case", "elements", "layout", "min_elements",
                                                              "max_elements"}
    assert set(example["copy_roof"][0]) == table_keys("### `copy_roof[]`")
    text = DOC.read_text(encoding="utf-8")
    for word in stats.STOPPED_ON:
        assert f'`"{word}"`' in text
    assert "relative interquartile range" in text and f"({stats.MAX_SAMPLES})" in text
