"""What gpuops takes from inside wgpu-py and wgpudawn (gpuops/wgpu_internals.py), and the waits built on it.

The first tests fail where an upgrade of the installed packages removed an internal gpuops uses: gpuops would then
run its slower public fallback without a word. The others hold the waits to their promises: made on the waiting
thread without waking wgpu-py's poll thread, holding no lock that another thread's calls need, bounded, and ended
by the device's loss; and devices used side by side from several threads."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import wgpu

import gpuops
from gpuops import wgpu_internals
from gpuops.device import _LATE_SHARE, _SHORTEST_PAUSE, _SPIN_SECONDS, _WAIT_STEP, native_wait_pause
from gpuops.wgpu_internals import NativeAccess, Pending, PromiseAccess

from .dml import device_with
from .test_faults import run_script

USAGE = wgpu.BufferUsage


def test_wgpu_native_internals_are_there():
    """Each internal gpuops uses on wgpu-native, with the installed wgpu-py: a failure here names what an upgrade
    removed (gpuops runs, slower or without runtime_checks=False, until wgpu_internals.py is updated)."""
    assert wgpu_internals._native() is not None, \
        f"wgpu-py {wgpu.__version__}: gpuops' own maps and polls (wgpu_internals._native) are not reachable"
    assert wgpu_internals.has_trusted_shader_modules(), \
        f"wgpu-py {wgpu.__version__}: wgpuDeviceCreateShaderModuleTrusted is not reachable"
    device = wgpu.gpu.request_adapter_sync().request_device_sync()
    assert isinstance(wgpu_internals.host_access(wgpu, device), NativeAccess)
    assert not wgpu_internals.released(device) and isinstance(device._internal, object)
    buffer = device.create_buffer(size=16, usage=USAGE.MAP_WRITE | USAGE.COPY_SRC)
    assert hasattr(buffer, "_experimental_get_mapped_range"), "wgpu-py lost GPUBuffer._experimental_get_mapped_range"
    promise = buffer.map_async(wgpu.MapMode.WRITE)
    assert isinstance(getattr(promise, "_thread_event", None), threading.Event), "wgpu-py lost GPUPromise._thread_event"
    promise.sync_wait()
    buffer.unmap()


@pytest.mark.skipif(importlib.util.find_spec("wgpudawn") is None, reason="wgpudawn is not installed")
def test_dawn_internals_are_there():
    import wgpudawn

    assert wgpu_internals._dawn_future_waiter(wgpudawn) is not None, "wgpudawn lost wgpuInstanceWaitAny's bindings"
    assert callable(wgpu_internals._dawn_process_events(wgpudawn))
    promise_class = importlib.import_module("wgpudawn.backends.dawn._api").GPUPromise
    assert hasattr(promise_class, "_wgpu_future_id"), "wgpudawn lost GPUPromise._wgpu_future_id"


def test_a_device_on_wgpu_native_maps_and_waits_itself(device):
    if device.backend != "wgpu-native":
        pytest.skip("Dawn keeps its own wait")
    assert isinstance(device.host_access, NativeAccess)


def test_waits_never_wake_wgpu_pys_poll_thread(device, monkeypatch):
    """A call's read-back, a large upload and synchronize run their callbacks in the waiting thread's own polls:
    wgpu-py's poll thread is never asked to poll (its blocking polls would hold wgpu-core's fence lock)."""
    if device.backend != "wgpu-native":
        pytest.skip("Dawn has no poll thread")
    fresh = device_with(device)
    tokens = []
    poller = fresh.wgpu_device._poller
    get_token = poller.get_token
    monkeypatch.setattr(poller, "get_token", lambda: tokens.append(1) or get_token())
    x = np.linspace(-3, 3, (8 << 20) // 4 + 5, dtype=np.float32)  # uploaded through a mapped buffer
    assert np.array_equal(gpuops.sign(x, device=fresh), np.sign(x))
    y = gpuops.sign(gpuops.asarray(x[:100], fresh))
    fresh.synchronize()
    assert np.array_equal(y.numpy(), np.sign(x[:100]))
    assert tokens == []


def test_native_waits_spin_then_end_late_by_a_small_share_at_most():
    assert native_wait_pause(0.0) == 0.0 and native_wait_pause(_SPIN_SECONDS * 0.99) == 0.0
    for waited in (_SPIN_SECONDS, 3e-3, 0.04, 0.5, 10.0, 1000.0):
        pause = native_wait_pause(waited)
        assert _SHORTEST_PAUSE <= pause <= max(_LATE_SHARE * waited, _SHORTEST_PAUSE) and pause <= _WAIT_STEP


def _never_done(access_type, monkeypatch, begun: threading.Event, method: str = "begin_map") -> None:
    """The access's `method` begins nothing and hands back a wait that never completes (a device that stopped
    answering), setting `begun`."""
    monkeypatch.setattr(access_type, method, lambda self, *args: begun.set() or Pending(threading.Event()))


def test_other_threads_submit_and_wait_during_a_long_wait(device, monkeypatch):
    """While one thread waits (here for a read-back that does not complete until the test says so), other threads'
    calls on the same Device and the same wgpu device submit, wait and finish: the wait holds no lock."""
    waiting = device_with(device)
    waiting.wait_timeout = 30.0
    other = device_with(device)  # the same wgpu device: the same queue and polls
    begun = threading.Event()
    out = device.wgpu_device.create_buffer(size=64, usage=USAGE.STORAGE | USAGE.COPY_SRC)
    never = Pending(threading.Event())
    monkeypatch.setattr(waiting, "host_access", _Stalled(waiting.host_access, never, begun))
    outcome = []

    def read():
        try:
            waiting.read_buffer(out)
        except gpuops.DeviceError as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert begun.wait(10)
    x = np.linspace(-3, 3, 4099, dtype=np.float32)
    started = time.monotonic()
    for dev in (waiting, other):
        for _ in range(3):
            assert np.array_equal(gpuops.sign(x, device=dev), np.sign(x))
        chained = gpuops.sign(gpuops.asarray(x, dev))
        dev.synchronize()
        assert np.array_equal(chained.numpy(), np.sign(x))
    assert time.monotonic() - started < 20 and reader.is_alive() and not outcome  # done while it still waits
    never.failure = "ended by the test"
    never.event.set()
    reader.join(20)
    assert not reader.is_alive() and "ended by the test" in str(outcome[0])


class _Stalled:
    """A host access whose first map never completes (its looks still poll the device); every other call is the
    real access's."""

    def __init__(self, access, never: Pending, begun: threading.Event):
        self._access, self._never, self._begun = access, never, begun

    def begin_map(self, buffer, write, size):
        if not self._begun.is_set():
            self._begun.set()
            return self._never
        return self._access.begin_map(buffer, write, size)

    def finish(self, pending):
        if pending is self._never:
            raise RuntimeError(pending.failure)
        return self._access.finish(pending)

    def reusable(self, buffer, pending, view):
        return False if pending is self._never else self._access.reusable(buffer, pending, view)

    def __getattr__(self, name):
        return getattr(self._access, name)


