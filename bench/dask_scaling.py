"""gpuops on dask.distributed clusters of 1..N workers, one GPU each, and the limits measured beside them.

A fresh gpuops.dask.LocalGPUCluster for each size N.

    python bench/dask_scaling.py --json PATH [--workers 1 2 4] [--quick] [--threads-per-worker N] [--skip ...]
        [--host-elements 2^30] [--device-elements 2^30] [--single-elements 2^28] [--chunk-elements 2^26]

For each N (where N is more than the adapters, workers share them, and the rows say so):
  host      modulus_floor of --host-elements float32 pairs held in the workers' memory (each chunk of (2, chunk)
            holds a chunk of a and of b, made on a worker and persisted there), through
            ab.map_blocks(modulus_floor) giving (1, chunk) chunks (the pairs' axis kept: dropping it would make
            Dask concatenate, copy, each chunk before the call), persisted: host data to the GPUs and back, rate
            against N = 1 (goal on 4 GPUs: >= 3.4 x)
  device    X of --device-elements float32, uploaded once (x.map_blocks(gpuops.asarray), persisted), then
            np.sign(np.fmod(X, 7)) persisted and every worker's device synchronized (goal on 4 GPUs: >= 3.6 x); beside
            it the same two calls on each worker's chunks without Dask (the kernels alone)
  scheduler Dask's own cost: a persist of one trivial task per worker (the round trip), and of 64 trivial tasks
            per worker (per task)
  single    (N = 1 only) the host row's path on --single-elements pairs against one plain gpuops.modulus_floor
            call on as many pairs in this process, on the same adapter (goal: Dask <= 1.3 x plain); beside them,
            without the scheduler, the chunks' calls in this process one after the other and as many at once as
            the worker has threads, and the plain call inside the worker's process; and one more Dask run under
            Dask's task stream (task_stream: each task's compute on the worker, the time before the first starts
            and after the last ends, and each task's gpuops call on its own, logged as a Dask event)
Limits without Dask, for each N:
  memory    host memory bandwidth: N processes each copying --copy-bytes with np.copyto at once, into a
            destination written before (pre-touched) and into a new one (page faults, as a new result array)
  plain     N processes at once, each with its own adapter, each uploading (gpuops.asarray) and reading back
            (.numpy()) --host-elements / N float32, and calling modulus_floor on its share of the pairs: the PCIe
            links and host path of N GPUs with nothing of Dask
Rates are elements per second and GB/s of host data (12 bytes a pair: a, b and the result) or of device memory
(16 bytes an element: two kernels each reading and writing float32); each figure is the median of --repeats timed
runs after one untimed run. Every Dask result's first chunk is checked against NumPy bit for bit. Where PyTorch
finds CUDA, this process holds a CUDA context on every GPU (NVIDIA's driver otherwise runs Vulkan compute in a
lower performance state; --no-cuda-context leaves them out). --quick: sizes for the software adapter (2^20
elements, chunks of 2^18, workers 1 and 2, copies of 16 MiB).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import multiprocessing
import os
import platform
import statistics
import sys
import threading
import time

import numpy as np

import gpuops
from gpuops.bench.cli import parse_size
from gpuops.bench.reference import compare
from gpuops.bench.cuda_context import hold_cuda_contexts

try:
    import dask
    import dask.array as da
    import distributed
    from dask.core import flatten

    import gpuops.dask
except ImportError as exc:
    sys.exit(f"bench/dask_scaling.py needs dask[array] and distributed (pip install '.[dask]'): {exc}")

SCHEMA = "gpuops-dask-scaling/1"
HOST_BYTES_PER_PAIR = 12  # a, b and the result, float32
DEVICE_BYTES_PER_ELEMENT = 16  # fmod and sign, each reading and writing float32
GOALS = {"host": 3.4, "device": 3.6, "single": 1.3}


# ------------------------------------------------------------------------------------------------- data

def pair_values(seed: int, size: int) -> np.ndarray:
    """(2, size) float32: a in [-1000, 1000), b in [-100, 100) (zeros and signs of both kinds included)."""
    rng = np.random.default_rng(seed)
    pair = rng.random((2, size), dtype=np.float32)
    pair[0] *= 2000
    pair[0] -= 1000
    pair[1] *= 200
    pair[1] -= 100
    return pair


def pair_chunk(block_id=None, block_info=None) -> np.ndarray:
    """The chunk of the pairs at its block (the same values wherever it is made)."""
    size = block_info[None]["chunk-shape"][1]
    return pair_values(1 + block_id[1], size)


def modulus_floor_pair(pair: np.ndarray) -> np.ndarray:
    """(1, chunk): the result keeps the pairs' first axis (one block of size 1), because map_blocks with drop_axis
    hands the function the dropped axis's blocks concatenated, a copy of the whole chunk into new memory."""
    return gpuops.modulus_floor(pair[0], pair[1])[np.newaxis]


