"""Faults an embedded library must survive: buffers destroyed or mapped under gpuops' feet, a device lost while a
call waits, memory and caches that must stay bounded, and wgpu's own words in every error.

A case that could abort the process (wgpu-native panics on some submissions) or hang it runs in a fresh Python
with a time limit, so that an abort or a hang fails the test instead of ending the test run."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest

import gpuops
from gpuops.pool import MAPPED_UPLOAD_BYTES, pool_of
from gpuops.wgpu_internals import Pending
from gpuops import Binding, DataType, SignDesc, TensorDesc

from .dml import USAGE, device_with

REPO = Path(__file__).resolve().parents[1]
SCRIPT_SECONDS = 60

# What every script starts with: a fresh Device on the adapter the tests run on (GPUOPS_ADAPTER passes through),
# a sign operator over 16 float32 values and `refused`, which prints the error or fails the script.
PRELUDE = """
import faulthandler, threading, time
import numpy as np, wgpu, gpuops
from gpuops import Binding, DataType, SignDesc, TensorDesc
faulthandler.dump_traceback_later({limit}, exit=True)  # a hang shows where it waits
USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
device = gpuops.Device()
F32 = TensorDesc(DataType.FLOAT32, (16,))
sign = device.compile(SignDesc(F32, F32))

def buffer(size=64, **kwargs):
    return device.wgpu_device.create_buffer(size=size, usage=USAGE, **kwargs)

def filled(values):
    return device.wgpu_device.create_buffer_with_data(data=np.asarray(values, np.float32), usage=USAGE)

def floats(buffer):
    return np.frombuffer(device.read_buffer(buffer), np.float32)

def refused(call, error, *words):
    try:
        call()
    except error as exc:
        missing = [word for word in words if word not in str(exc)]
        assert not missing, f"{{missing}} not in {{str(exc)!r}}"
        print("refused:", exc)
        return exc
    raise AssertionError(f"not refused: {{call}}")
"""


def run_script(*parts: str) -> str:
    """Run PRELUDE and `parts` (each dedented) in a fresh Python; its stdout. An abort, a hang or a failed assertion
    fails the test."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    source = "\n".join([PRELUDE.format(limit=SCRIPT_SECONDS - 5), *map(textwrap.dedent, parts), 'print("done")\n'])
    try:
        done = subprocess.run([sys.executable, "-c", source], env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=SCRIPT_SECONDS)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung for {SCRIPT_SECONDS} s:\n{exc.stdout}\n{exc.stderr}")
    assert done.returncode == 0, (f"exit status {done.returncode} (134 or -6: aborted):\n{done.stdout}\n"
                                  f"{done.stderr[-4000:]}")
    assert done.stdout.endswith("done\n"), done.stdout  # the whole script ran
    return done.stdout


# 1. Buffers that a submission must not use: each used to abort the process (a panic in wgpu-native's submit).