def test_synchronize_is_bounded_and_ended_by_the_device_s_loss(device, monkeypatch):
    fresh = device_with(device)
    fresh.wait_timeout = 0.3
    begun = threading.Event()
    _never_done(type(fresh.host_access), monkeypatch, begun, "begin_work_done")  # (on Dawn too: as if it had one)
    with pytest.raises(gpuops.DeviceError, match=r"Device.synchronize: waiting for the queue: .* did not finish in "
                                                 r"0.3 seconds \(Device.wait_timeout\)"):
        fresh.synchronize()
    run_script("""
        access_class = type(device.host_access)
        begun = threading.Event()
        access_class.begin_work_done = lambda self: begun.set() or gpuops.wgpu_internals.Pending(threading.Event())
        outcome = []

        def wait():
            try:
                device.synchronize()
            except gpuops.DeviceError as exc:
                outcome.append(exc)

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        assert begun.wait(20)
        time.sleep(0.1)
        device.wgpu_device.destroy()
        waiter.join(20)
        assert not waiter.is_alive() and "Device.synchronize: waiting for the queue" in str(outcome[0]) \\
            and "was lost" in str(outcome[0]), outcome
        print("refused:", outcome[0])
    """)


def test_two_devices_on_one_adapter_from_two_threads(device):
    """Two Devices (each its own wgpu device on the adapter), one thread each, small calls and calls run in pieces
    at once: every result exact, and each device copies on its own threads."""
    devices = [gpuops.Device(adapter=device.adapter_name.split(" (")[0], backend=device.backend,
                             policy=gpuops.DispatchPolicy(stream_bytes=1 << 16)) for _ in range(2)]
    assert devices[0].host_copies is not devices[1].host_copies
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((64, 1000)) * 100).astype(np.float32)
    b = (rng.standard_normal(1000) * 7).astype(np.float32)
    b[b == 0] = 1
    failures = []

    def work(dev: gpuops.Device, seed: int) -> None:
        try:
            for step in range(6):
                part = a[seed::2]
                assert np.array_equal(gpuops.modulus_floor(part, b, device=dev), np.remainder(part, b))
                assert np.array_equal(gpuops.sign(part[:1, :8], device=dev), np.sign(part[:1, :8]))
                chained = gpuops.sign(gpuops.asarray(part, dev))
                dev.synchronize()
                assert np.array_equal(chained.numpy(), np.sign(part))
        except Exception as exc:  # reported by the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(dev, seed)) for seed, dev in enumerate(devices)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures and not any(thread.is_alive() for thread in threads), failures


