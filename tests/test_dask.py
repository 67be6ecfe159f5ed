"""gpuops on a dask.distributed cluster of two worker processes (gpuops.dask): every operator through da.map_blocks on
NumPy chunks and through NumPy's ufuncs on device-array chunks, against NumPy bit for bit (and Dask's own assert_eq
for the arrays' dtype, shape, chunks and meta); the workers' adapters; a worker killed mid-run; the refusals.

The cluster's workers share the adapter gpuops chooses (two workers on one GPU where there is one: the software
adapter in CI), or take one GPU each where there are several of that kind."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

try:
    import dask.array as da
    import distributed
    from dask.array.utils import assert_eq
    from dask.core import flatten
except ImportError as exc:  # never a skip: CI installs the test extra, which has them
    raise ImportError(f"tests/test_dask.py needs dask[array] and distributed (the test extra: pip install -e "
                      f"'.[test]'): {exc}") from exc

import gpuops
import gpuops.dask
from gpuops.adapter_choice import ADAPTER_ENV

from .test_device_arrays import numpy_sign, same, specials

# The same types through both paths: the kernels compiled for one serve the other (compiling takes most of the time).
TYPES = ["float32", "float16", "int16"]
FLOATS = ["float32", "float16"]  # IS_NAN and IS_INFINITY take floats only


@pytest.fixture(scope="module")
def client():
    adapters = gpuops.dask.default_adapters()[:2]  # room for two workers: two adapters, or one shared
    with gpuops.dask.LocalGPUCluster(adapters, workers_per_adapter=3 - len(adapters), dashboard_address=None) as \
            cluster, distributed.Client(cluster) as client:
        yield client


def operands(dtype: str):
    """Every special value of the type against every other (66 x 66 for float32), in ragged chunks, and the
    divisors' row alone, as NumPy arrays."""
    a, b = np.meshgrid(specials(dtype), specials(dtype), indexing="ij")
    return a, b, np.ascontiguousarray(b[0])