ABORTS = {
    "cached plan, input destroyed": """
        x, out = filled(np.arange(-8, 8)), buffer()
        bindings = {"input_tensor": Binding(x), "output_tensor": Binding(out)}
        sign.execute(bindings)
        x.destroy()
        refused(lambda: sign.execute(bindings), gpuops.ValidationError, "DML_OPERATOR_ELEMENT_WISE_SIGN",
                "bindings['input_tensor']", "destroyed")
        assert len(device._plans) == 0  # the destroyed buffer's plan is gone
        sign.execute({"input_tensor": Binding(out), "output_tensor": Binding(out)})  # the device still works
        assert floats(out).tolist() == np.sign(np.arange(-8, 8)).tolist()
    """,
    "binding table, output destroyed": """
        x, out = filled(np.ones(16)), buffer()
        table = sign.bind({"input_tensor": Binding(x), "output_tensor": Binding(out)})
        out.destroy()
        refused(lambda: sign.execute(table), gpuops.ValidationError, "bindings['output_tensor']", "destroyed")
        encoder = device.wgpu_device.create_command_encoder()
        refused(lambda: sign.record(encoder, table), gpuops.ValidationError, "bindings['output_tensor']",
                "destroyed")
        with device.batch() as batch:
            refused(lambda: batch.record(sign, table), gpuops.ValidationError, "destroyed")
    """,
    "batch, buffer destroyed between record and submit": """
        x, out, other = filled(-np.ones(16)), filled(np.full(16, 7)), filled(np.full(16, -3))
        batch = device.batch()
        batch.record(sign, {"input_tensor": Binding(other), "output_tensor": Binding(other)})
        batch.record(sign, {"input_tensor": Binding(x), "output_tensor": Binding(out)})
        x.destroy()
        refused(batch.submit, gpuops.ValidationError, "bindings['input_tensor']", "destroyed")
        refused(batch.submit, gpuops.GpuOpsError, "already submitted")
        assert floats(out).tolist() == [7] * 16 and floats(other).tolist() == [-3] * 16  # nothing of it ran
    """,
    "NumPy-level calls on device arrays whose buffers are destroyed or mapped": """
        x, out = filled(-np.ones(16)), filled(np.full(16, 7))
        dx = gpuops.DeviceArray.from_buffer(device, x, np.float32, (16,))
        dout = gpuops.DeviceArray.from_buffer(device, out, np.float32, (16,))
        gpuops.sign(dx, out=dout)  # bound and planned once
        x.destroy()
        refused(lambda: gpuops.sign(dx, out=dout), gpuops.ValidationError,
                "DML_OPERATOR_ELEMENT_WISE_SIGN", "bindings['input_tensor']", "destroyed")
        refused(lambda: gpuops.sign(dx), gpuops.ValidationError, "bindings['input_tensor']", "destroyed")
        mapped = buffer(mapped_at_creation=True)
        dmapped = gpuops.DeviceArray.from_buffer(device, mapped, np.float32, (16,))
        refused(lambda: gpuops.sign(np.ones(16, np.float32), out=dmapped), gpuops.ValidationError,
                "bindings['output_tensor']", "mapped")
        owned = gpuops.asarray(np.ones(16, np.float32), device)
        gpuops.sign(owned, out=dout)
        owned.buffer.destroy()
        refused(lambda: gpuops.sign(owned, out=dout), gpuops.ValidationError, "bindings['input_tensor']",
                "destroyed")
        assert floats(out).tolist() == [1] * 16  # only the call before the destroy ran
    """,
    "buffer mapped at creation, never unmapped": """
        x, out = buffer(mapped_at_creation=True), buffer()
        bindings = {"input_tensor": Binding(x), "output_tensor": Binding(out)}
        refused(lambda: sign.execute(bindings), gpuops.ValidationError, "bindings['input_tensor']", "mapped")
        refused(lambda: sign.execute(bindings), gpuops.ValidationError, "mapped")  # again, from the plan cache
        x.unmap()
        sign.execute(bindings)
    """,
}


@pytest.mark.parametrize("case", list(ABORTS))
def test_unusable_buffers_are_refused_before_anything_is_submitted(case):
    assert "refused:" in run_script(ABORTS[case])


# 2. A device lost while calls wait: every call ends, with DeviceError, and the default device is replaced.

PAUSED_READ_BACK = """
    # The first read-back stops just before or just after its mapping is requested (PAUSE), until the test has
    # destroyed the device: a call waiting for its read-back when the device goes.
    access_class = type(device.host_access)
    waiting, destroyed = threading.Event(), threading.Event()
    begin_map = access_class.begin_map

    def pause():
        if not waiting.is_set():
            waiting.set()
            destroyed.wait()

    def paused_begin_map(self, buffer, write, size):
        if PAUSE == "before mapping":
            pause()
        pending = begin_map(self, buffer, write, size)
        if PAUSE == "after mapping":
            pause()
        if PAUSE == "destroyed by the waiting thread" and not waiting.is_set():
            wgpu_device.destroy()
            waiting.set()
        return pending

    results = {}

    def call(name, function):
        try:
            results[name] = function()
        except Exception as exc:
            results[name] = exc

    def lose_while_waiting(target, *others):
        access_class.begin_map = paused_begin_map
        threads = [threading.Thread(target=call, args=(name, f), daemon=True) for name, f in (target, *others)]
        threads[0].start()
        assert waiting.wait(20), "no read-back began"
        for thread in threads[1:]:  # these wait for the first call's device lock
            thread.start()
        time.sleep(0.2)
        started = time.monotonic()
        wgpu_device.destroy()
        assert time.monotonic() - started < 5, "destroy waited for the calls"
        destroyed.set()
        for thread in threads:
            thread.join(20)
        assert not any(thread.is_alive() for thread in threads), "a call never returned"
        access_class.begin_map = begin_map
        for name, result in results.items():
            assert isinstance(result, gpuops.DeviceError) and "was lost" in str(result), (name, result)
            print(name, "refused:", result)
"""