def test_the_public_fallback_is_used_where_the_internals_are_missing(device, monkeypatch):
    monkeypatch.setattr(wgpu_internals, "_native", lambda: None)
    access = wgpu_internals.host_access(device.wgpu, device.wgpu_device)
    assert isinstance(access, PromiseAccess)


def test_host_path_benchmark_runs_at_tiny_sizes(tmp_path):
    script = Path(__file__).resolve().parent.parent / "bench" / "host_path.py"
    spec = importlib.util.spec_from_file_location("bench_host_path", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no argument parsing at import
    path = tmp_path / "host_path.json"
    document = module.main(["--rounds", "3", "--warmup", "1", "--chain-size", "2^10", "--series-exponent", "10",
                            "--split-size", "2^12", "--devices", "2", "--large", "2^12", "--large-iterations", "1",
                            "--long-job-ms", "2", "--skip-calibration", "--json", str(path)])
    assert json.loads(path.read_text()) == json.loads(json.dumps(document, default=str))
    assert document["schema"] == "gpuops-host-path/1"
    floors = document["floors"]
    assert floors["exact"] and floors["synchronize"]["median_ns"] > 0 and floors["sign 1024"]["median_ns"] > 0
    assert set(floors["ratios"]) == {"synchronize / idle floor", "sign 1024 / map floor"}
    assert document["chain"]["exact"] and all(row["exact"] for row in document["small_after_large"]["series"])
    assert len(document["small_after_large"]["series"]) == 8
    split = document["split"]
    assert split["exact"] and split["devices"] == 2 and split["ratios"]["speedup"] > 0
    assert [row["exact"] for row in document["large"]] == [True, True]
    if document["backend"] == "wgpu-native":
        assert document["submit_during_wait"]["gpuops synchronize"]["submit_ns"] > 0
        assert {"submit+block", "submit+spin", "map+block", "map+spin", "map+thread"} <= set(floors)


def test_host_path_links_copy_every_part_on_every_gpu(monkeypatch):
    """The links part (CUDA's own copies, the platform's floor) on a NumPy-backed stand-in for PyTorch with two
    GPUs: every copy moves its part, on the GPU the part belongs to, from the memory the row names."""
    script = Path(__file__).resolve().parent.parent / "bench" / "host_path.py"
    spec = importlib.util.spec_from_file_location("bench_host_path_links", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    copies = []

    class Tensor:
        def __init__(self, values, where, pinned):
            self.values, self.where, self.pinned = values, where, pinned

        def copy_(self, other):
            assert self.values.shape == other.values.shape and self.where != other.where
            copies.append((other.where, self.where, other.pinned or self.pinned, self.values.size))
            self.values[...] = other.values
            return self

    class Cuda:
        @staticmethod
        def device_count():
            return 2

        synchronize = empty_cache = staticmethod(lambda *args: None)

    class FakeTorch:
        float32, cuda = np.float32, Cuda

        @staticmethod
        def _make(fill, size, dtype, pin_memory=False, device="cpu"):
            return Tensor(np.full(size, fill, dtype), device, pin_memory)

        ones = staticmethod(lambda size, **kw: FakeTorch._make(1, size, **kw))
        zeros = staticmethod(lambda size, **kw: FakeTorch._make(0, size, **kw))
        empty = staticmethod(lambda size, **kw: FakeTorch._make(7, size, **kw))

    monkeypatch.setattr(module, "torch_cuda", lambda: FakeTorch)
    links = module.measure_links(1001, 2)
    assert (links["elements"], links["gpus"]) == (1001, 2)
    rows = {(row["memory"], row["gpus"]): row for row in links["rows"]}
    assert set(rows) == {("pageable", 1), ("pageable", 2), ("pinned", 1), ("pinned", 2)}
    for (memory, gpus), row in rows.items():
        kinds = {"upload", "download"} | ({"download into new memory"} if memory == "pageable" else set())
        assert set(row["gbps"]) == set(row["speedup"]) == kinds and "error" not in row
        assert all(row[kind]["samples"] == 2 for kind in kinds)
    # each GPU's part, both ways: 1001 elements on one GPU, 500 and 501 on two
    assert {(src, dst, n) for src, dst, _, n in copies if dst.startswith("cuda")} == \
        {("cpu", "cuda:0", 1001), ("cpu", "cuda:0", 500), ("cpu", "cuda:1", 501)}
    assert {pinned for _, _, pinned, _ in copies} == {False, True}
