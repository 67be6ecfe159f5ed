"""Device arrays as NumPy citizens: NumPy's ufuncs on device arrays (DeviceArray.__array_ufunc__) beside NumPy's own
results, views (basic indexing, .T, .transpose, .reshape) against NumPy's view of the same host array, as inputs and
as out= (every byte of the base array but the view's elements unchanged), NumPy's behaviour for bool, ==, len, repr
and sizes, pickling, and the refusals."""

from __future__ import annotations

import gc
import io
import os
import pickle
import re
import subprocess
import sys

import warnings

import numpy as np
import pytest

import gpuops
from gpuops import arrays

from .test_device_arrays import Counter, numpy_sign, same, specials

UFUNC_TYPES = ["float32", "float16", "int8", "uint16", "int64"]


def operands(dtype: str):
    """Two host arrays of every special value against every other (the divisor's row broadcast), and a Python
    scalar of the type's kind."""
    a, b = np.meshgrid(specials(dtype), specials(dtype), indexing="ij")
    return a, np.ascontiguousarray(b[:1]), (3 if np.dtype(dtype).kind in "iu" else 2.5)


# Where each operand of a binary ufunc lives: d a device array, h a host array, s a Python scalar.
PLACEMENTS = ["dd", "dh", "hd", "ds", "sd"]


@pytest.mark.parametrize("ufunc", [np.remainder, np.fmod], ids=lambda u: u.__name__)  # (np.mod is np.remainder)
@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("dtype", UFUNC_TYPES)
def test_binary_ufuncs_run_on_device_arrays(device, dtype, placement, ufunc, monkeypatch):
    assert np.mod is np.remainder
    device.probe_pack_rounding()  # (once per device: a read-back of its own)
    a, b, scalar = operands(dtype)
    given, want_operands = [], []
    for kind, array in zip(placement, (a, b)):
        value = scalar if kind == "s" else array
        given.append(gpuops.asarray(value, device) if kind == "d" else value)
        want_operands.append(value)
    counter = Counter(device, monkeypatch)
    got = ufunc(*given)
    assert type(got) is gpuops.DeviceArray and counter.read_backs == 0
    with np.errstate(all="ignore"):
        same(got.numpy(), ufunc(*want_operands))


@pytest.mark.parametrize("dtype", UFUNC_TYPES)
def test_unary_ufuncs_run_on_device_arrays(device, dtype, monkeypatch):
    x = specials(dtype).reshape(-1, 1)[:, [0, 0]]  # two columns: a 2-d layout
    d = gpuops.asarray(x, device)
    device.probe_pack_rounding()
    counter = Counter(device, monkeypatch)
    signs = np.sign(d)  # gpuops' SIGN: NaN and -0 give +0
    results = [(signs, numpy_sign(x))]
    if np.dtype(dtype).kind == "f":
        results += [(np.isnan(d), np.isnan(x)), (np.isinf(d), np.isinf(x))]
    assert all(type(got) is gpuops.DeviceArray for got, _ in results) and counter.read_backs == 0
    for got, want in results:
        same(got.numpy(), want)


def test_percent_is_np_remainder(device):
    a, b, _ = operands("int16")
    d_a, d_b = gpuops.asarray(a, device), gpuops.asarray(b, device)
    with np.errstate(all="ignore"):
        want = np.remainder(a, b)
        for got in (d_a % d_b, d_a % b, a % d_b):  # (a % d_b: NumPy's operator defers to the device array)
            assert type(got) is gpuops.DeviceArray
            same(got.numpy(), want)
        same((7 % d_b).numpy(), np.remainder(7, b))
        in_place = gpuops.asarray(a, device)
        alias = in_place
        in_place %= b  # in place, as NumPy's: the same array, its values replaced
        assert in_place is alias
        same(in_place.numpy(), want)