@pytest.mark.parametrize("pause", ["before mapping", "after mapping", "destroyed by the waiting thread"])
def test_numpy_level_calls_end_when_the_device_is_lost_while_one_waits(pause):
    run_script(f"PAUSE = {pause!r}", PAUSED_READ_BACK, """
        default = gpuops.default_device()
        wgpu_device = default.wgpu_device
        x, y = np.arange(1 << 18, dtype=np.int64) * 7919, np.full(1 << 18, 13, np.int64)
        gpuops.modulus_floor(x[:8], y[:8])  # compiled before the read-back pauses
        lose_while_waiting(("waiting", lambda: gpuops.modulus_floor(x, y)),
                           ("blocked", lambda: gpuops.sign(x, device=default)),
                           ("blocked too", lambda: gpuops.modulus_truncate(x, y, device=default)))
        assert default.lost and default.is_lost()
        replacement = gpuops.default_device()
        assert replacement is not default and not replacement.lost
        assert gpuops.modulus_floor(x[:8], y[:8]).tolist() == np.remainder(x[:8], y[:8]).tolist()
    """)


@pytest.mark.parametrize("pause", ["before mapping", "after mapping"])
def test_read_back_ends_when_the_device_is_lost_while_it_waits(pause):
    run_script(f"PAUSE = {pause!r}", PAUSED_READ_BACK, """
        wgpu_device = device.wgpu_device
        x, out = filled(np.arange(16)), buffer()
        bindings = {"input_tensor": Binding(x), "output_tensor": Binding(out)}
        sign.execute(bindings)
        lose_while_waiting(("read_buffer", lambda: device.read_buffer(out)), ("execute", lambda: sign.execute(bindings)))
        refused(device.batch, gpuops.DeviceError, "was lost")
        refused(lambda: device.compile(SignDesc(F32, F32)).bind(bindings), gpuops.DeviceError, "was lost")
    """)


def test_waits_are_bounded_and_hold_no_lock(device, monkeypatch):
    """A mapping that never completes (a device that stopped answering) ends in DeviceError after wait_timeout, and
    the device's lock is free meanwhile."""
    fresh = device_with(device)
    fresh.wait_timeout = 0.5
    out = device.wgpu_device.create_buffer(size=64, usage=USAGE)
    mapping = threading.Event()
    monkeypatch.setattr(type(fresh.host_access), "begin_map",
                        lambda self, *args: mapping.set() or Pending(threading.Event()))
    outcome = []

    def read() -> None:
        with pytest.raises(gpuops.DeviceError) as refused:
            fresh.read_buffer(out)
        outcome.append(refused)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert mapping.wait(10)
    got_lock = fresh.lock.acquire(timeout=5)  # while the read-back waits
    if got_lock:
        fresh.lock.release()
    reader.join(10)
    assert got_lock and not reader.is_alive() and outcome
    outcome[0].match(r"Device.read_buffer: waiting for the read-back: the WebGPU device .* did not finish in 0.5 "
                     r"seconds \(Device.wait_timeout\)")