CALLS_TOPIC = "gpuops-dask-scaling-calls"  # the task-stream run's gpuops calls, logged as Dask events


def modulus_floor_pair_logged(pair: np.ndarray) -> np.ndarray:
    """modulus_floor_pair, with the gpuops call's own start and stop (this host's clock: the function's first and
    last moments) logged to the scheduler under CALLS_TOPIC with the task's key: the task stream's compute holds the
    call and what Dask does around it on the worker's thread."""
    start = time.time()
    result = modulus_floor_pair(pair)
    worker = distributed.get_worker()
    worker.log_event(CALLS_TOPIC, {"key": str(worker.get_current_task()), "start": start, "stop": time.time()})
    return result


def values_chunk(block_id=None, block_info=None) -> np.ndarray:
    size = block_info[None]["chunk-shape"][0]
    return pair_values(1 + block_id[0], size)[0]


def gpuops_sign(values: np.ndarray) -> np.ndarray:
    """np.sign with gpuops' documented difference: NaN and -0 give +0."""
    result = np.sign(values)
    result[np.isnan(result) | (result == 0)] = 0
    return result


def exact(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit, NaN payloads aside (NumPy's x % 0 is x86's NaN 0xffc00000, gpuops' 0x7fc00000); the sign of
    zero counts."""
    return compare(got, want) is None


def chunks_of(total: int, chunk: int) -> tuple[int, ...]:
    return (chunk,) * (total // chunk) + ((total % chunk,) if total % chunk else ())


def pairs_array(total: int, chunk: int) -> da.Array:
    return da.map_blocks(pair_chunk, dtype=np.float32, chunks=((2,), chunks_of(total, chunk)),
                         meta=np.empty((0, 0), np.float32))


# ------------------------------------------------------------------------------------------------- timing

def median_seconds(samples: list[float]) -> float:
    return statistics.median(samples)


def timed(run, repeats: int) -> list[float]:
    """run() once untimed, then `repeats` times timed (seconds each)."""
    run()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return samples


def timed_persists(client, make, repeats: int, make_logged=None):
    """make() (a persist, waited for) once untimed, then `repeats` times timed. The same graph has the same keys,
    and a persist whose keys the cluster still holds computes nothing: each result is dropped, and the scheduler has
    forgotten its keys, before the next run. The timings (seconds), the last result, and, given `make_logged` (make's
    graph with its tasks' calls logged under CALLS_TOPIC), where one more run of it spends its time on the workers
    (task_stream; the last result is then that run's), else None."""
    result = make()
    samples = []
    for _ in range(repeats):
        keys, result = keys_of(result), None
        wait_forgotten(client, keys)
        start = time.perf_counter()
        result = make()
        samples.append(time.perf_counter() - start)
    stream = None
    if make_logged is not None:
        keys, result = keys_of(result), None
        wait_forgotten(client, keys)
        with distributed.get_task_stream(client) as tasks:
            started = time.time()
            result = make_logged()  # (the same values as make's)
            ended = time.time()
        stream = task_stream(tasks.data, logged_calls(client, len(keys_of(result))), client.run(_scheduler_delay),
                             started, ended)
    return samples, result, stream


def _scheduler_delay(dask_worker) -> float:
    """What the worker adds to its clock for the times it reports (its estimate of the scheduler's clock's lead)."""
    return dask_worker.scheduler_delay


def logged_calls(client, count: int, timeout_s: float = 10.0) -> list[dict]:
    """The `count` call spans the logged run's tasks sent (CALLS_TOPIC); events reach the scheduler after the
    results they follow, so this waits for them (at most `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        calls = [message for _, message in client.get_events(CALLS_TOPIC)]
        if len(calls) >= count or time.monotonic() > deadline:
            return calls[-count:]
        time.sleep(0.01)


def wait_forgotten(client, keys: list[str]) -> None:
    """Return once the scheduler has forgotten `keys` (their collection dropped by the caller)."""
    gc.collect()  # (the collection's futures tell the scheduler they are released as they are collected)
    while client.run_on_scheduler(_held, keys=keys):
        time.sleep(0.01)


def keys_of(collection) -> list[str]:
    return [str(key) for key in flatten(collection.__dask_keys__())]


def task_stream(tasks: list[dict], calls: list[dict], delays: dict[str, float], started: float,
                ended: float) -> dict:
    """Where a run's wall time (`started` to `ended`, this host's clock, as the workers' are) went on the workers,
    from Dask's task stream: each task's compute, the time before the first task started, from the first start to
    the last stop, and after it (the results reported and the persist's wait answered); and from the tasks' logged
    calls (`calls`, each {"key", "start", "stop"}, matched to the tasks by key), each gpuops call's own time and each
    compute's time outside its call (Dask's work on the worker's thread around the function).

    A worker reports its times plus its estimate of the scheduler clock's lead as it stood when the task started,
    which on one host is noise and changes with each heartbeat. Each task loses its worker's estimate as the worker
    gives it after the run (`delays`, by worker address), exact unless a heartbeat came between; where that would
    put the task's call outside its compute, the nearest estimate that keeps it inside: so a placement is off by at
    most the compute's time outside its call. The split into call and outside rests on durations, each on one
    clock; a task whose call is missing, or lasts longer than its compute, is counted in `calls_unmatched`, and the
    calls are then not split."""
    logged = {call["key"]: call for call in calls}
    computes = []  # (start, stop) of each task's compute, this host's clock
    matched = []  # (start, stop) of the compute, and its call's duration, for each task whose call fits it
    for task in tasks:
        call = logged.get(str(task["key"]))  # (the key as the call logged it)
        worker_delay = delays.get(task["worker"], 0.0)
        for part in task["startstops"]:
            if part["action"] != "compute":
                continue
            delay = worker_delay
            fits = call is not None and call["stop"] - call["start"] <= part["stop"] - part["start"]
            if fits:  # of the estimates that keep the call inside the compute, the nearest
                delay = min(max(delay, part["start"] - call["start"]), part["stop"] - call["stop"])
            computes.append((part["start"] - delay, part["stop"] - delay))
            if fits:
                matched.append((computes[-1], call["stop"] - call["start"]))
    row = {"wall_s": ended - started, "tasks": len(computes),
           "other_actions": sorted({part["action"] for task in tasks for part in task["startstops"]} - {"compute"})}
    if computes:
        computes.sort()
        first, last = computes[0][0], max(stop for _, stop in computes)
        row.update(compute_s=[stop - start for start, stop in computes], before_first_task_s=first - started,
                   tasks_span_s=last - first, after_last_task_s=ended - last)
    if matched and len(matched) == len(computes):
        matched.sort()
        row.update(call_s=[call for _, call in matched],
                   outside_call_s=[(stop - start) - call for (start, stop), call in matched])
    else:
        row["calls_unmatched"] = len(computes) - len(matched)
    return row


def _held(dask_scheduler, keys: list[str]) -> bool:
    return any(str(key) in keys for key in dask_scheduler.tasks)


def rate_row(elements: int, samples: list[float], bytes_per_element: int) -> dict:
    seconds = median_seconds(samples)
    return {"elements": elements, "seconds": seconds, "seconds_all": samples, "min_seconds": min(samples),
            "elements_per_s": elements / seconds, "gb_per_s": elements * bytes_per_element / seconds / 1e9}


def synchronize_device() -> None:
    gpuops.default_device().synchronize()


def chunk_counts(client: distributed.Client, collection) -> dict[str, int]:
    """How many chunks of a persisted collection each worker holds."""
    counts: dict[str, int] = {}
    for holders in client.who_has(collection).values():
        for worker in holders:
            counts[worker] = counts.get(worker, 0) + 1
    return counts


# ------------------------------------------------------------------------------------------------- with Dask

def measure_host(client, total: int, chunk: int, repeats: int, stream_tasks: bool = False) -> dict:
    """The host row; `stream_tasks`: one more run under Dask's task stream, its calls logged (timed_persists)."""
    pairs = client.persist(pairs_array(total, chunk))
    distributed.wait(pairs)
    def make(function=modulus_floor_pair):
        r = client.persist(pairs.map_blocks(function, chunks=((1,), pairs.chunks[1]), dtype=np.float32,
                                            meta=np.empty((0, 0), np.float32)))
        distributed.wait(r)
        return r

    samples, r, stream = timed_persists(client, make, repeats,
                                        (lambda: make(modulus_floor_pair_logged)) if stream_tasks else None)
    first = r.blocks[0, 0].compute()[0]
    values = pair_values(1, first.size)
    with np.errstate(all="ignore"):
        checked = exact(first, np.remainder(values[0], values[1]))
    row = rate_row(total, samples, HOST_BYTES_PER_PAIR)
    row.update(chunk_elements=chunk, chunks=len(pairs.chunks[1]), chunks_per_worker=chunk_counts(client, pairs),
               exact=checked)
    if stream is not None:
        row["task_stream"] = stream
    return row


def measure_device(client, total: int, chunk: int, repeats: int) -> dict:
    host = da.map_blocks(values_chunk, dtype=np.float32, chunks=(chunks_of(total, chunk),),
                         meta=np.empty((0,), np.float32))
    x = client.persist(host.map_blocks(gpuops.asarray))
    distributed.wait(x)
    def make():
        y = client.persist(np.sign(np.fmod(x, 7)))
        distributed.wait(y)
        client.run(synchronize_device)  # the functions return once the work is submitted
        return y

    samples, y, _ = timed_persists(client, make, repeats)
    first = gpuops.dask.to_host(y).blocks[0].compute()
    checked = exact(first, gpuops_sign(np.fmod(pair_values(1, first.size)[0], np.float32(7))))
    kernels = client.run(kernels_alone, keys=keys_of(x), repeats=repeats)
    row = rate_row(total, samples, DEVICE_BYTES_PER_ELEMENT)
    row.update(chunk_elements=chunk, chunks=len(x.chunks[0]), chunks_per_worker=chunk_counts(client, x),
               exact=checked, kernels_alone_seconds=kernels)
    return row


def kernels_alone(dask_worker, keys: list[str], repeats: int) -> float:
    """np.sign(np.fmod(chunk, 7)) on every device chunk this worker holds, without Dask, then one synchronize:
    the median of `repeats` runs (seconds)."""
    chunks = [value for key, value in dask_worker.data.items() if str(key) in keys]
    device = gpuops.default_device()

    def run():
        for chunk in chunks:
            np.sign(np.fmod(chunk, 7))
        device.synchronize()

    return median_seconds(timed(run, repeats)) if chunks else 0.0


def trivial(chunk):
    return chunk


def measure_scheduler(client, workers: int, repeats: int) -> dict:
    """Dask's own time: the round trip of one trivial task per worker, and the time per task of 64 per worker."""
    rows = {}
    for per_worker in (1, 64):
        tasks = workers * per_worker
        array = client.persist(da.zeros(tasks, chunks=1, dtype=np.float32))
        distributed.wait(array)

        def make():
            done = client.persist(array.map_blocks(trivial))
            distributed.wait(done)
            return done

        samples, _, _ = timed_persists(client, make, repeats)
        rows[f"{per_worker}_per_worker"] = {"tasks": tasks, "seconds": median_seconds(samples),
                                            "ms_per_task": median_seconds(samples) / tasks * 1e3}
    return rows


def measure_single(client, adapter: int, total: int, chunk: int, repeats: int) -> dict:
    """The host row's Dask path against one plain call on the same pairs and the same adapter."""
    dask_row = measure_host(client, total, chunk, repeats, stream_tasks=True)
    threads = max(client.nthreads().values())
    local = measure_plain_here(adapter, total, chunk, threads, repeats)
    # (this process's pairs are gone before the worker makes its own)
    in_worker = next(iter(client.run(plain_in_worker, total=total, repeats=repeats).values()))
    return {"dask": dask_row, **local, "adapter": adapter, "dask_over_plain": dask_row["seconds"] /
            local["plain"]["seconds"], "plain_in_worker": in_worker}


def measure_plain_here(adapter: int, total: int, chunk: int, threads: int, repeats: int) -> dict:
    """In this process: one plain call on as many pairs as the Dask path's, and where the difference lies without
    the scheduler: the chunks' calls one after the other and as the worker runs them (`threads` at once)."""
    device = gpuops.Device(adapter=adapter)
    pair = pair_values(1, total)  # (as many pairs, in one array; the Dask path's first chunk starts the same)
    a, b = pair[0], pair[1]
    samples = timed(lambda: gpuops.modulus_floor(a, b, device=device), repeats)
    plain = rate_row(total, samples, HOST_BYTES_PER_PAIR)
    with np.errstate(all="ignore"):
        plain["exact"] = exact(gpuops.modulus_floor(a, b, device=device), np.remainder(a, b))
    parts = [(a[start:start + chunk], b[start:start + chunk]) for start in range(0, total, chunk)]

    def chunk_calls(at_once: int) -> None:
        def run(mine):
            for x, y in mine:
                gpuops.modulus_floor(x, y, device=device)
        workers = [threading.Thread(target=run, args=(parts[k::at_once],)) for k in range(at_once)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    in_turn = rate_row(total, timed(lambda: chunk_calls(1), repeats), HOST_BYTES_PER_PAIR)
    side_by_side = rate_row(total, timed(lambda: chunk_calls(threads), repeats), HOST_BYTES_PER_PAIR)
    return {"plain": plain, "chunks_in_turn": in_turn, "chunks_side_by_side": {**side_by_side, "threads": threads}}


def plain_in_worker(total: int, repeats: int) -> dict:
    """One plain modulus_floor of `total` pairs in the worker's process, on its default device."""
    pair = pair_values(1, total)
    a, b = pair[0], pair[1]
    return rate_row(total, timed(lambda: gpuops.modulus_floor(a, b), repeats), HOST_BYTES_PER_PAIR)


def warm_up(client) -> None:
    """Each worker compiles the kernels before any timing."""
    def compile_kernels():
        x = np.float32([[1, -2], [3, 4]])
        gpuops.modulus_floor(x, x)
        np.sign(np.fmod(gpuops.asarray(x), 7)).numpy()

    client.run(compile_kernels)


def cluster_of(adapters: list[int], workers: int, threads: int | None) -> tuple[gpuops.dask.LocalGPUCluster, bool]:
    share = math.ceil(workers / len(adapters))
    used = adapters if share > 1 else adapters[:workers]
    options = {} if threads is None else {"threads_per_worker": threads}
    cluster = gpuops.dask.LocalGPUCluster(used, n_workers=workers, workers_per_adapter=share,
                                          dashboard_address=None, **options)
    return cluster, share > 1


# ------------------------------------------------------------------------------------------------- without Dask

def copy_process(size: int, repeats: int, barrier, results) -> None:
    source = np.ones(size, np.uint8)
    target = np.zeros(size, np.uint8)
    np.copyto(target, source)
    samples = {"pretouched": [], "new": []}
    for _ in range(repeats + 1):
        for kind in samples:
            destination = target if kind == "pretouched" else np.empty(size, np.uint8)
            barrier.wait()
            start = time.monotonic()
            np.copyto(destination, source)
            samples[kind].append((start, time.monotonic()))
    results.put(samples)


UPLOAD_PIECE = 1 << 28


def gpuops_process(adapter: int, elements: int, repeats: int, barrier, results) -> None:
    device = gpuops.Device(adapter=adapter)
    pair = pair_values(1 + adapter, elements)
    a, b = pair[0], pair[1]
    # Device arrays of at most UPLOAD_PIECE elements each: one array may not exceed the adapter's largest buffer.
    pieces = [a[start:start + UPLOAD_PIECE] for start in range(0, elements, UPLOAD_PIECE)]
    steps = {"upload": lambda: [gpuops.asarray(piece, device) for piece in pieces],
             "read_back": None,
             "modulus_floor": lambda: gpuops.modulus_floor(a, b, device=device)}
    resident = [gpuops.asarray(piece, device) for piece in pieces]
    steps["read_back"] = lambda: [array.numpy() for array in resident]
    samples = {name: [] for name in steps}
    for _ in range(repeats + 1):
        for name, step in steps.items():
            barrier.wait()
            start = time.monotonic()
            step()
            device.synchronize()
            samples[name].append((start, time.monotonic()))
    results.put(samples)


def concurrent(target, args_of, count: int, repeats: int) -> dict[str, list[float]]:
    """`count` processes of target(*args_of(i), repeats, barrier, results) at once; for each step, each round's
    seconds from the common start to the last process's end (the first, untimed round dropped)."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(count), context.Queue()
    processes = [context.Process(target=target, args=(*args_of(i), repeats, barrier, results)) for i in range(count)]
    for process in processes:
        process.start()
    gathered = [results.get(timeout=600) for _ in processes]
    for process in processes:
        process.join()
        if process.exitcode:
            raise RuntimeError(f"a measuring process ended with status {process.exitcode}")
    spans = {}
    for step in gathered[0]:
        rounds = zip(*(samples[step] for samples in gathered))
        spans[step] = [max(end for _, end in spans_) - min(start for start, _ in spans_) for spans_ in rounds][1:]
    return spans


def measure_memory(counts: list[int], size: int, repeats: int) -> list[dict]:
    rows = []
    for count in counts:
        spans = concurrent(copy_process, lambda i: (size,), count, repeats)
        rows.append({"processes": count, "bytes_each": size,
                     **{f"{kind}_gb_per_s": count * size / median_seconds(s) / 1e9 for kind, s in spans.items()}})
    return rows


def measure_gpuops(adapters: list[int], counts: list[int], total: int, repeats: int) -> list[dict]:
    rows = []
    for count in counts:
        share = total // count
        spans = concurrent(gpuops_process, lambda i: (adapters[i % len(adapters)], share), count, repeats)
        row = {"processes": count, "adapters": [adapters[i % len(adapters)] for i in range(count)],
               "elements_each": share}
        for step, samples in spans.items():
            per_element = HOST_BYTES_PER_PAIR if step == "modulus_floor" else 4
            row[step] = rate_row(share * count, samples, per_element)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------- report

def speedups(rows: list[dict], key: str) -> None:
    base = next((row[key]["elements_per_s"] for row in rows if row["workers"] == 1), None)
    for row in rows:
        if base:
            row[key]["speedup"] = row[key]["elements_per_s"] / base


def goals(document: dict) -> list[dict]:
    results = []
    for key in ("host", "device"):
        for row in document["clusters"]:
            if row["workers"] == 4 and "speedup" in row[key] and not row["shared"]:
                results.append({"goal": f"{key}: 4 workers >= {GOALS[key]} x 1 worker", "value": row[key]["speedup"],
                                "met": row[key]["speedup"] >= GOALS[key]})
    single = document.get("single")
    if single:
        results.append({"goal": f"single: Dask <= {GOALS['single']} x plain call", "value": single["dask_over_plain"],
                        "met": single["dask_over_plain"] <= GOALS["single"]})
    return results


def report(document: dict) -> None:
    print(f"gpuops {document['gpuops_version']} on {', '.join(document['adapter_names'])}; dask {document['dask']}, "
          f"distributed {document['distributed']}; {document['cpus']} CPUs; CUDA contexts held: "
          f"{document['cuda_contexts']}")
    print(f"{'workers':>7} {'host s':>9} {'host GB/s':>9} {'x':>5} {'device s':>9} {'dev GB/s':>9} {'x':>5} "
          f"{'kernels s':>9} {'round trip ms':>13} {'ms/task':>7}  chunks per worker")
    for row in document["clusters"]:
        host, device, scheduler = row["host"], row["device"], row["scheduler"]
        kernels = max(device["kernels_alone_seconds"].values())
        print(f"{row['workers']:>7} {host['seconds']:>9.4f} {host['gb_per_s']:>9.2f} {host.get('speedup', 0):>5.2f} "
              f"{device['seconds']:>9.4f} {device['gb_per_s']:>9.1f} {device.get('speedup', 0):>5.2f} "
              f"{kernels:>9.4f} {scheduler['1_per_worker']['seconds'] * 1e3:>13.2f} "
              f"{scheduler['64_per_worker']['ms_per_task']:>7.3f}  {sorted(host['chunks_per_worker'].values())}"
              + ("  (workers share adapters)" if row["shared"] else ""))
    single = document.get("single")
    if single:
        print(f"single: Dask {single['dask']['seconds']:.4f} s, plain {single['plain']['seconds']:.4f} s: "
              f"{single['dask_over_plain']:.2f} x")
        if "chunks_in_turn" in single:
            print(f"single without the scheduler: the chunks' calls in turn {single['chunks_in_turn']['seconds']:.4f} s, "
                  f"{single['chunks_side_by_side']['threads']} at a time "
                  f"{single['chunks_side_by_side']['seconds']:.4f} s; the plain call in the worker "
                  f"{single['plain_in_worker']['seconds']:.4f} s")
        stream = single["dask"].get("task_stream")
        if stream and stream.get("tasks"):
            print(f"single under Dask's task stream: {stream['wall_s']:.4f} s in all; tasks' computes "
                  f"{', '.join(f'{t:.4f}' for t in stream['compute_s'])} s; before the first "
                  f"{stream['before_first_task_s']:.4f} s, first start to last stop {stream['tasks_span_s']:.4f} s, "
                  f"after it {stream['after_last_task_s']:.4f} s")
            if "call_s" in stream:
                print(f"  the gpuops calls in those tasks {', '.join(f'{t:.4f}' for t in stream['call_s'])} s; each "
                      f"compute outside its call {', '.join(f'{t:.4f}' for t in stream['outside_call_s'])} s")
            else:
                print(f"  {stream['calls_unmatched']} tasks without a logged gpuops call that fits their compute")
    for row in document.get("memory", []):
        print(f"memory: {row['processes']} processes copying: pre-touched {row['pretouched_gb_per_s']:.1f} GB/s, "
              f"new {row['new_gb_per_s']:.1f} GB/s")
    for row in document.get("plain", []):
        print(f"plain gpuops, {row['processes']} processes: upload {row['upload']['gb_per_s']:.1f} GB/s, read-back "
              f"{row['read_back']['gb_per_s']:.1f} GB/s, modulus_floor {row['modulus_floor']['gb_per_s']:.1f} GB/s "
              f"of host data ({row['modulus_floor']['seconds']:.4f} s)")
    checks = [row[key]["exact"] for row in document["clusters"] for key in ("host", "device")]
    print("every result checked against NumPy:", "exact" if all(checks) else "MISMATCH")
    for goal in document["goals"]:
        print(f"goal {goal['goal']}: {goal['value']:.2f} {'met' if goal['met'] else 'MISSED'}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes for the software adapter")
    parser.add_argument("--workers", nargs="*", type=int, default=None, help="cluster sizes (default 1 2 4)")
    parser.add_argument("--adapters", nargs="*", type=int, default=None,
                        help="adapter indices (default: every adapter of the kind gpuops chooses)")
    parser.add_argument("--threads-per-worker", type=int, default=None,
                        help="tasks each worker runs at once (default: LocalGPUCluster's, 2)")
    parser.add_argument("--host-elements", type=parse_size, default=None, help="default 2^30 (--quick: 2^20)")
    parser.add_argument("--device-elements", type=parse_size, default=None, help="default 2^30 (--quick: 2^20)")
    parser.add_argument("--single-elements", type=parse_size, default=None, help="default 2^28 (--quick: 2^20)")
    parser.add_argument("--chunk-elements", type=parse_size, default=None, help="default 2^26 (--quick: 2^18)")
    parser.add_argument("--copy-bytes", type=parse_size, default=None, help="default 2^30 (--quick: 2^24)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=("single", "memory", "plain"))
    parser.add_argument("--no-cuda-context", action="store_true",
                        help="hold no CUDA context (by default, where PyTorch finds CUDA, one on every CUDA GPU)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    quick = args.quick
    workers = args.workers or ([1, 2] if quick else [1, 2, 4])
    host_elements = args.host_elements or (1 << (20 if quick else 30))
    device_elements = args.device_elements or (1 << (20 if quick else 30))
    single_elements = args.single_elements or (1 << (20 if quick else 28))
    chunk = args.chunk_elements or (1 << (18 if quick else 26))
    copy_bytes = args.copy_bytes or (1 << (24 if quick else 30))

    # NVIDIA's driver runs Vulkan compute in a lower performance state while no CUDA context exists on the GPU; a
    # context in any process counts, so this process holds one on every GPU for the whole run.
    cuda_contexts = [] if args.no_cuda_context else hold_cuda_contexts()
    listed = gpuops.adapters()
    adapters = gpuops.dask.default_adapters() if args.adapters is None else args.adapters
    names = {a.index: f"[{a.index}] {a.name} ({a.backend}, {a.type})" for a in listed}
    document = {"schema": SCHEMA, "gpuops_version": gpuops.__version__, "dask": dask.__version__,
                "distributed": distributed.__version__, "numpy": np.__version__, "python": platform.python_version(),
                "host": platform.platform(), "cpus": os.cpu_count(), "adapters": adapters,
                "adapter_names": [names[i] for i in adapters], "quick": quick, "cuda_contexts": len(cuda_contexts),
                "options": {"threads_per_worker": args.threads_per_worker, "chunk_elements": chunk,
                            "host_elements": host_elements, "device_elements": device_elements,
                            "single_elements": single_elements, "copy_bytes": copy_bytes, "repeats": args.repeats},
                "clusters": []}
    for count in workers:
        cluster, shared = cluster_of(adapters, count, args.threads_per_worker)
        with cluster, distributed.Client(cluster) as client:
            warm_up(client)
            row = {"workers": count, "shared": shared, "threads_per_worker": sorted(set(client.nthreads().values())),
                   "worker_adapters": {k: str(v) for k, v in gpuops.dask.worker_adapters(client).items()},
                   "host": measure_host(client, host_elements, chunk, args.repeats),
                   "device": measure_device(client, device_elements, chunk, args.repeats),
                   "scheduler": measure_scheduler(client, count, args.repeats)}
            document["clusters"].append(row)
            if count == 1 and "single" not in args.skip:
                document["single"] = measure_single(client, adapters[0], single_elements, chunk, args.repeats)
        speedups(document["clusters"], "host")
        speedups(document["clusters"], "device")
        save(document, args.json)  # what is measured so far survives a later section's failure
    if "memory" not in args.skip:
        document["memory"] = measure_memory(workers, copy_bytes, args.repeats)
        save(document, args.json)
    if "plain" not in args.skip:
        document["plain"] = measure_gpuops(adapters, workers, host_elements, args.repeats)
    document["goals"] = goals(document)
    save(document, args.json)
    report(document)
    if args.json:
        print(f"wrote {args.json}")
    return document


def save(document: dict, path: str | None) -> None:
    if path:
        with open(path, "w") as file:
            json.dump(document, file, indent=1, default=str)


if __name__ == "__main__":
    main()