def test_out_forms(device, monkeypatch):
    x = np.float32([[1, np.nan, -np.inf], [np.inf, -0.0, -2]])
    d = gpuops.asarray(x, device)
    out = gpuops.asarray(np.zeros((2, 3), np.float32), device)
    flags = gpuops.asarray(np.zeros((2, 3), bool), device)
    counter = Counter(device, monkeypatch)
    assert np.sign(d, out=out) is out
    assert np.isinf(d, out=(flags,)) is flags  # the tuple form
    assert np.fmod(x, 3, out=out) is out and np.sign(x, out=out) is out  # out alone on the device
    assert np.remainder(x, d, out=(out,)) is out
    assert counter.read_backs == 0 and counter.submits == 5
    with np.errstate(all="ignore"):
        same(out.numpy(), np.remainder(x, x))
    same(flags.numpy(), np.isinf(x))
    host_out = np.ones((2, 3), bool)
    assert np.isnan(d, out=host_out) is host_out  # device input, host out: read back into it
    same(host_out, np.isnan(x))
    with pytest.raises(gpuops.ValidationError, match=r"gpuops.sign: out is a device array of float16 and the result is float32"):
        np.sign(d, out=gpuops.asarray(np.zeros((2, 3), np.float16), device))


def test_other_ufuncs_and_methods_are_refused(device):
    d = gpuops.asarray(np.float32([1, 2, 3]), device)
    supported = r"gpuops runs np.sign, np.isnan, np.isinf, np.remainder \(np.mod\) and np.fmod, called as functions"
    for call, name in [(lambda: np.add(d, 1), "numpy.add"), (lambda: np.negative(d), "numpy.negative"),
                       (lambda: np.sqrt(d), "numpy.sqrt"), (lambda: np.float32([1, 2, 3]) == d, "numpy.equal"),
                       (lambda: np.remainder.reduce(d), "numpy.remainder.reduce"),
                       (lambda: np.fmod.accumulate(d), "numpy.fmod.accumulate"),
                       (lambda: np.remainder.outer(d, d), "numpy.remainder.outer"),
                       (lambda: np.sign.at(d, [0]), "numpy.sign.at"),
                       (lambda: np.remainder.reduceat(d, [0]), "numpy.remainder.reduceat")]:
        with pytest.raises(TypeError, match=f"^{name} on a gpuops.DeviceArray: {supported}"):
            call()
    # Every keyword goes to the gpuops function as given, which refuses one it does not know.
    with pytest.raises(TypeError, match="bogus"):
        d.__array_ufunc__(np.sign, "__call__", d, bogus=1)
    with pytest.raises(TypeError, match=r"read it back with .numpy\(\)"):
        np.asarray(d)
    with pytest.raises(TypeError, match=r"read it back with .numpy\(\)"):
        np.array([d, d])


def test_another_override_decides(device):
    """NEP 13: with an operand of another type that overrides ufuncs, the device array steps aside."""

    class Other:
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return ("other", ufunc.__name__)

    d = gpuops.asarray(np.int32([1, 2]), device)
    assert np.remainder(d, Other()) == ("other", "remainder")
    assert np.sign(d, out=(Other(),)) == ("other", "sign")