def test_a_large_upload_waits_for_its_mapping_without_the_lock(device, monkeypatch):
    """gpuops.asarray of an array large enough for a mapped upload buffer waits for that mapping, as every wait,
    with the device's lock free: other threads' calls go on meanwhile."""
    fresh = device_with(device)
    fresh.wait_timeout = 4.0
    mapping = threading.Event()
    monkeypatch.setattr(type(fresh.host_access), "begin_map",
                        lambda self, *args: mapping.set() or Pending(threading.Event()))
    large = np.zeros(MAPPED_UPLOAD_BYTES // 4, np.float32)
    outcome = []

    def upload() -> None:
        with pytest.raises(gpuops.DeviceError) as refused:
            gpuops.asarray(large, fresh)
        outcome.append(refused)

    uploader = threading.Thread(target=upload, daemon=True)
    uploader.start()
    assert mapping.wait(10)
    got_lock = fresh.lock.acquire(timeout=1)  # while the upload waits for its mapping (4 s)
    if got_lock:
        fresh.lock.release()
    uploader.join(10)
    assert got_lock and not uploader.is_alive() and outcome
    outcome[0].match(r"gpuops.asarray: mapping an upload buffer: .* did not finish in 4.0 seconds")


def test_devices_on_one_wgpu_device_share_its_lock_and_others_do_not(device):
    """Dawn crashes when one device is called from two threads at once: two gpuops.Devices on one wgpu device
    take one lock, and a Device on another wgpu device (another GPU, or a second device on one adapter) its own."""
    same = device_with(device)
    assert same.lock is device.lock
    other = gpuops.Device(backend=device.backend)  # a fresh adapter: Dawn's makes one device only
    assert other.wgpu_device is not device.wgpu_device
    assert other.lock is not device.lock
    x = np.linspace(-2, 2, 1001, dtype=np.float32)
    assert np.array_equal(gpuops.sign(x, device=other), np.sign(x))


def test_dawn_waits_end_late_by_a_small_share_at_most():
    """Dawn ends a wait only inside a call into it: the pause before the next call is none at first, then at most
    5% of the time waited (so the wait ends at most that late), at least 10 us and at most the wait step."""
    from gpuops.device import _WAIT_STEP, dawn_wait_pause
    assert [dawn_wait_pause(looks, 1e-4) for looks in range(32)] == [0.0] * 32
    for waited in (0.0, 1e-5, 2e-4, 1e-3, 3.5e-3, 0.1, 2.0, 500.0):
        pause = dawn_wait_pause(32, waited)
        assert 1e-5 <= pause <= max(0.05 * waited, 1e-5) and pause <= _WAIT_STEP, (waited, pause)
    assert dawn_wait_pause(1000, 3.5e-3) == pytest.approx(1.75e-4)


# 3. Plans refer to the caller's buffers without keeping them: memory stays flat over many fresh buffers.

def test_plans_do_not_keep_dropped_buffers_memory():
    out = run_script("""
        import os
        count = 1 << 20  # 4 MiB of float32 in each buffer, every byte touched by the kernel
        big = TensorDesc(DataType.FLOAT32, (count,))
        big_sign = device.compile(SignDesc(big, big))
        marker = filled(np.zeros(4))

        def rss():
            with open("/proc/self/statm") as statm:
                return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        def one_call():  # fresh buffers, executed once, then dropped without destroy()
            x, out = buffer(4 * count), buffer(4 * count)
            big_sign.execute({"input_tensor": Binding(x), "output_tensor": Binding(out)})

        for _ in range(20):
            one_call()
        device.wgpu_device.queue.read_buffer(marker)  # the work submitted so far has run
        before = rss()
        for _ in range(100):
            one_call()
        device.wgpu_device.queue.read_buffer(marker)
        grown = rss() - before
        print("grown", grown >> 20, "MiB over 100 calls")
        assert grown < 96 << 20, f"{grown >> 20} MiB more after 100 calls of 8 MiB each"
        assert len(device._plans) == 0
    """)
    assert "grown" in out


def test_dead_plans_are_dropped(device):
    fresh = device_with(device)
    sign = fresh.compile(SignDesc(TensorDesc(DataType.FLOAT32, (4,)), TensorDesc(DataType.FLOAT32, (4,))))
    kept, destroyed, dropped = (device.wgpu_device.create_buffer(size=16, usage=USAGE) for _ in range(3))
    for buffer in (kept, destroyed, dropped):
        sign.execute({"input_tensor": Binding(buffer), "output_tensor": Binding(buffer)})
    assert len(fresh._plans) == 3
    destroyed.destroy()
    collected = weakref.ref(dropped)
    del dropped, buffer
    gc.collect()
    assert collected() is None and len(fresh._plans) == 1
    assert all(kept not in key for key in fresh._plans)  # keys hold no buffer


def test_a_dropped_device_is_released_at_once(device):
    """A Device refers to nothing that refers back to it (its caches keep operators that refer to it weakly), so
    dropping the last reference releases it with its caches and pooled buffers, without the cycle collector; a
    CompiledOperator kept keeps its Device alive and working."""
    gc.collect()
    gc.disable()
    try:
        fresh = device_with(device)
        released, pool = weakref.ref(fresh), weakref.ref(fresh.pool)
        x = np.float32([1.5, -2, 0, np.inf])
        with np.errstate(all="ignore"):  # (the reporting kernels too)
            gpuops.modulus_floor(x, np.float32(0.75), device=fresh)
        gpuops.sign(np.int8([3, -3]), device=fresh)
        on_device = gpuops.asarray(x, device=fresh)
        np.remainder(np.sign(on_device[1:]), 3).numpy()
        f32 = TensorDesc(DataType.FLOAT32, (4,))
        sign = fresh.compile(SignDesc(f32, f32))
        buffer = device.wgpu_device.create_buffer_with_data(data=x, usage=USAGE)
        bindings = {"input_tensor": Binding(buffer), "output_tensor": Binding(buffer)}
        table = sign.bind(bindings)
        sign.execute(bindings)
        with fresh.batch() as batch:
            batch.record(sign, table)
        del fresh, on_device, batch
        assert released() is not None  # (the compiled operator holds it)
        sign.execute(table)
        assert np.frombuffer(device.read_buffer(buffer), np.float32).tolist() == [1, -1, 0, 1]
        del sign, table
        assert released() is None and pool() is None
    finally:
        gc.enable()


# 4. The pipeline cache is bounded; what it evicts is freed unless something still uses it.

def test_pipeline_cache_is_bounded(device, monkeypatch):
    monkeypatch.setattr(gpuops.device, "PIPELINE_CACHE_SIZE", 3)
    fresh = device_with(device)
    f32 = TensorDesc(DataType.FLOAT32, (4,))
    x = device.wgpu_device.create_buffer_with_data(data=np.float32([-2, 0, 3, -0.5]), usage=USAGE)
    out = device.wgpu_device.create_buffer(size=16, usage=USAGE)
    table = fresh.compile(SignDesc(f32, f32)).bind({"input_tensor": Binding(x), "output_tensor": Binding(out)})
    (table_pipeline,) = {id(pipeline) for pipeline, _ in fresh._pipelines.values()}
    made = []
    for dtype in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.float16, np.uint32):
        gpuops.sign(np.arange(-3, 3).astype(dtype), device=fresh)
        made += [weakref.ref(pipeline) for pipeline, _ in fresh._pipelines.values()]
        assert len(fresh._pipelines) <= 3
    pool_of(fresh).clear()  # the NumPy-level calls' own binding tables (bounded by pool.MAX_TABLES) keep theirs
    gc.collect()
    cached = {id(pipeline) for pipeline, _ in fresh._pipelines.values()}
    alive = {id(ref()) for ref in made if ref() is not None}
    assert table_pipeline not in cached and alive <= cached | {table_pipeline}
    fresh.compile(SignDesc(f32, f32)).execute(table)  # its own reference to the evicted pipeline
    assert np.frombuffer(device.read_buffer(out), np.float32).tolist() == [-1, 0, 1, -1]