def chunked(array: np.ndarray) -> da.Array:
    """Ragged chunks along the first axis; along the last, equal ones (a broadcast row's kernel is compiled for its
    length: one length, one kernel to compile on each worker)."""
    last = array.shape[-1]
    width = next((w for w in range(last // 2, 1, -1) if last % w == 0), last)
    return da.from_array(array, chunks=(max(1, (array.shape[0] + 2) // 3),) * (array.ndim > 1) + (width,))


def check(client, got: da.Array, want: np.ndarray) -> None:
    """Dask's assert_eq on the cluster (dtype, shape, chunks, meta against the chunks, values exactly), and NumPy's
    bits (the sign of zero counts, NaN payloads aside)."""
    got = got.persist()
    assert_eq(got, want, scheduler=client, rtol=0, atol=0)
    same(got.compute(), want)


def test_operators_on_numpy_chunks_through_map_blocks(client):
    cases = []
    for dtype in TYPES:
        a, b, row = operands(dtype)
        x, y = chunked(a), chunked(b)
        with np.errstate(all="ignore"):
            cases += [(da.map_blocks(gpuops.sign, x), numpy_sign(a)),
                      (da.map_blocks(gpuops.modulus_floor, x, y), np.remainder(a, b)),
                      (da.map_blocks(gpuops.modulus_truncate, x, chunked(row)), np.fmod(a, row))]  # a row broadcast
        if dtype in FLOATS:
            modes = ("either", "positive", "negative") if dtype == "float32" else ("either",)
            wants = {"either": np.isinf(a), "positive": np.isposinf(a), "negative": np.isneginf(a)}
            cases += [(da.map_blocks(gpuops.is_nan, x), np.isnan(a))]
            cases += [(da.map_blocks(gpuops.is_infinity, x, mode=mode), wants[mode]) for mode in modes]
    results = client.persist([got for got, _ in cases])  # every case's tasks at once, then each one checked
    for got, (_, want) in zip(results, cases):
        assert type(got._meta) is np.ndarray and got.dtype == want.dtype
        check(client, got, want)


@pytest.mark.parametrize("dtype", TYPES)
def test_ufuncs_on_device_chunks(client, dtype):
    a, b, row = operands(dtype)
    x, y = chunked(a).map_blocks(gpuops.asarray), chunked(b).map_blocks(gpuops.asarray)
    scalar = 7 if dtype[0] in "iu" else 2.5
    with np.errstate(all="ignore"):
        cases = [(np.sign(x), numpy_sign(a)),
                 (np.remainder(x, y), np.remainder(a, b)),
                 (x % scalar, np.remainder(a, scalar)),
                 (scalar % y, np.remainder(scalar, b)),
                 (np.fmod(x, row), np.fmod(a, row)),  # a NumPy operand, broadcast: uploaded by each task
                 (np.fmod(x, y[:1]), np.fmod(a, b[:1])),  # a Dask array broadcast along the first axis
                 (np.sign(np.remainder(np.fmod(x, chunked(row)), y)),  # a chain stays on the devices
                  numpy_sign(np.remainder(np.fmod(a, row), b)))]
        if dtype in FLOATS:
            cases += [(np.isnan(x), np.isnan(a)), (np.isinf(np.remainder(x, y)), np.isinf(np.remainder(a, b)))]
    for got, want in cases:
        assert type(got._meta) is gpuops.DeviceArray and got._meta.size == 0
        assert got.dtype == want.dtype and got.shape == want.shape
        check(client, gpuops.dask.to_host(got), want)


def test_device_chunks_stay_on_the_workers_and_move_as_values(client):
    """Device-array chunks persisted on one worker, and others on the other: the workers hold device arrays, and a
    ufunc of the two makes Dask move one operand of each task to the other worker, as its values."""
    first, second = client.scheduler_info()["workers"]
    a = np.arange(-60, 60, dtype=np.int64).reshape(12, 10)
    b = np.arange(60, -60, -1, dtype=np.int64).reshape(12, 10)
    x = client.persist(da.from_array(a, chunks=(3, 10)).map_blocks(gpuops.asarray), workers=[first])
    y = client.persist(da.from_array(b, chunks=(3, 10)).map_blocks(gpuops.asarray), workers=[second])
    distributed.wait([x, y])
    assert set(client.who_has(x).values()) == {(first,)} and set(client.who_has(y).values()) == {(second,)}
    keys = [str(key) for key in flatten([x.__dask_keys__(), y.__dask_keys__()])]
    assert client.run(types_held, keys=keys) == {first: ["DeviceArray"], second: ["DeviceArray"]}
    with np.errstate(all="ignore"):
        check(client, gpuops.dask.to_host(np.remainder(x, y)), np.remainder(a, b))
    # Dask weighs moving a chunk, and places tasks, by its bytes as the workers report them
    sizes = client.nbytes(summary=False)
    assert {sizes[key] for key in flatten(x.__dask_keys__())} == {3 * 10 * 8}


def types_held(dask_worker, keys: list[str]) -> list[str]:
    """The type names of what a worker holds under these keys."""
    return sorted({type(value).__name__ for key, value in dask_worker.data.items() if str(key) in keys})


def test_each_worker_reports_its_adapter(client):
    workers = client.scheduler_info()["workers"]
    reported = gpuops.dask.worker_adapters(client)
    assert set(reported) == set(workers)
    listed = {adapter.index: adapter for adapter in gpuops.adapters()}
    for address, info in workers.items():
        index = int(info["name"].split("-")[1])  # adapter-<index>, or adapter-<index>-<k> where they share
        assert reported[address].setting == str(index)
        adapter = listed[index]
        assert reported[address].name == f"{adapter.name} ({adapter.backend}, {adapter.type})"
    pids = client.run(os.getpid)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()  # a device each, in its own process


def test_scaling_past_the_adapters_is_refused(client):
    with pytest.raises(gpuops.ValidationError, match=r"^gpuops.dask.LocalGPUCluster.scale: 3 workers; the adapters "
                                                     r"\[\d+(, \d+)?\] with workers_per_adapter=\d have room for 2"):
        client.cluster.scale(3)
    assert len(client.cluster.worker_spec) == 2


def test_own_functions_on_device_chunks_take_dtype(client):
    """map_blocks of a function of the caller's on device chunks: with dtype=, Dask learns the chunk type by calling
    it on the zero-size meta; without, its dtype inference needs NumPy to convert the meta, which is refused."""
    a = np.float32(np.arange(-6, 6).reshape(3, 4))
    x = chunked(a).map_blocks(gpuops.asarray)
    back = x.map_blocks(lambda chunk: chunk.numpy(), dtype=x.dtype)
    assert type(back._meta) is np.ndarray and back._meta.size == 0
    check(client, back, a)
    with pytest.raises(TypeError, match=r"gpuops.DeviceArray is on the GPU: read it back with .numpy\(\)"):
        x.map_blocks(lambda chunk: chunk.numpy())


def test_gathering_device_chunks_is_refused(client):
    x = chunked(np.float32(np.arange(12).reshape(3, 4))).map_blocks(gpuops.asarray)
    with pytest.raises(gpuops.ValidationError, match=r"^gpuops.dask: .* gpuops.dask.to_host\(x\).compute\(\)"):
        client.compute(np.sign(x)).result()
    with pytest.raises(gpuops.ValidationError, match="x's chunks are numpy.ndarray, not gpuops.DeviceArray"):
        gpuops.dask.to_host(da.zeros(3))
    with pytest.raises(TypeError, match="x .* is a ndarray, not a dask.array.Array"):
        gpuops.dask.to_host(np.zeros(3))


def test_a_worker_killed_mid_run(client):
    """One worker's process is killed while it computes: Dask runs its tasks again (the device chunks it held are
    made again from the host chunks), and every value is still NumPy's."""
    a, b, _ = operands("float32")

    def slow(chunk):
        time.sleep(0.2)
        return chunk

    x = chunked(a).map_blocks(gpuops.asarray)
    y = chunked(b).map_blocks(gpuops.asarray)
    result = gpuops.dask.to_host(np.fmod(x, y).map_blocks(slow, dtype=np.float32)).persist()
    victim = next(iter(client.scheduler_info()["workers"]))
    deadline = time.monotonic() + 60
    keys = set(flatten(result.__dask_keys__()))
    while not keys & set(client.has_what()[victim]):  # until the victim holds a finished chunk of the result
        assert time.monotonic() < deadline, "no chunk finished on the worker in 60 s"
        time.sleep(0.05)
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    with np.errstate(all="ignore"):
        check(client, result, np.fmod(a, b))
    client.wait_for_workers(2, timeout=60)  # the nanny starts it again, for the tests after this one


def test_impossible_assignments_are_refused():
    with pytest.raises(gpuops.DeviceError, match=r"^gpuops.dask.LocalGPUCluster: adapters\[1\]: index 99 is past the "
                                                 r"adapters .*; adapters: \[0\] "):
        gpuops.dask.LocalGPUCluster([0, 99])
    room = r"^gpuops.dask.LocalGPUCluster: 2 workers; the adapters \[0\] with workers_per_adapter=1 have room for 1 "
    with pytest.raises(gpuops.ValidationError, match=room + r"\(one GPU per worker\); pass workers_per_adapter=2 or "):
        gpuops.dask.LocalGPUCluster([0], n_workers=2)
    with pytest.raises(gpuops.ValidationError, match=r"3 workers; the adapters \[0\] with workers_per_adapter=2 have "
                                                     r"room for 2"):
        gpuops.dask.LocalGPUCluster([0], n_workers=3, workers_per_adapter=2)
    for arguments, refused in (({"adapters": [0, 0]}, r"adapters\[1\] 0 is given twice"),
                               ({"adapters": []}, r"adapters is empty"),
                               ({"adapters": ["0"]}, r"adapters\[0\] '0'; allowed: an adapter's index"),
                               ({"adapters": 0}, r"adapters 0; allowed: None or a sequence"),
                               ({"workers_per_adapter": 0}, r"workers_per_adapter 0; allowed"),
                               ({"n_workers": -1}, r"n_workers -1; allowed"),
                               ({"processes": False}, r"processes=False; each worker needs a process"),
                               ({"worker_class": distributed.Worker}, r"worker_class <class .*Worker'>; allowed: "
                                                                      r"distributed.Nanny")):
        with pytest.raises(gpuops.ValidationError, match=f"^gpuops.dask.LocalGPUCluster: {refused}"):
            gpuops.dask.LocalGPUCluster(**arguments)


def test_a_worker_started_by_hand_with_an_index_past_the_end(client):
    """Workers started by hand (and on other hosts) take `GPUOPS_ADAPTER=<index> dask worker <scheduler> --preload
    gpuops.dask`: the preload opens the device as the worker starts, so an index past the adapters ends the worker
    at once with gpuops' DeviceError, and its command with it, before it joins."""
    command = [sys.executable, "-m", "distributed.cli.dask_worker", client.scheduler.address, "--nworkers", "1",
               "--preload", "gpuops.dask", "--no-dashboard"]
    refused = subprocess.run(command, env={**os.environ, ADAPTER_ENV: "99"}, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode != 0
    assert re.search(r"DeviceError: GPUOPS_ADAPTER='99': index 99 is past the adapters .* adapters: \[0\] ",
                     refused.stderr)
    assert len(client.scheduler_info()["workers"]) == 2


def test_the_scaling_benchmark_splits_a_run_into_scheduling_tasks_and_calls(client):
    """bench/dask_scaling.py's host row with its task-stream run, on this module's cluster at a tiny size: every
    task's gpuops call is logged and matched to its task, and the first task starts after the run does and the
    last ends before it, as far as the placement of tasks on this host's clock can tell."""
    script = Path(__file__).resolve().parent.parent / "bench" / "dask_scaling.py"
    spec = importlib.util.spec_from_file_location("dask_scaling", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no argument parsing at import
    # The script's functions travel by reference: the workers import it by this name, as Dask ships it.
    client.upload_file(str(script))
    sys.modules[spec.name] = module
    try:
        row = module.measure_host(client, 1 << 12, 1 << 10, 1, stream_tasks=True)
    finally:
        del sys.modules[spec.name]
    stream = row["task_stream"]
    assert row["exact"] and row["chunks"] == stream["tasks"] == 4
    assert "calls_unmatched" not in stream, stream
    assert len(stream["call_s"]) == len(stream["outside_call_s"]) == 4
    assert all(call > 0 for call in stream["call_s"]) and all(rest >= 0 for rest in stream["outside_call_s"])
    # (each task placed on this host's clock within its time outside its call: see task_stream)
    slack = max(stream["outside_call_s"])
    assert stream["before_first_task_s"] >= -slack and stream["after_last_task_s"] >= -slack


def test_the_task_stream_places_each_compute_around_its_call():
    """task_stream's arithmetic alone. A worker's reported times carry its estimate of the scheduler clock's lead,
    which changes with each heartbeat: each task loses its worker's estimate as read afterwards (`delays`), and
    where that puts its call outside its compute, the nearest estimate that keeps the call inside. Calls are
    matched to tasks by key; a task whose call lasts longer than its compute is counted, not split."""
    script = Path(__file__).resolve().parent.parent / "bench" / "dask_scaling.py"
    spec = importlib.util.spec_from_file_location("dask_scaling_arithmetic", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def task(key, worker, start, stop, lead):
        return {"key": key, "worker": worker,
                "startstops": ({"action": "compute", "start": start + lead, "stop": stop + lead},)}

    tasks = [task(("f", 0), "w1", 10.0, 10.5, 0.04), task(("f", 1), "w2", 10.1, 10.4, -0.03)]
    calls = [{"key": "('f', 1)", "start": 10.15, "stop": 10.35}, {"key": "('f', 0)", "start": 10.1, "stop": 10.4}]
    leads = {"w1": 0.04, "w2": -0.03}  # as the tasks' times carry them
    stream = module.task_stream(tasks, calls, leads, 9.9, 10.6)
    assert stream["compute_s"] == pytest.approx([0.5, 0.3])
    assert stream["call_s"] == pytest.approx([0.3, 0.2]) and stream["outside_call_s"] == pytest.approx([0.2, 0.1])
    assert (stream["before_first_task_s"], stream["tasks_span_s"], stream["after_last_task_s"]) == \
        pytest.approx((0.1, 0.5, 0.1))
    # Heartbeats since: w1's estimate would put f 0's call outside its compute, which is placed to end with the
    # call instead (0.1 s early); w2's is off too but keeps f 1's call inside (0.02 s late). Each placement is off
    # by less than its task's time outside its call.
    stream = module.task_stream(tasks, calls, {"w1": 0.5, "w2": -0.05}, 9.9, 10.6)
    assert (stream["before_first_task_s"], stream["tasks_span_s"], stream["after_last_task_s"]) == \
        pytest.approx((0.0, 0.52, 0.18))
    assert stream["call_s"] == pytest.approx([0.3, 0.2])
    stream = module.task_stream(tasks, calls[1:], leads, 9.9, 10.6)  # no call for f 0
    assert stream["calls_unmatched"] == 1 and "call_s" not in stream
    assert (stream["before_first_task_s"], stream["after_last_task_s"]) == pytest.approx((0.1, 0.1))
    longer = [dict(calls[0], stop=10.5), calls[1]]  # longer than its task's compute: not split, counted
    stream = module.task_stream(tasks, longer, leads, 9.9, 10.6)
    assert "call_s" not in stream and stream["calls_unmatched"] == 1


def test_import_gpuops_does_not_import_dask():
    code = "import sys, gpuops; print('dask' in sys.modules, 'gpuops.dask' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split() == ["False", "False"]