# Basic indexing and the view methods, on a (4, 5, 6) array: each against NumPy's view of the same host array.
# (Where every axis takes an integer, NumPy gives a scalar and a device array a 0-d view: NumPy's view then takes
# a trailing ..., in ALL_INTEGERS.)
VIEWS = {
    "int": lambda a: a[1],
    "negative int": lambda a: a[-1],
    "slice": lambda a: a[1:],
    "inner slice": lambda a: a[:, 1:],
    "ellipsis slice": lambda a: a[..., 1:],
    "step": lambda a: a[::2],
    "steps": lambda a: a[1::3, :, 2:5],
    "inner steps": lambda a: a[:, ::2, 1::2],
    "two ints": lambda a: a[2, 3],
    "element": lambda a: a[2, 3, 4],
    "negative element": lambda a: a[-1, -2, -3],
    "None": lambda a: a[None],
    "None between": lambda a: a[:, None, 1],
    "None last": lambda a: a[..., None],
    "int ellipsis int": lambda a: a[1, ..., 2],
    "empty tuple": lambda a: a[()],
    "ellipsis": lambda a: a[...],
    "negative bounds": lambda a: a[-3:-1, -2],
    "empty": lambda a: a[1:1],
    "numpy int": lambda a: a[np.int64(2), np.uint8(1)],
    "one element backwards": lambda a: a[1:0:-1, 2],
    "view of a view": lambda a: a[1:][:, 1::2][1],
    "T": lambda a: a.T,
    "transpose": lambda a: a.transpose(1, 0, 2),
    "transpose tuple": lambda a: a.transpose((2, 0, 1)),
    "T of a slice": lambda a: a[:, 1, 1:].T,
    "reshape": lambda a: a[1:].reshape(-1),
    "reshape rows": lambda a: a[:, 1:].reshape(4, 24),
    "reshape split": lambda a: a.T.reshape(6, 5, 2, 2),
    "reshape stepped": lambda a: a[::2].reshape((2, 30)),
    "reshape F": lambda a: a.T.reshape(-1, order="F"),
    "reshape A": lambda a: a.T.reshape(30, 4, order="A"),
    "reshape to 0-d": lambda a: a[1, 2, 3:4].reshape(()),
}
ALL_INTEGERS = {"element": lambda a: a[2, 3, 4, ...], "negative element": lambda a: a[-1, -2, -3, ...]}
VIEW_TYPES = ["int8", "int16", "float32", "int64"]


def views(device_array, host: np.ndarray):
    """(name, the device array's view, NumPy's view of `host`) for every entry of VIEWS."""
    for name, view_of in VIEWS.items():
        yield name, view_of(device_array), ALL_INTEGERS.get(name, view_of)(host)


def _canaries(dtype: str, shape=(4, 5, 6)) -> np.ndarray:
    """Values unlike any result (each element its own)."""
    return (np.arange(np.prod(shape)) % 100 + 20).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", VIEW_TYPES)
def test_views_are_numpy_views(device, dtype):
    host = (np.arange(120) - 60).astype(dtype).reshape(4, 5, 6)
    d = gpuops.asarray(host, device)
    for name, view, want in views(d, host):
        assert np.shares_memory(want, host) or want.size == 0, name  # (the table holds NumPy views only)
        assert view.buffer is d.buffer and view.base is d and view.device is device, name
        assert (view.shape, view.dtype, view.size, view.ndim, view.nbytes, view.itemsize) == \
            (want.shape, want.dtype, want.size, want.ndim, want.nbytes, want.itemsize), name
        assert view.offset == (want.__array_interface__["data"][0] - host.__array_interface__["data"][0]
                               if want.size else view.offset), name
        same(view.numpy(), want)


@pytest.mark.parametrize("dtype", VIEW_TYPES)
def test_views_as_inputs(device, dtype):
    host = (np.arange(120) - 60).astype(dtype).reshape(4, 5, 6)
    d = gpuops.asarray(host, device)
    for name, view, want in views(d, host):
        same(np.sign(view).numpy(), numpy_sign(want))
        with np.errstate(all="ignore"):
            same(np.remainder(view, 7).numpy(), np.remainder(want, 7))
    # two views of one buffer together
    same(np.fmod(d[1:, ::2], d[:-1, 1:4]).numpy(), np.fmod(host[1:, ::2], host[:-1, 1:4]))


@pytest.mark.parametrize("dtype", VIEW_TYPES)
def test_views_as_out_write_only_their_elements(device, dtype):
    """np.sign into each view of a device array of canary values: the whole base array read back must be NumPy's
    same assignment through its own view (every byte around and between the view's elements unchanged)."""
    rng = np.random.default_rng(7)
    for name in VIEWS:
        canaries = _canaries(dtype)
        d = gpuops.asarray(canaries, device)
        ((_, view, target),) = [v for v in views(d, canaries) if v[0] == name]
        x = rng.integers(-3, 4, target.shape).astype(dtype)
        assert np.sign(x, out=view) is view
        target[...] = numpy_sign(x)  # NumPy's view writes into the host canaries
        same(d.numpy(), canaries)