# 5. DeviceError carries wgpu's own cause, not only its first line.

def test_device_errors_carry_wgpus_cause(device):
    sign = device.compile(SignDesc(TensorDesc(DataType.FLOAT32, (4,)), TensorDesc(DataType.FLOAT32, (4,))))
    gone = device.wgpu_device.create_buffer(size=16, usage=USAGE)
    type(gone).destroy(gone)  # destroyed where gpuops cannot see it: wgpu refuses the bind group
    out = device.wgpu_device.create_buffer(size=16, usage=USAGE)
    with pytest.raises(gpuops.DeviceError) as refused:
        sign.execute({"input_tensor": Binding(gone), "output_tensor": Binding(out)})
    text = str(refused.value)
    # wgpu-native refuses the bind group ("Buffer ... has been destroyed"), Dawn the submission ("used in submit
    # while destroyed"): either way the step and wgpu's own words are in the message.
    step = "preparing the dispatch" if device.backend == "wgpu-native" else "submitting"
    assert "ELEMENT_WISE_SIGN" in text and step in text and "destroyed" in text, text


# 6. Device loss and wrong arguments: gpuops errors only.

def test_a_loss_gpuops_did_not_see_gives_device_errors():
    run_script("""
        default = gpuops.default_device()
        x = np.float32([1, -2])
        gpuops.sign(x)
        lost = default.wgpu_device
        type(lost).destroy(lost)  # lost behind gpuops' back, as a driver reset would
        refused(lambda: gpuops.sign(x), gpuops.DeviceError, "ELEMENT_WISE_SIGN", "was lost", "is lost")
        assert default.lost
        assert gpuops.default_device() is not default and gpuops.sign(x).tolist() == [1, -1]

        out = buffer()
        sign.execute({"input_tensor": Binding(out), "output_tensor": Binding(out)})
        type(device.wgpu_device).destroy(device.wgpu_device)
        refused(lambda: sign.execute({"input_tensor": Binding(out), "output_tensor": Binding(out)}),
                gpuops.DeviceError, "ELEMENT_WISE_SIGN", "was lost")
        refused(lambda: device.read_buffer(out), gpuops.DeviceError, "was lost")
        refused(device.synchronize, gpuops.DeviceError, "was lost")
        refused(lambda: gpuops.sign(x, device=device), gpuops.DeviceError, "was lost")
    """)


