"""NumPy's ufunc contract on the NumPy-level functions, against NumPy itself: a table of calls with the ufunc
keywords (out= in other dtypes, shapes and forms, casting=, dtype=, signature=, order=, where=, subok=) run through
the NumPy ufunc and the gpuops function side by side; every floating-point error case under every np.errstate
mode, side by side; device arrays as out=; and the kernels' error flag over random layouts."""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpuops
from gpuops import DataType, fperrors
from gpuops.bench.reference import compare
from numpy._core._exceptions import UFuncTypeError

from .dml import USAGE, make_desc, run_arranged
from .layout_strategies import arrangement, layout_cases, transposed_cases
from .reference import random_values, special_values

UFUNCS = {"sign": np.sign, "is_nan": np.isnan, "is_infinity": np.isinf, "modulus_floor": np.remainder,
          "modulus_truncate": np.fmod}
MODULUS = ("modulus_floor", "modulus_truncate")


def values(dtype: str, nan: bool = True) -> np.ndarray:
    """A dtype's special values (without NaN for sign: gpuops' SIGN(NaN) is +0, NumPy's NaN)."""
    found = special_values(DataType.from_numpy(np.dtype(dtype)))
    return found if nan else found[~np.isnan(found)] if found.dtype.kind == "f" else found


def pair(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every special value against every other (the divisor's zeros taken out: errors are tested apart)."""
    v = values(dtype)
    b = v[v != 0] if v.dtype.kind != "f" else v[(v != 0) & ~np.isinf(v)]
    return v[:, None], b[None, :]


@dataclass
class Call:
    """One call, made through NumPy's ufunc and through gpuops (out= arrays copied for each). `refused`: gpuops
    refuses what NumPy computes (a documented difference), matched against its message."""

    id: str
    function: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    refused: str | None = None


DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
          "float64", "complex64"]
CASTINGS = ["no", "equiv", "safe", "same_kind", "unsafe"]


def out_dtype_calls():
    """out= of every dtype under every casting rule: NumPy's casting decides, gpuops converts on the host."""
    sources = {"sign": (values("float32", nan=False),), "is_nan": (values("float16"),),
               "is_infinity": (values("float32"),), "modulus_floor": pair("int16"), "modulus_truncate": pair("float32")}
    for function, args in sources.items():
        shape = np.broadcast_shapes(*(a.shape for a in args))
        for dtype in DTYPES:
            for casting in CASTINGS:
                yield Call(f"{function}-out-{dtype}-{casting}", function, args,
                           {"out": np.full(shape, 7, dtype), "casting": casting})


def out_form_calls():
    x = values("float32", nan=False)[:6].reshape(2, 3)
    i = np.int8([[7, -7, 100], [-128, 1, 3]])
    yield Call("sign-out-broadcast-to-out", "sign", (x,), {"out": np.zeros((4, 2, 3), np.float32)})
    yield Call("sign-out-broadcast-cast", "sign", (x[0],), {"out": np.zeros((5, 3), np.float64)})
    yield Call("sign-out-tuple", "sign", (x,), {"out": (np.zeros((2, 3), np.float32),)})
    yield Call("sign-out-tuple-none", "sign", (x,), {"out": (None,)})
    yield Call("sign-out-tuple-two", "sign", (x,), {"out": (np.zeros((2, 3), np.float32),) * 2})
    yield Call("sign-out-list", "sign", (x,), {"out": [np.zeros((2, 3), np.float32)]})
    yield Call("sign-out-shape-refused", "sign", (x,), {"out": np.zeros(3, np.float32)})
    yield Call("sign-out-not-broadcastable", "sign", (x,), {"out": np.zeros((2, 4), np.float32)})
    yield Call("sign-out-transposed-cast", "sign", (x,), {"out": np.zeros((3, 2), np.float16).T})
    yield Call("sign-0d-into-1d", "sign", (np.float32(-2),), {"out": np.zeros(3, np.float64)})
    yield Call("sign-0d-into-0d", "sign", (np.float32(-2),), {"out": np.zeros((), np.int64), "casting": "unsafe"})
    yield Call("modulus_floor-scalars-into-int8", "modulus_floor", (-7, 3), {"out": np.zeros((), np.int8)})
    yield Call("modulus_floor-int8-into-uint8", "modulus_floor", (i, 5), {"out": np.zeros((2, 3), np.uint8)})
    yield Call("modulus_floor-int8-into-uint8-strided", "modulus_floor", (i, np.int8([3, -3, 5])),
               {"out": np.zeros((2, 6), np.uint8)[:, ::2], "casting": "unsafe"})
    yield Call("modulus_truncate-in-place-cast", "modulus_truncate", (np.float32([5.5, -7.25]), 2),
               {"out": np.zeros(2, np.float16)})
    yield Call("modulus_floor-big-endian-equiv", "modulus_floor", (np.int16([7, -7]), np.int16(3)),
               {"out": np.zeros(2, ">i2"), "casting": "equiv"})
    yield Call("modulus_floor-big-endian-no", "modulus_floor", (np.int16([7, -7]), np.int16(3)),
               {"out": np.zeros(2, ">i2"), "casting": "no"})
    yield Call("is_nan-into-float16-broadcast", "is_nan", (np.float32([np.nan, 1]),),
               {"out": np.zeros((3, 2), np.float16)})
    yield Call("is_infinity-into-int32", "is_infinity", (np.float16([np.inf, 1]),), {"out": np.zeros(2, np.int32)})
    yield Call("sign-out-empty", "sign", (np.zeros((0, 3), np.float32),), {"out": np.zeros((2, 0, 3), np.float64)})


def dtype_and_signature_calls():
    f = values("float32", nan=False)
    a, b = pair("int8")
    yield Call("sign-dtype-int16", "sign", (np.int8([-3, 0, 5]),), {"dtype": np.int16})
    yield Call("sign-dtype-float64", "sign", (f,), {"dtype": np.float64}, refused="NumPy computes in float64")
    yield Call("sign-dtype-int8-refused", "sign", (f,), {"dtype": np.int8})
    yield Call("sign-dtype-int8-unsafe", "sign", (np.float32([-2.5, 0, 3]),), {"dtype": np.int8, "casting": "unsafe"})
    yield Call("sign-dtype-string", "sign", (np.int16([-3, 3]),), {"dtype": "i4"})
    yield Call("sign-dtype-byte-order", "sign", (np.int16([-3, 3]),), {"dtype": ">i2"})
    yield Call("sign-dtype-not-a-dtype", "sign", (np.int16([-3, 3]),), {"dtype": "nonsense"})
    yield Call("modulus_floor-dtype-float32", "modulus_floor", (a, b), {"dtype": np.float32})
    yield Call("modulus_floor-dtype-int16", "modulus_floor", (a, b), {"dtype": "int16"})
    yield Call("modulus_floor-dtype-narrower", "modulus_floor", (np.int16([700, -7]), 3), {"dtype": np.int8})
    yield Call("modulus_truncate-dtype-float16", "modulus_truncate", (np.float32([7.5, -7.25]), 2),
               {"dtype": np.float16})
    yield Call("modulus_truncate-dtype-float16-safe", "modulus_truncate", (np.float32([7.5]), 2),
               {"dtype": np.float16, "casting": "safe"})
    yield Call("modulus_floor-dtype-int32-refused", "modulus_floor", (np.float32([7.5]), 2), {"dtype": np.int32})
    yield Call("modulus_floor-dtype-int32-unsafe", "modulus_floor", (np.float32([7.5, -2.5]), 2),
               {"dtype": np.int32, "casting": "unsafe"})
    yield Call("modulus_floor-dtype-with-python-float", "modulus_floor", (np.int8([7]), 3.5),
               {"dtype": np.int8, "casting": "unsafe"})
    yield Call("is_nan-dtype-bool", "is_nan", (values("float16"),), {"dtype": bool})
    yield Call("is_nan-dtype-float32", "is_nan", (values("float16"),), {"dtype": np.float32})
    yield Call("is_infinity-dtype-uint8", "is_infinity", (values("float32"),), {"dtype": np.uint8})
    yield Call("modulus_floor-signature-string", "modulus_floor", (np.float32([7.5]), 2), {"signature": "ff->f"})
    yield Call("modulus_floor-signature-float16", "modulus_floor", (np.float32([7.5]), 2), {"signature": "ee->e"})
    yield Call("modulus_floor-signature-tuple", "modulus_floor", (np.float32([7.5]), 2),
               {"signature": (None, None, np.float16)})
    yield Call("modulus_floor-signature-types", "modulus_floor", (np.float32([7.5]), 2),
               {"signature": ("e", "e", "e")})
    yield Call("modulus_floor-signature-short", "modulus_floor", (np.float32([7.5]), 2), {"signature": "f->f"})
    yield Call("modulus_floor-signature-list", "modulus_floor", (np.float32([7.5]), 2),
               {"signature": [None, None, np.float16]})
    yield Call("modulus_floor-signature-dtype", "modulus_floor", (np.float32([7.5]), 2), {"signature": np.float16})
    yield Call("modulus_floor-signature-and-dtype", "modulus_floor", (np.float32([7.5]), 2),
               {"signature": "ff->f", "dtype": np.float32})
    yield Call("sign-signature-casting-no", "sign", (np.int8([3]),), {"signature": "h->h", "casting": "no"})


def order_calls():
    c = np.arange(-12, 12, dtype=np.int16).reshape(4, 6)
    f = np.asfortranarray(c)
    t = np.arange(-12, 12, dtype=np.int16).reshape(2, 3, 4).transpose(2, 0, 1)
    column = np.asfortranarray(np.int16([[3], [5], [-7], [2]]))
    for order in ("K", "C", "F", "A", None, "c", "a"):
        for name, args in (("c", (c, 7)), ("f", (f, np.int16(7))), ("transposed", (t, t)), ("f+row", (f, c[0])),
                           ("column+row", (column, c[0])), ("reversed", (c[::-1], 5))):
            yield Call(f"modulus_floor-order-{order}-{name}", "modulus_floor", args, {"order": order})
        yield Call(f"is_nan-order-{order}", "is_nan", (np.asfortranarray(values("float32")[:20].reshape(4, 5)),),
                   {"order": order})
    for order in ("X", "Fortran", "", 1):
        yield Call(f"sign-order-{order!r}", "sign", (c,), {"order": order})


def keyword_calls():
    x = values("float32", nan=False)
    for where in (False, None, np.True_, np.array(True), x > 0):
        yield Call(f"sign-where-{type(where).__name__}-{where if np.ndim(where) == 0 else 'array'}", "sign", (x,),
                   {"where": where, "out": np.zeros(x.shape, x.dtype)},
                   refused=r"where=.*gpuops computes every element: only where=True")
    yield Call("sign-where-true", "sign", (x,), {"where": True})
    for subok in (True, False):
        yield Call(f"sign-subok-{subok}", "sign", (x,), {"subok": subok})
    for subok in (1, None, np.True_):
        yield Call(f"sign-subok-{subok!r}", "sign", (x,), {"subok": subok})
    for casting in ("bogus", None, 0):
        yield Call(f"sign-casting-{casting!r}", "sign", (x,), {"casting": casting})
    yield Call("sign-unknown-keyword", "sign", (x,), {"extobj": None})


CALLS = [*out_dtype_calls(), *out_form_calls(), *dtype_and_signature_calls(), *order_calls(), *keyword_calls()]


def fresh(kwargs: dict) -> dict:
    """The call's keywords with out= copied (each side writes its own), in its form (an array, tuple or list)."""
    kwargs = dict(kwargs)
    out = kwargs.get("out")
    if isinstance(out, (tuple, list)):
        kwargs["out"] = type(out)(_twin(o) for o in out)
    elif out is not None:
        kwargs["out"] = _twin(out)
    return kwargs


def _twin(out):
    """A copy of an out array with its layout (strides and base) and values."""
    if not isinstance(out, np.ndarray) or out.base is None:
        return np.copy(out) if isinstance(out, np.ndarray) else out
    base = np.copy(out.base)
    offset = out.__array_interface__["data"][0] - out.base.__array_interface__["data"][0]
    return np.ndarray(out.shape, out.dtype, base.data, offset, out.strides)


def outcome(run, args: tuple, kwargs: dict):
    """(result or None, exception or None, the out passed) of one call, floating-point errors and warnings aside
    (test_errors_as_numpy compares those)."""
    kwargs = fresh(kwargs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return run(*args, **kwargs), None, kwargs.get("out")
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            return None, exc, kwargs.get("out")


def assert_same(got, want) -> None:
    """The same kind of object, dtype, shape and bits (NaN payloads aside, complex parts compared apart)."""
    assert type(got) is type(want), f"gpuops gave {type(got).__name__}, NumPy {type(want).__name__}"
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    pairs = [(got.real, want.real), (got.imag, want.imag)] if got.dtype.kind == "c" else [(got, want)]
    for ours, theirs in pairs:
        mismatch = compare(ours, theirs)
        assert mismatch is None, mismatch.describe()


@pytest.mark.parametrize("call", CALLS, ids=[c.id for c in CALLS])
def test_keywords_as_numpy(device, call):
    ours = getattr(gpuops, call.function)
    want, numpy_error, numpy_out = outcome(UFUNCS[call.function], call.args, call.kwargs)
    got, error, out = outcome(ours, call.args, {**call.kwargs, "device": device})
    if call.refused is not None:
        assert numpy_error is None, f"NumPy refuses too: {numpy_error!r}"
        assert isinstance(error, gpuops.ValidationError), repr(error)
        assert str(error).startswith(f"gpuops.{call.function}: ")
        assert re.search(call.refused, str(error), re.S), str(error)
        return
    if numpy_error is not None:
        assert error is not None, f"NumPy refuses ({numpy_error!r}); gpuops gave {got!r}"
        if "unexpected keyword" in str(numpy_error):  # Python's own refusal, the same for both
            assert type(error) is TypeError and "unexpected keyword" in str(error)
            return
        assert isinstance(error, gpuops.GpuOpsError), repr(error)
        assert str(error).startswith(f"gpuops.{call.function}: "), str(error)
        if "Cannot cast ufunc" in str(numpy_error):  # a casting refusal: NumPy's type, words and attributes
            assert isinstance(error, gpuops.CastingError) and isinstance(error, UFuncTypeError), repr(error)
            assert str(error).endswith(str(numpy_error))
            assert [getattr(error, a) for a in ("ufunc", "casting", "from_", "to")] == \
                [getattr(numpy_error, a) for a in ("ufunc", "casting", "from_", "to")]
        elif isinstance(numpy_error, ValueError):
            assert isinstance(error, ValueError), repr(error)
        return
    assert error is None, f"gpuops refused ({error!r}); NumPy gave {want!r}"
    assert_same(got, want)
    if isinstance(numpy_out, np.ndarray) or isinstance(numpy_out, tuple) and numpy_out[0] is not None:
        expected_out = numpy_out[0] if isinstance(numpy_out, tuple) else numpy_out
        given_out = out[0] if isinstance(out, tuple) else out
        assert got is given_out, "with out=, the result is out itself"
        assert_same(given_out, expected_out)
    elif isinstance(want, np.ndarray):
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous, want.flags.f_contiguous)


# ---- floating-point errors under np.errstate

def _call(run, args, kwargs):
    return run(*args, **kwargs)  # one line for both: NumPy's warnings and gpuops' name it


def error_cases():
    """(id, function, args, kwargs): every case where NumPy's remainder and fmod raise a floating-point error, and
    quiet neighbours. The float divisors of 0 and dividends of inf give NaN (invalid), integer divisors of 0 give
    0 (divide by zero); NaN operands alone are quiet, and so is INT_MIN % -1."""
    for function in MODULUS:
        for dtype in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
            info = np.iinfo(dtype)
            yield f"{function}-{dtype}-x%0", function, (np.array([5, 6, 0], dtype), np.array([0, 2, 0], dtype)), {}
            yield f"{function}-{dtype}-quiet", function, (np.array([5, info.min], dtype),
                                                          np.array([3, -1 if info.min else 7], dtype)), {}
        for dtype in ("float16", "float32"):
            for name, a, b in (("x%0", 1.0, 0.0), ("0%0", 0.0, -0.0), ("inf%x", -np.inf, 3.0), ("inf%0", np.inf, 0.0),
                               ("inf%inf", np.inf, -np.inf), ("nan%0", np.nan, 0.0), ("x%nan", 1.0, np.nan),
                               ("inf%nan", np.inf, np.nan), ("x%inf", -1.0, np.inf), ("tiny", -1e-7, 3.0)):
                yield f"{function}-{dtype}-{name}", function, (np.array([a, 2.5], dtype), np.array([b, 2], dtype)), {}
            # a signalling NaN (quiet bit clear) raises invalid, as an operand of C's fmodf
            signalling = np.array([0x7c01 if dtype == "float16" else 0x7f800001], f"u{np.dtype(dtype).itemsize}")
            snan = signalling.view(dtype)
            yield f"{function}-{dtype}-snan%x", function, (snan, np.array([3], dtype)), {}
            yield f"{function}-{dtype}-x%-snan", function, (np.array([3], dtype), -snan), {}
        yield f"{function}-python-ints", function, (5, 0), {}
        yield f"{function}-0d-float32", function, (np.float32(np.inf), np.float32(2)), {}
        # errors of the conversion into out, reported by the ufunc: with the kernel's, both
        yield f"{function}-into-float16-overflow", function, (np.float32([70000, 1]), np.float32([1e6, 0])), \
            {"out": np.zeros(2, np.float16)}
        yield f"{function}-int32-into-float16", function, (np.int32([70000, 5]), np.int32([1000000, 0])), \
            {"out": np.zeros(2, np.float16)}
        yield f"{function}-into-int32-unsafe", function, (np.float32([np.nan, 1e10, 7]), np.float32([2, 3e10, 2])), \
            {"out": np.zeros(3, np.int32), "casting": "unsafe"}
        # errors of converting an input (NumPy reports them "in cast")
        yield f"{function}-python-int-to-float16", function, (np.float16([1, 2]), 70000), {}
        yield f"{function}-float32-dtype-float16", function, (np.float32([1e10, 2]), np.float32(3)), \
            {"dtype": np.float16}
    yield "sign-into-int8-unsafe", "sign", (np.float32([np.inf, -3]),), {"out": np.zeros(2, np.int8),
                                                                          "casting": "unsafe"}
    yield "is_nan-into-float16", "is_nan", (np.float32([np.nan, 1]),), {"out": np.zeros(2, np.float16)}


MODES = ["ignore", "warn", "raise", "call", "print", "log", "mixed", "mixed-call-log", "call-unset", "log-unset",
         "seterrcall"]
# Every mode for these cases (each kind of error: divide, invalid, both categories at once, a conversion's); 'call'
# (which receives the flags raised) and 'warn' (which names the line) for the others, to keep CI short.
EVERY_MODE = {"modulus_floor-int8-x%0", "modulus_truncate-uint64-x%0", "modulus_floor-int32-quiet",
              "modulus_floor-float16-inf%x", "modulus_truncate-float32-x%0", "modulus_floor-float32-nan%0",
              "modulus_truncate-float16-snan%x", "modulus_floor-int32-into-float16",
              "modulus_truncate-into-float16-overflow", "modulus_floor-python-int-to-float16",
              "modulus_floor-python-ints", "sign-into-int8-unsafe"}
ERROR_CASES = [(case, mode) for case in error_cases()
               for mode in (MODES if case[0] in EVERY_MODE else ["warn", "call"])]


class Log:
    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.append(text)


def observe(run, args, kwargs, mode: str, capfd):
    """Everything a call shows under `mode`: its result or exception, its warnings (category, text, where), the
    callback's calls, the log's lines and what reached file descriptor 2."""
    calls, log = [], Log()
    callback = lambda what, flags: calls.append((what, flags))  # noqa: E731
    settings = {"ignore": dict(all="ignore"), "warn": dict(all="warn"), "raise": dict(all="raise"),
                "call": dict(all="call", call=callback), "print": dict(all="print"), "log": dict(all="log", call=log),
                "mixed": dict(divide="raise", over="warn", invalid="call", call=callback),
                "mixed-call-log": dict(divide="log", over="call", invalid="warn", call=callback),
                "call-unset": dict(all="call", call=None), "log-unset": dict(all="log", call=None),
                "seterrcall": dict(all="call")}[mode]
    kwargs = fresh(kwargs)
    capfd.readouterr()
    previous = np.seterrcall(callback) if mode == "seterrcall" else None
    try:
        with warnings.catch_warnings(record=True) as caught, np.errstate(**settings):
            warnings.simplefilter("always")
            try:
                result, error = _call(run, args, kwargs), None
            except Exception as exc:  # noqa: BLE001 - compared with NumPy's
                result, error = None, exc
    finally:
        if mode == "seterrcall":
            np.seterrcall(previous)
    shown = [(w.category, str(w.message), w.filename, w.lineno) for w in caught]
    return result, error, shown, calls, log.lines, capfd.readouterr().err, kwargs.get("out")


@pytest.mark.parametrize("case, mode", ERROR_CASES, ids=[f"{c[0]}-{m}" for c, m in ERROR_CASES])
def test_errors_as_numpy(device, capfd, case, mode):
    _, function, args, kwargs = case
    want, numpy_error, numpy_warnings, numpy_calls, numpy_log, numpy_stderr, numpy_out = observe(
        UFUNCS[function], args, kwargs, mode, capfd)
    got, error, our_warnings, our_calls, our_log, our_stderr, out = observe(
        getattr(gpuops, function), args, {**kwargs, "device": device}, mode, capfd)
    assert our_warnings == numpy_warnings
    assert (our_calls, our_log, our_stderr) == (numpy_calls, numpy_log, numpy_stderr)
    assert (type(error), str(error)) == (type(numpy_error), str(numpy_error))
    if numpy_error is None:
        assert_same(got, want)
    if out is not None:
        assert_same(out, numpy_out)  # written before any error is raised, as NumPy writes it


def test_a_quiet_call_reports_nothing_in_any_mode(device):
    with np.errstate(all="raise"):
        gpuops.modulus_floor(np.int8([5, -128]), np.int8([3, -1]), device=device)
        gpuops.modulus_truncate(np.float32([np.nan, 1, -0.0]), np.float32([0, np.inf, 3]), device=device)


def test_calls_on_threads_report_their_own_errors_only(device, dropped_devices_released):
    """Every call's kernels share the device's flag word (BufferPool.flag_word): each submission clears it before
    them and copies it out after them, so calls on other threads never see each other's errors."""
    import threading
    failures = []

    def calls(divisor: int, expect_error: bool) -> None:
        a, b = np.arange(-300, 300, dtype=np.int16), np.full(600, divisor, np.int16)
        for _ in range(40):
            with np.errstate(all="raise"):
                try:
                    gpuops.modulus_floor(a, b, device=device)
                    raised = False
                except FloatingPointError:
                    raised = True
            if raised != expect_error:
                failures.append((divisor, raised))

    threads = [threading.Thread(target=calls, args=(d, d == 0)) for d in (0, 7, 0, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_warnings_name_the_callers_line_through_any_depth(device):
    def nested():
        return gpuops.modulus_floor(np.int16([1]), np.int16([0]), device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nested()
    (warning,) = caught
    assert warning.filename == __file__ and warning.lineno == nested.__code__.co_firstlineno + 1


def test_device_results_report_no_errors(device):
    """A device array's result stays on the GPU and reports nothing (docs/semantics.md); read back by the call
    (a host out=), it reports as NumPy does."""
    a = gpuops.asarray(np.int32([5, 6]), device=device)
    b = gpuops.asarray(np.int32([0, 2]), device=device)
    with np.errstate(all="raise"):
        result = gpuops.modulus_floor(a, b)
        assert result.numpy().tolist() == [0, 0]
        with pytest.raises(FloatingPointError, match="divide by zero encountered in remainder"):
            gpuops.modulus_floor(a, b, out=np.empty(2, np.int32))


def test_report_mirrors_numpys_handler_for_every_flag(capfd):
    """fperrors.report against a NumPy call raising the same flag, for the flags no gpuops kernel raises on its
    own (overflow and underflow come from conversions into out)."""
    log = Log()
    for flag, numpy_call in ((fperrors.OVERFLOW, lambda: np.multiply(np.float32([3e38]), 10)),
                             (fperrors.UNDERFLOW, lambda: np.multiply(np.float32([1e-38]), np.float32(1e-10))),
                             (fperrors.INVALID, lambda: np.subtract(np.float32([np.inf]), np.inf))):
        for mode in ("warn", "log", "print", "raise"):
            seen = []
            for run in (numpy_call, lambda: fperrors.report("multiply" if flag != fperrors.INVALID else "subtract",
                                                           flag)):
                capfd.readouterr()
                with warnings.catch_warnings(record=True) as caught, np.errstate(all=mode, call=log):
                    warnings.simplefilter("always")
                    try:
                        run()
                        raised = None
                    except FloatingPointError as exc:
                        raised = str(exc)
                seen.append(([str(w.message) for w in caught], raised, capfd.readouterr().err, list(log.lines)))
                log.lines.clear()
            assert seen[0] == seen[1], (flag, mode)


# ---- device arrays as out=

def test_device_out_of_the_results_bits(device):
    """A device out= takes dtypes the GPU writes exactly: the result's, an integer of its size (the same bits), and
    for a predicate any integer or bool of one byte, or four where the operator has a 32-bit output (IS_NAN)."""
    a = np.int8([[7, -7, 100], [-128, 1, 3]])
    for dtype in (np.int8, np.uint8):  # (int8 to uint8 is an unsafe cast to NumPy: their bits)
        out = gpuops.asarray(np.zeros((2, 3), dtype), device=device)
        assert gpuops.modulus_floor(a, np.int8(5), out=out, casting="unsafe") is out
        assert_same(out.numpy(), np.remainder(a, np.int8(5), out=np.zeros((2, 3), dtype), casting="unsafe"))
    x = values("float32")
    for dtype in (np.bool_, np.uint8, np.int8, np.uint32, np.int32):
        out = gpuops.asarray(np.full(x.shape, 7, dtype), device=device)
        gpuops.is_nan(x, out=out)
        assert_same(out.numpy(), np.isnan(x, out=np.zeros(x.shape, dtype)))
    out = gpuops.asarray(np.zeros((4,) + x.shape, np.uint8), device=device)  # inputs broadcast to out's shape
    gpuops.is_infinity(x, out=out)
    assert_same(out.numpy(), np.isinf(x, out=np.zeros((4,) + x.shape, np.uint8)))


@pytest.mark.parametrize("function, args, dtype, refusal", [
    ("sign", (np.float32([1]),), np.float64, "the GPU does not write float64 exactly"),
    ("is_infinity", (np.float32([1]),), np.uint32, "the GPU does not write uint32 exactly"),
    ("modulus_floor", (np.int16([7]), 3), np.float32, "the GPU does not write float32 exactly"),
    ("modulus_floor", (np.int16([7]), 3), np.int8, "the GPU does not write int8 exactly"),
    ("sign", (np.float32([1]),), np.int32, r"Cannot cast ufunc 'sign' output from dtype\('float32'\)"),
])
def test_device_out_refused_where_the_gpu_cannot_write_it(device, function, args, dtype, refusal):
    out = gpuops.asarray(np.zeros(1, dtype), device=device)
    with pytest.raises(gpuops.GpuOpsError, match=refusal):
        getattr(gpuops, function)(*args, out=out)


def test_is_nan_writes_32_bit_device_outs_only_where_directml_has_them(device):
    out = gpuops.asarray(np.zeros(2, np.uint32), device=device)
    with pytest.raises(gpuops.ValidationError, match="the GPU does not write uint32 exactly"):
        gpuops.is_nan(np.float32([np.nan, 1]), out=out, feature_level="2.1")


# ---- the kernels' error flag over layouts

FLAG_EXAMPLES = int(os.environ.get("GPUOPS_FLAG_EXAMPLES", "30"))
_DEVICES: dict[tuple, gpuops.Device] = {}


def _numpy_flags(ufunc, a: np.ndarray, b: np.ndarray) -> int:
    with fperrors.captured() as raised:
        ufunc(a, b)
    flags = 0
    for status in raised:
        flags |= status
    return flags


def _with_errors(data_type: DataType, count: int, rng: np.random.Generator, name: str, errors: str) -> np.ndarray:
    """Random values; "none": the error cases taken out (zero divisors, infinite dividends); "one": then one put
    back; "any": left as they come."""
    found = random_values(data_type, count, rng)
    if errors == "any":
        return found
    float_type = found.dtype.kind == "f"
    if name == "b_tensor":
        found[found == 0] = 1
    elif float_type:
        found[np.isinf(found)] = 1
    if errors == "one" and rng.integers(0, 2) == int(name == "b_tensor"):
        found[rng.integers(0, count)] = 0 if name == "b_tensor" else np.inf if float_type else found[0]
    return found


@settings(max_examples=FLAG_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(layout_cases() | layout_cases(rows=True) | transposed_cases(), st.sampled_from(["none", "one", "any"]))
def test_error_flag_over_layouts(device, case, errors):
    """The flag-reporting kernels over random layouts (every grid, tile edges, partial units, element paths): the
    same bits as NumPy, and the flag word NumPy's flags for the tensors' elements (no lane outside them counts)."""
    assume(case.operator.startswith("ELEMENT_WISE_MODULUS"))
    desc = make_desc(case.operator, case.mode, case.in_type, case.out_type, case.sizes, case.strides)
    try:
        gpuops.validate(desc)
    except gpuops.ValidationError:
        assume(False)
    spec = gpuops.operators.spec_of(desc)
    placed = arrangement(case, {name: getattr(desc, name) for name in spec.tensor_fields})
    rng = np.random.default_rng(abs(hash(repr(case))) % 2**32)
    names = iter(spec.inputs)
    key = (device.backend, id(device.wgpu_device), case.policy)
    if key not in _DEVICES:
        _DEVICES[key] = gpuops.Device(wgpu_device=device.wgpu_device, policy=case.policy)
    flags, (a, b) = run_arranged(_DEVICES[key], desc, placed, rng,
                                 lambda t, n: _with_errors(t, n, rng, next(names), errors), error_flags=True)
    assert flags == _numpy_flags(spec.numpy_ufunc, a, b)


def test_directml_level_kernels_report_nothing(device):
    """The DML level's kernels have no flag word and no report (what the modulus's files note is never read); the
    NumPy level's variant is the same loop with the flag word bound after the loop's views, the report library and
    the reporting entry point. An operator whose row reports nothing has no such variant."""
    desc = make_desc("ELEMENT_WISE_MODULUS_FLOOR", None, DataType.INT8, DataType.INT8, (64,))
    buffers = [device.wgpu_device.create_buffer(size=64, usage=USAGE) for _ in range(3)]
    bindings = {name: gpuops.Binding(buffer) for name, buffer in zip(("a_tensor", "b_tensor", "output_tensor"),
                                                                      buffers)}
    compiled = device.compile(desc)
    (kernel,) = compiled.kernels(bindings)
    assert not kernel.key.operation.error_flags and " error_flags: " not in kernel.source
    assert "// ---- lib/error_notes.wgsl" in kernel.source and "// ---- lib/error_flags.wgsl" not in kernel.source
    assert "finish_invocation" not in kernel.source
    (reporting,) = compiled.kernels(bindings, error_flags=True)
    assert reporting.key.operation.error_flags and reporting.key.loop == kernel.key.loop
    views = gpuops.shaders.bindings(reporting.key)
    assert views[:-1] == gpuops.shaders.bindings(kernel.key) and views[-1][1:] == ("error_flags", "read_write", None)
    assert "// ---- lib/error_flags.wgsl" in reporting.source and "finish_invocation();" in reporting.source
    sign = make_desc("ELEMENT_WISE_SIGN", None, DataType.INT8, DataType.INT8, (64,))
    with pytest.raises(gpuops.ValidationError, match="ELEMENT_WISE_SIGN reports no floating-point errors"):
        device.compile(sign).bind_with_error_flags({"input_tensor": bindings["a_tensor"],
                                                    "output_tensor": bindings["output_tensor"]},
                                                   gpuops.Binding(buffers[1]))
    for buffer in buffers:
        buffer.destroy()