def test_predicate_views_as_out(device):
    """is_nan into bool views (one byte per element: lanes of words that other elements share)."""
    rng = np.random.default_rng(3)
    for name in VIEWS:
        flags = rng.integers(0, 2, (4, 5, 6)).astype(bool)
        d = gpuops.asarray(flags, device)
        ((_, view, target),) = [v for v in views(d, flags) if v[0] == name]
        x = rng.choice(specials("float32"), target.shape)
        assert np.isnan(x, out=view) is view
        target[...] = np.isnan(x)
        same(d.numpy(), flags)


def test_view_in_place_and_device_inputs_into_views(device):
    host = np.float32(np.arange(60) - 30).reshape(6, 10)
    d = gpuops.asarray(host, device)
    view = d[1:, 1::3]
    assert np.sign(view, out=view) is view  # in place on a view at an element offset
    want = host.copy()
    want[1:, 1::3] = numpy_sign(want[1:, 1::3])
    same(d.numpy(), want)
    e = gpuops.asarray(host, device)
    np.remainder(e[:3, 1:], e[:3, :-1], out=e[3:, 1:])  # inputs in the output's buffer, disjoint from it
    want = host.copy()
    want[3:, 1:] = np.remainder(host[:3, 1:], host[:3, :-1])
    same(e.numpy(), want)
    with pytest.raises(gpuops.ValidationError, match=r"^gpuops.sign: .*partially overlap"):
        np.sign(d[:, ::2], out=d[:, 1::2])  # interleaved with out in the same bytes: DirectML's rule refuses


def test_view_refusals(device):
    d = gpuops.asarray(np.float32(np.arange(24)).reshape(4, 6), device)
    backwards = "the view steps backwards along its axis {}; DirectML's strides are unsigned"
    for view, axis, written in [(lambda: d[::-1], 0, r"\[::-1\]"), (lambda: d[:, 4:1:-2], 1, r"\[:, 4:1:-2\]"),
                                (lambda: d[None, 3:0:-1], 1, r"\[None, 3:0:-1\]")]:
        with pytest.raises(gpuops.ValidationError, match=f"^gpuops.DeviceArray{written}: " + backwards.format(axis)):
            view()
    for index in ([0, 1], np.array([1, 2]), np.array([True, False, True, True]), True, 1.0, "a"):
        with pytest.raises(gpuops.ValidationError, match="device arrays take basic indexing only"):
            d[index]
    with pytest.raises(IndexError, match=r"^gpuops.DeviceArray\[4\]: index 4 is out of bounds for axis 0 with size 4"):
        d[4]
    with pytest.raises(IndexError, match=r"gpuops.DeviceArray\[0, 0, 0\]: too many indices"):
        d[0, 0, 0]
    with pytest.raises(IndexError, match="an index can only have a single ellipsis"):
        d[..., ...]
    with pytest.raises(gpuops.ValidationError, match=r"gpuops.DeviceArray.reshape: shape \(6, 4\) with strides "
                                                     r"\(1, 6\) \(elements\) cannot be viewed as shape \(24,\) in "
                                                     "order 'C': that takes a copy, and gpuops makes views only"):
        d.T.reshape(-1)
    with pytest.raises(ValueError, match="gpuops.DeviceArray.reshape: cannot reshape array of size 24 into shape"):
        d.reshape(5, -1)
    with pytest.raises(ValueError, match="gpuops.DeviceArray.transpose: axes don't match array"):
        d.transpose(1, 0, 2)
    # DirectML binds at multiples of 16 bytes: .binding refuses a view that starts elsewhere, and gives one that
    # starts on 16 bytes; the DirectML-level API still refuses any other offset
    with pytest.raises(gpuops.ValidationError, match="gpuops.DeviceArray.binding: this view starts at byte 4 of its "
                                                     "buffer, not a multiple of 16"):
        d[0, 1:].binding
    aligned = d[2:]
    assert aligned.binding == gpuops.Binding(d.buffer, 48, 48) and aligned.desc == gpuops.TensorDesc(
        gpuops.DataType.FLOAT32, (2, 6), (6, 1))
    out = gpuops.asarray(np.zeros((2, 6), np.float32), device)
    compiled = device.compile(gpuops.SignDesc(aligned.desc, out.desc))
    compiled.execute({"input_tensor": aligned.binding, "output_tensor": out.binding})
    same(out.numpy(), numpy_sign(np.float32(np.arange(12, 24)).reshape(2, 6)))
    with pytest.raises(gpuops.ValidationError, match=r"bindings\['input_tensor'\]: offset 52 is not a multiple of 16"):
        compiled.execute({"input_tensor": gpuops.Binding(d.buffer, 52), "output_tensor": out.binding})