def test_a_backend_that_raises_on_a_lost_device_gives_device_errors(monkeypatch):
    """Dawn raises its own validation error ("[Device] is lost") from the next call on a device lost behind gpuops'
    back, where wgpu-native's calls return: the NumPy-level call says DeviceError, and the device counts as lost."""
    device = gpuops.Device()
    x = np.float32([1, -2])
    assert gpuops.sign(x, device=device).tolist() == [1, -1]
    wgpu_device = device.wgpu_device

    def lost_encoder(*args, **kwargs):
        raise device.wgpu.GPUValidationError('[Device "gpuops"] is lost.\n - While calling [Device "gpuops"]'
                                             '.CreateCommandEncoder([CommandEncoderDescriptor]).')

    monkeypatch.setattr(wgpu_device, "create_command_encoder", lost_encoder)
    with pytest.raises(gpuops.DeviceError, match=r"ELEMENT_WISE_SIGN: recording: .* was lost "
                                                 r"\(\[Device \"gpuops\"\] is lost\.\)"):
        gpuops.sign(x, device=device)
    assert device.lost
    with pytest.raises(gpuops.DeviceError, match="was lost"):  # refused at once from now on
        gpuops.modulus_floor(x, x, device=device)


def test_wrong_operators_and_encoders_are_refused(device):
    f32 = TensorDesc(DataType.FLOAT32, (4,))
    sign = device.compile(SignDesc(f32, f32))
    buffer = device.wgpu_device.create_buffer(size=16, usage=USAGE)
    bindings = {"input_tensor": Binding(buffer), "output_tensor": Binding(buffer)}
    with device.batch() as batch:
        with pytest.raises(gpuops.ValidationError, match=r"Batch.record: compiled None \(NoneType\) is not a "
                                                         r"gpuops.CompiledOperator"):
            batch.record(None, bindings)
        batch.record(sign, bindings)
    with pytest.raises(gpuops.ValidationError, match=r"ELEMENT_WISE_SIGN: record: encoder None \(NoneType\) is not "
                                                     "a GPUCommandEncoder"):
        sign.record(None, bindings)
    other = gpuops.Device(backend=device.backend)
    with pytest.raises(gpuops.ValidationError, match="belongs to another wgpu device"):
        sign.record(other.wgpu_device.create_command_encoder(), bindings)