def test_reshape_without_numpy_s_copy_argument(device, monkeypatch):
    """NumPy before 2.1 has no reshape(copy=False): views come from setting .shape on a view of the stand-in."""
    monkeypatch.setattr(arrays, "_RESHAPE_TAKES_COPY", False)
    host = np.int16(np.arange(120)).reshape(4, 5, 6)
    d = gpuops.asarray(host, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (setting .shape, where a later NumPy deprecates it)
        for name, view_of in VIEWS.items():
            if name.startswith("reshape"):
                same(view_of(d).numpy(), view_of(host))
        with pytest.raises(gpuops.ValidationError, match="that takes a copy, and gpuops makes views only"):
            d.T.reshape(-1)
        with pytest.raises(gpuops.ValidationError, match="that takes a copy"):
            d.T.reshape(30, 4)  # in C order, a copy (in F order, a view)


def test_element_offsets_at_the_directml_level(device):
    """bind(element_offsets=True) takes offsets of whole elements, and no other."""
    f32 = gpuops.TensorDesc(gpuops.DataType.FLOAT32, (3,))
    compiled = device.compile(gpuops.SignDesc(f32, f32))
    source = gpuops.asarray(np.float32([9, -1, 2, -3, 9]), device)
    out = gpuops.asarray(np.float32([7, 7, 7, 7, 7]), device)
    bindings = {"input_tensor": gpuops.Binding(source.buffer, 4), "output_tensor": gpuops.Binding(out.buffer, 8, 12)}
    with pytest.raises(gpuops.ValidationError, match="offset 4 is not a multiple of 16"):
        compiled.bind(bindings)
    compiled.execute(compiled.bind(bindings, element_offsets=True))
    same(out.numpy(), np.float32([7, 7, -1, 1, -1]))
    bindings["input_tensor"] = gpuops.Binding(source.buffer, 2)
    with pytest.raises(gpuops.ValidationError, match=r"offset 2 is not a multiple of 4 \(the tensor's element size"):
        compiled.bind(bindings, element_offsets=True)
    bindings["input_tensor"] = gpuops.Binding(source.buffer, 4, 8)
    with pytest.raises(gpuops.ValidationError, match="size 8 is smaller than the 12 bytes of input_tensor's elements"):
        compiled.bind(bindings, element_offsets=True)


def test_iteration(device):
    host = np.int32(np.arange(6)).reshape(3, 2)
    rows = list(gpuops.asarray(host, device))
    assert len(rows) == 3 and all(type(r) is gpuops.DeviceArray for r in rows)
    for row, want in zip(rows, host):
        same(row.numpy(), want)
    with pytest.raises(TypeError, match="iteration over a 0-d"):
        iter(rows[0][1])


def test_a_view_keeps_its_base_alive(device):
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)
    host = np.float32(np.arange(64))
    view = gpuops.asarray(host, fresh)[3::2]
    gc.collect()
    others = [gpuops.asarray(np.zeros(64, np.float32), fresh) for _ in range(4)]  # would reuse a freed buffer
    same(view.numpy(), host[3::2])
    assert all(view.buffer is not o.buffer for o in others)


def test_numpy_behaviour_of_truth_equality_and_sizes(device, monkeypatch):
    host = np.float32([[1, 0, np.nan], [-0.0, 2, 3]])
    d = gpuops.asarray(host, device)
    counter = Counter(device, monkeypatch)
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
        bool(d)
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
        bool(d[0])
    for equality in (lambda: d == d, lambda: d != d, lambda: d == 1, lambda: d[0, 0] == d[0, 0]):
        with pytest.raises(TypeError, match=r"== and != would compare values.*read the arrays back with .numpy\(\)"):
            equality()
    with pytest.raises(TypeError, match="unhashable"):
        hash(d)
    assert (len(d), len(d[0]), d.size, d.ndim, d.nbytes, d.itemsize, d.shape) == (2, 3, 6, 2, 24, 4, (2, 3))
    with pytest.raises(TypeError, match="len"):
        len(d[0, 0])
    text = repr(d[:, 1:])
    assert text == str(d[:, 1:]) and text.startswith("gpuops.DeviceArray(shape=(2, 2), dtype=float32, strides=(3, 1), "
                                                     "offset=4, device=")
    assert counter.read_backs == 0  # none of the above read anything back
    for index in [(0, 0), (0, 1), (0, 2), (1, 0)]:  # one element: read back, NumPy's truth value
        assert bool(d[index]) is bool(host[index])
        assert bool(d[index][None, None]) is bool(host[index])
    assert counter.read_backs == 8
    empty = d[:, 3:]
    try:
        want = bool(host[:, 3:])
    except ValueError as exc:  # NumPy >= 2.2
        with pytest.raises(ValueError, match=re.escape(str(exc))):
            bool(empty)
    else:
        assert bool(empty) is want


PICKLED = {
    "float16": lambda: np.float16([[1.5, -np.inf], [np.nan, -0.0]]),
    "bool": lambda: np.array([True, False, True]),
    "0-d": lambda: np.array(-7, np.int64),
    "empty": lambda: np.zeros((0, 3), np.uint16),
    "fortran": lambda: np.asfortranarray(np.arange(12, dtype=np.int8).reshape(3, 4)),
}


@pytest.mark.parametrize("make", PICKLED.values(), ids=PICKLED.keys())
def test_pickle_round_trip(device, make):
    host = make()
    d = gpuops.asarray(host, device)
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(d, protocol))
        assert type(back) is gpuops.DeviceArray and back.device is gpuops.default_device()
        assert back.buffer is not d.buffer and back.base is None and back.owned
        same(back.numpy(), host)


def test_pickle_sends_a_view_s_values(device):
    host = np.int32(np.arange(30)).reshape(5, 6)
    view = gpuops.asarray(host, device)[1:, 1::2].T
    back = pickle.loads(pickle.dumps([view, {"x": view}]))
    same(back[0].numpy(), host[1:, 1::2].T)
    same(back[1]["x"].numpy(), host[1:, 1::2].T)
    assert back[0].offset == 0 and back[0].base is None  # only the view's elements were sent


def test_pickle_to_another_process(device):
    """The receiving process rebuilds the array on its own default device (as Dask moves chunks)."""
    host = np.float32([[1, -2.5, np.nan], [np.inf, -0.0, 7]])
    payload = pickle.dumps(gpuops.asarray(host, device)[:, 1:])
    child = ("import pickle, sys, numpy as np, gpuops\n"
             "d = pickle.load(sys.stdin.buffer)\n"
             "assert type(d) is gpuops.DeviceArray and d.device is gpuops.default_device()\n"
             "np.save(sys.stdout.buffer, np.sign(d).numpy())\n")
    done = subprocess.run([sys.executable, "-c", child], input=payload, capture_output=True, env=os.environ.copy(),
                          timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    same(np.load(io.BytesIO(done.stdout)), numpy_sign(host[:, 1:]))
