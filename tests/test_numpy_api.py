"""The NumPy-level functions against NumPy's own semantics: a table of inputs with NumPy's result (compared bit for
bit, dtype and scalar-ness included) or gpuops' refusal, then out=, empty inputs and sparse views."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

import numpy as np
import pytest

import gpuops
from gpuops import DataType, FeatureLevel, api, pool, wgpu_internals
from gpuops.bench.reference import compare

from .dml import device_with
from .reference import special_values

ALL_TYPES = ["float16", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32"]
FUNCTIONS = ["sign", "is_nan", "is_infinity", "modulus_floor", "modulus_truncate"]
UNARY = FUNCTIONS[:3]


def specials(dtype: str) -> np.ndarray:
    return special_values(DataType.from_numpy(np.dtype(dtype)))


def crossed(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every special value of a dtype against every other (2-D, so broadcasting plays no part)."""
    a, b = np.meshgrid(specials(dtype), specials(dtype), indexing="ij")
    return a, b


def numpy_sign(x):
    """np.sign with gpuops' one documented difference: NaN and -0 give +0."""
    result = np.sign(x)
    if result.dtype.kind == "f":
        fixed = np.where(np.isnan(result) | (result == 0), result.dtype.type(0), result)
        result = fixed[()] if isinstance(result, np.generic) else fixed
    return result


INFINITY_TESTS = {"either": np.isinf, "positive": np.isposinf, "negative": np.isneginf, 1: np.isposinf}
NUMPY = {"sign": numpy_sign, "is_nan": np.isnan, "modulus_floor": np.remainder, "modulus_truncate": np.fmod}


def numpy_result(function: str, args: tuple, kwargs: dict):
    run = INFINITY_TESTS[kwargs.get("mode", "either")] if function == "is_infinity" else NUMPY[function]
    with np.errstate(all="ignore"):
        return run(*args)


@dataclass
class Case:
    """One row: `dtype` is the result's (NumPy's), or `refused` the pattern of gpuops' refusal. `numpy` states
    what NumPy itself does with a refused input (its result dtype, or the exception it raises), and is checked."""

    id: str
    function: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    dtype: str | None = None
    refused: str | None = None
    error: type = gpuops.ValidationError
    numpy: str | type | None = None


def same_type_cases():
    for dtype in ALL_TYPES:
        yield Case(f"sign-{dtype}", "sign", (specials(dtype),), dtype=dtype)
        for function in ("modulus_floor", "modulus_truncate"):
            yield Case(f"{function}-{dtype}", function, crossed(dtype), dtype=dtype)
    for dtype in FLOATS:
        yield Case(f"is_nan-{dtype}", "is_nan", (specials(dtype),), dtype="bool")
        for mode in ("either", "positive", "negative", 1):
            yield Case(f"is_infinity-{mode}-{dtype}", "is_infinity", (specials(dtype),), {"mode": mode}, dtype="bool")


def python_scalar_cases():
    """Python scalars are weak: they take the array's type if they fit; a float beside integers gives float64."""
    for dtype in ("int8", "uint8", "int16", "float16", "float32"):
        a = specials(dtype)
        integer = np.dtype(dtype).kind in "iu"
        for function in ("modulus_floor", "modulus_truncate"):
            for scalar in (3, -3, 300, 70000, 2.5, 1e10):
                for first in (True, False):
                    args = (a, scalar) if first else (scalar, a)
                    name = "b" if first else "a"
                    case_id = f"{function}-{dtype}-{'array,' if first else ''}{scalar!r}{'' if first else ',array'}"
                    if isinstance(scalar, float) and integer:
                        yield Case(case_id, function, args, numpy="float64",
                                   refused=rf"{name}={scalar!r} \(Python float\).*NumPy computes in float64")
                    elif integer and not np.iinfo(dtype).min <= scalar <= np.iinfo(dtype).max:
                        yield Case(case_id, function, args, numpy=OverflowError,
                                   refused=rf"{name}={scalar} does not fit {dtype}.*out of bounds for {dtype}")
                    else:
                        yield Case(case_id, function, args, dtype=dtype)  # float16: 70000 and 1e10 are inf
    yield Case("sign-python-int", "sign", (-7,), dtype="int64")
    yield Case("sign-python-float", "sign", (-2.5,), numpy="float64", refused="NumPy computes in float64")
    yield Case("is_nan-python-float", "is_nan", (2.5,), numpy="bool", refused="NumPy computes in float64")
    yield Case("is_infinity-python-int", "is_infinity", (1,), numpy="bool", refused="NumPy computes in int64")
    yield Case("modulus_floor-python-ints", "modulus_floor", (-7, 3), dtype="int64")
    yield Case("modulus_truncate-python-ints", "modulus_truncate", (-7, 3), dtype="int64")
    yield Case("modulus_floor-python-floats", "modulus_floor", (7.5, 2), numpy="float64",
               refused=r"a=7.5 \(Python float\), b=2 \(Python int\): NumPy computes in float64")
    yield Case("modulus_floor-int64-2**64", "modulus_floor", (np.int64([5]), 2**64), numpy=OverflowError,
               refused="b=18446744073709551616 does not fit int64")
    yield Case("modulus_floor-float32-10**400", "modulus_floor", (np.float32([5]), 10**400), numpy=OverflowError,
               refused="does not fit float32")
    yield Case("modulus_floor-complex", "modulus_floor", (np.float32([5]), 2j), numpy=TypeError,
               refused=r"NumPy has no remainder for a \(float32\), b=2j \(Python complex\)")


MIXED = [  # (a dtype, b dtype, NumPy's result)
    ("int8", "int16", "int16"), ("uint8", "int8", "int16"), ("float16", "float32", "float32"),
    ("int8", "float16", "float16"), ("uint16", "int8", "int32"), ("uint32", "int32", "int64"),
    ("int16", "float16", "float32"), ("int32", "float32", "float64"), ("int64", "uint64", "float64"),
]


def mixed_cases():
    rng = np.random.default_rng(3)
    for a_type, b_type, result in MIXED:
        a = rng.choice(specials(a_type), 64)[:, None]
        b = rng.choice(specials(b_type), 64)[None, :]
        for function in ("modulus_floor", "modulus_truncate"):
            case_id = f"{function}-{a_type}+{b_type}"
            if result == "float64":
                yield Case(case_id, function, (a, b), numpy="float64",
                           refused=rf"a \({a_type}\), b \({b_type}\): NumPy computes in float64")
            else:
                yield Case(case_id, function, (a, b), dtype=result)
            yield Case(case_id + "-swapped", function, (b, a), dtype=result) if result != "float64" else \
                Case(case_id + "-swapped", function, (b, a), numpy="float64", refused="NumPy computes in float64")
    # NumPy scalars are strong: np.int16(3) beside int8 computes in int16
    yield Case("modulus_floor-int8-array+int16-scalar", "modulus_floor", (specials("int8"), np.int16(3)),
               dtype="int16")
    yield Case("modulus_floor-float16-array+float32-scalar", "modulus_floor", (specials("float16"), np.float32(0.3)),
               dtype="float32")


def refused_type_cases():
    for function in FUNCTIONS:
        arity = 2 if function.startswith("modulus") else 1
        numpy_bool = {"sign": TypeError, "is_nan": "bool", "is_infinity": "bool"}.get(function, "int8")
        yield Case(f"{function}-bool", function, (np.array([True, False]),) * arity, numpy=numpy_bool,
                   refused=r"\(bool\): DirectML has no boolean tensors.*astype\(np.int8\)")
        numpy_float64 = "bool" if function in ("is_nan", "is_infinity") else "float64"
        yield Case(f"{function}-float64", function, (np.array([1.5, -np.inf]),) * arity, numpy=numpy_float64,
                   refused=f"NumPy computes in float64; gpuops computes {function} at feature level 6_4 in")
    yield Case("modulus_floor-int8+python-bool", "modulus_floor", (np.int8([5]), True), numpy="int8",
               refused=r"b=True \(Python bool\): DirectML has no boolean tensors .*; pass int\(b\) \(a Python int "
                       r"takes the other operands' type\)$")
    yield Case("sign-bool-list", "sign", ([True, False],), numpy=TypeError,
               refused=r"x \(a list, bool to NumPy\): DirectML .*; pass np.asarray\(x, np.int8\) \(or another number")
    yield Case("is_nan-int8", "is_nan", (np.int8([1]),), numpy="bool",
               refused="NumPy computes in int8; gpuops computes is_nan at feature level 6_4 in float16, float32")
    yield Case("is_infinity-uint16", "is_infinity", (np.uint16([1]),), numpy="bool",
               refused="NumPy computes in uint16; gpuops computes is_infinity")
    yield Case("sign-complex64", "sign", (np.complex64([1j]),), numpy="complex64",
               refused="NumPy computes in complex64")
    yield Case("sign-strings", "sign", (np.array(["a"]),), numpy=TypeError, refused=r"NumPy has no sign for x \(<U1\)")
    yield Case("sign-objects", "sign", (np.array([1], object),), numpy="object", refused="NumPy computes in object")
    yield Case("sign-ragged-list", "sign", ([[1], [1, 2]],), numpy=ValueError,
               refused=r"x \[\[1\], \[1, 2\]\] is not an array NumPy can make")


def list_cases():
    yield Case("sign-list", "sign", ([1, -2, 0],), dtype="int64")
    yield Case("sign-float-list", "sign", ([1.5, -2.0],), numpy="float64",
               refused=r"x \(a list, float64 to NumPy\): NumPy computes in float64")
    yield Case("modulus_floor-list+int8-scalar", "modulus_floor", ([7, -7], np.int8(3)), dtype="int64")
    yield Case("modulus_floor-list+python-int", "modulus_floor", ([7, -7], 3), dtype="int64")
    yield Case("modulus_truncate-float32+list", "modulus_truncate", (np.float32([7.5]), [2]), numpy="float64",
               refused=r"a \(float32\), b \(a list, int64 to NumPy\): NumPy computes in float64")
    yield Case("is_nan-list-of-float16", "is_nan", ([np.float16(1), np.float16("nan")],), dtype="bool")
    yield Case("modulus_floor-tuple", "modulus_floor", ((np.int16(7), np.int16(-7)), np.int16(4)), dtype="int16")


def zero_dimensional_cases():
    """ufuncs give NumPy scalars for 0-d inputs."""
    yield Case("sign-0d-float32-scalar", "sign", (np.float32(-2),), dtype="float32")
    yield Case("sign-0d-int8-array", "sign", (np.array(5, np.int8),), dtype="int8")
    yield Case("is_nan-0d", "is_nan", (np.float16("nan"),), dtype="bool")
    yield Case("is_infinity-0d", "is_infinity", (np.array(-np.inf, np.float32),), {"mode": "negative"}, dtype="bool")
    yield Case("modulus_floor-0d-int16+python-int", "modulus_floor", (np.int16(-7), 3), dtype="int16")
    yield Case("modulus_truncate-0d-float32", "modulus_truncate", (np.float32(-5.5), np.float32(2)), dtype="float32")
    yield Case("modulus_floor-0d+array", "modulus_floor", (np.array(7, np.int8), np.int8([3, 4])), dtype="int8")


def empty_and_broadcast_cases():
    yield Case("sign-empty", "sign", (np.zeros((0, 3), np.float32),), dtype="float32")
    yield Case("is_nan-empty", "is_nan", (np.zeros(0, np.float16),), dtype="bool")
    yield Case("modulus_floor-empty-broadcast", "modulus_floor", (np.zeros((0, 3), np.int16), np.ones(3, np.int16)),
               dtype="int16")
    yield Case("modulus_floor-empty-overflowing-int", "modulus_floor", (np.zeros((2, 0), np.int8), 300),
               numpy=OverflowError, refused="b=300 does not fit int8")
    yield Case("modulus_floor-empty-float64", "modulus_floor", (np.zeros(0, np.int8), 0.5), numpy="float64",
               refused="NumPy computes in float64")
    yield Case("modulus_floor-broadcast", "modulus_floor",
               (np.arange(-6, 6, dtype=np.int32).reshape(3, 1, 4), np.int32([[3], [-5]])), dtype="int32")
    yield Case("modulus_truncate-broadcast-mixed", "modulus_truncate",
               (specials("float16")[:6].reshape(2, 1, 3), np.float32([[0.3], [-7], [np.inf], [0]])), dtype="float32")
    yield Case("sign-broadcast-view", "sign", (np.broadcast_to(np.int16([-3, 0, 3]), (4, 3)),), dtype="int16")
    yield Case("modulus_floor-shapes", "modulus_floor", (np.ones(3, np.int8), np.ones(4, np.int8)), numpy=ValueError,
               refused=r"shapes a \(3,\) and b \(4,\) cannot be broadcast together")


def argument_cases():
    x = np.float32([1, np.inf, -np.inf])
    for function in FUNCTIONS:
        args = (x, x) if function.startswith("modulus") else (x,)
        yield Case(f"{function}-device-cpu", function, args, {"device": "cpu"}, error=TypeError,
                   refused=r"device 'cpu' is a str, not a gpuops.Device")
        yield Case(f"{function}-feature-level-9.9", function, args, {"feature_level": "9.9"},
                   refused=r"feature_level '9.9' is not a DirectML feature level; allowed: 1_0, .*, 6_4")
        yield Case(f"{function}-masked", function, (np.ma.masked_array(x, mask=[0, 1, 0]),) + args[1:],
                   refused=r"x is a numpy.ma.MaskedArray; .*its mask would be lost; pass np.asarray\(x\)"
                   if len(args) == 1 else r"a is a numpy.ma.MaskedArray; .*mask would be lost")
    yield Case("modulus_floor-masked-b", "modulus_floor", (x, np.ma.masked_array(x, mask=[0, 1, 0])),
               refused=r"b is a numpy.ma.MaskedArray; .*mask would be lost; pass np.asarray\(b\)")
    yield Case("sign-matrix", "sign", (np.float32([[1, -2]]).view(np.matrix),),
               refused="x is a numpy.matrix; .*matrix semantics would be lost")
    for mode in (True, 1.0, np.True_, "sideways", 3, None):
        yield Case(f"is_infinity-mode-{mode!r}", "is_infinity", (x,), {"mode": mode},
                   refused=rf"gpuops.is_infinity: mode {mode!r}.*allowed: 'either', 'positive', 'negative'")
    for level in (1.5, True, "six", 0x6500):
        yield Case(f"sign-feature-level-{level!r}", "sign", (x,), {"feature_level": level},
                   refused=rf"gpuops.sign: feature_level {level!r} is not a")
    yield Case("sign-feature-level-6.4", "sign", (x,), {"feature_level": "6.4"}, dtype="float32")
    yield Case("sign-feature-level-int", "sign", (x,), {"feature_level": 0x2000}, dtype="float32")
    yield Case("sign-int64-at-4_0", "sign", (np.int64([3]),), {"feature_level": "4.0"}, numpy="int64",
               refused="NumPy computes in int64; gpuops computes sign at feature level 4_0 in float16, float32, "
                       "int8, int16, int32, uint8, uint16, uint32 and does not cast \\(convert the operands with "
                       "astype if a narrower type is meant\\)")
    yield Case("sign-int64-at-4_1", "sign", (np.int64([3]),), {"feature_level": "4.1"}, dtype="int64")
    yield Case("modulus_floor-python-ints-at-5_2", "modulus_floor", (7, 3), {"feature_level": "5.2"}, numpy="int64",
               refused="NumPy computes in int64; gpuops computes modulus_floor at feature level 5_2")
    yield Case("is_infinity-at-2_0", "is_infinity", (x,), {"feature_level": "2.0"}, numpy="bool",
               refused="none \\(the operator does not exist at that level\\)")
    yield Case("sign-float16-at-2_0", "sign", (specials("float16"),), {"feature_level": "2.0"}, dtype="float16")


def out_cases():
    """out='s refusals of its type; its dtypes, shapes and casting: tests/test_ufunc_contract.py."""
    x = np.float32([1, np.nan, -np.inf])
    read_only = np.empty(3, np.bool_)
    read_only.flags.writeable = False
    yield Case("is_nan-out-read-only", "is_nan", (x,), {"out": read_only}, refused="out is read-only")
    yield Case("sign-out-list", "sign", (x,), {"out": [0, 0, 0]}, refused="out is list, not a numpy.ndarray")
    yield Case("sign-out-masked", "sign", (x,), {"out": np.ma.masked_array(np.empty(3, np.float32))},
               refused="out is a numpy.ma.MaskedArray")


CASES = [*same_type_cases(), *python_scalar_cases(), *mixed_cases(), *refused_type_cases(), *list_cases(),
         *zero_dimensional_cases(), *empty_and_broadcast_cases(), *argument_cases(), *out_cases()]


def assert_identical(got, want) -> None:
    """Same kind of object (NumPy scalar or array), same dtype and shape, same bits (NaN payloads aside)."""
    assert type(got) is type(want), f"gpuops gave {type(got).__name__}, NumPy {type(want).__name__}"
    mismatch = compare(np.asarray(got), np.asarray(want))
    assert mismatch is None, mismatch.describe()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_table(device, case):
    run = getattr(gpuops, case.function)
    kwargs = {"device": device, **case.kwargs}
    if case.refused is not None:
        if isinstance(case.numpy, type):  # NumPy refuses too
            with pytest.raises(case.numpy), np.errstate(all="ignore"):
                numpy_result(case.function, case.args, case.kwargs)
        elif case.numpy is not None:  # NumPy computes: in a type gpuops does not, or (bool) by choice
            assert np.asarray(numpy_result(case.function, case.args, case.kwargs)).dtype == case.numpy
        with pytest.raises(case.error, match=case.refused) as refusal:
            run(*case.args, **kwargs)
        assert isinstance(refusal.value, gpuops.GpuOpsError) or case.error is TypeError
        assert str(refusal.value).startswith(f"gpuops.{case.function}: ")
        return
    want = numpy_result(case.function, case.args, case.kwargs)
    assert want.dtype == np.dtype(case.dtype), "the table's dtype is NumPy's"
    with np.errstate(all="ignore"):
        got = run(*case.args, **kwargs)
    assert_identical(got, want)


@pytest.mark.parametrize("function", UNARY)
def test_predicates_and_sign_out(device, function):
    x = np.array([[1, np.nan, -np.inf], [np.inf, -0.0, 2]], np.float16)
    run = getattr(gpuops, function)
    want = numpy_result(function, (x,), {})
    allowed = [np.bool_, np.uint8] if function != "sign" else [np.float16]
    for dtype in allowed:
        out = np.full(x.shape, 7, dtype)  # not 0/1: every element must be written
        assert run(x, out=out, device=device) is out
        assert out.dtype == dtype
        assert_identical(out, want.astype(dtype))
    out = np.empty((), allowed[0])  # with out=, a 0-d result is the out array, as in NumPy
    assert run(x[1, 1], out=out, device=device) is out
    assert_identical(out, np.asarray(numpy_result(function, (x[1, 1],), {})))
    transposed = np.zeros((3, 2), allowed[0]).T  # out in any layout
    assert run(x, out=transposed, device=device) is transposed
    assert_identical(transposed, want.astype(allowed[0]))


def test_modulus_out(device):
    a, b = np.int16([[7, -7, 30000]]), np.int16([[3], [-4]])
    out = np.empty((2, 3), np.int16)
    assert gpuops.modulus_floor(a, b, out=out, device=device) is out
    assert_identical(out, np.remainder(a, b))
    assert gpuops.modulus_truncate(np.int8(-7), 3, out=np.empty((), np.int8), device=device) == np.int8(-1)


def test_predicates_index_and_negate(device):
    x = np.float32([1, np.nan, np.inf, -2, np.nan])
    nan = gpuops.is_nan(x, device=device)
    assert nan.dtype == np.bool_ and nan.flags.writeable
    assert x[nan].size == 2 and np.isnan(x[nan]).all()
    assert (~nan).tolist() == [True, False, True, True, False]
    assert x[gpuops.is_infinity(x, device=device)].tolist() == [np.inf]


class Untouchable(gpuops.Device):
    """A device any use of which fails: the calls below must do no GPU work. Only its level, its lock and its
    pool (where the NumPy-level functions keep what a call's types decide; this one never holds a buffer) may be
    read."""

    def __init__(self):  # no adapter
        object.__setattr__(self, "pool", pool.BufferPool())
        object.__setattr__(self, "lock", threading.RLock())

    def __getattribute__(self, name):
        if name == "feature_level":
            return FeatureLevel.LEVEL_6_4
        if name in ("pool", "lock"):
            return object.__getattribute__(self, name)
        raise AssertionError(f"the device was used ({name}) for an empty result")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_empty_inputs_do_no_gpu_work(function):
    device = Untouchable()
    arity = 2 if function.startswith("modulus") else 1
    x = np.zeros((2, 0, 3), np.float32)
    args = (x, np.ones(3, np.float16))[:arity]
    want = numpy_result(function, args, {})
    assert_identical(getattr(gpuops, function)(*args, device=device), want)
    out = np.empty(want.shape, want.dtype)
    assert getattr(gpuops, function)(*args, device=device, out=out, feature_level="3.0") is out
    with pytest.raises(AssertionError, match="the device was used"):  # the device is untouchable indeed
        getattr(gpuops, function)(*(np.ones((2, 3), np.float32),) * arity, device=device)


def test_gather_threshold():
    """A view is gathered when its span passes 2 x its elements' bytes + 64 KiB; at the threshold it is not."""
    assert api.GATHER_SLACK_BYTES == 64 * 1024
    at = np.zeros(65540, np.int8)[::65539]  # 2 elements spanning 65540 bytes = 2 * 2 + 65536
    past = np.zeros(65541, np.int8)[::65540]  # one byte more
    assert at.size == past.size == 2
    assert not api.gathers(at) and api.gathers(past)
    assert api.gathers(past[::-1])  # negative strides span alike
    x = np.zeros(1 << 20, np.float32)
    assert not api.gathers(x) and not api.gathers(x[::2]) and not api.gathers(x[::1000][:16])  # small spans
    assert api.gathers(x[::3]) and api.gathers(x.reshape(1024, 1024)[:, 0])
    assert not api.gathers(np.broadcast_to(np.float32(1), (1 << 20,)))  # zero strides: no span at all
    assert not api.gathers(x[:0])


def _uploads(monkeypatch) -> list[int]:
    """The byte counts the NumPy-level functions upload for their inputs, call by call (an array given twice is
    uploaded once)."""
    sizes: list[int] = []
    upload = api.upload

    def spy(device, pool, data, encoder, *rest):
        sizes.append(data.nbytes)
        return upload(device, pool, data, encoder, *rest)

    monkeypatch.setattr(api, "upload", spy)
    return sizes


def test_sparse_views_upload_their_elements_and_dense_ones_their_span(device, monkeypatch):
    uploads = _uploads(monkeypatch)
    m = np.random.default_rng(4).standard_normal((2048, 2048)).astype(np.float32)
    column = m[:, 0]  # spans 16 MiB
    assert_identical(gpuops.sign(column, device=device), numpy_sign(column))
    assert uploads == [2048 * 4]
    uploads.clear()
    every_other = m.reshape(-1)[::2]  # below the threshold: uploaded as it lies, run strided
    assert_identical(gpuops.sign(every_other, device=device), numpy_sign(every_other))
    assert uploads == [m.nbytes - 4]
    uploads.clear()
    corner = m[::256, ::512].T  # gathered in its own axis order: the result is laid out as NumPy's
    got = gpuops.modulus_floor(corner, corner, device=device)
    assert uploads == [corner.nbytes]  # the same view twice: gathered and uploaded once
    with np.errstate(all="ignore"):
        want = np.remainder(corner, corner)
    assert_identical(got, want)
    assert got.strides == want.strides


def test_a_few_elements_of_an_array_larger_than_a_buffer(device, monkeypatch):
    big = np.arange(16 << 20, dtype=np.float32) - 8.0  # 64 MiB
    pair = big[7 :: (16 << 20) - 8]  # -1 and the last element: a 2-element view spanning 64 MiB
    assert pair.size == 2
    small = device_with(device, max_buffer_size=1 << 20)
    assert_identical(gpuops.sign(pair, device=small), numpy_sign(pair))
    assert gpuops.is_nan(pair, device=small).tolist() == [False, False]
    monkeypatch.setattr(api, "gathers", lambda array: False)  # uploaded as it lies, the span would not fit
    with pytest.raises(gpuops.DeviceError, match="holds at most 1048576 bytes"):
        gpuops.sign(pair, device=device_with(device, max_buffer_size=1 << 20))  # (small keeps its layout's call)


def test_host_calls_submit_once_and_map_once(device, monkeypatch):
    """One submission (uploads, kernels, the copy to the staging buffer) and one map per call, no read_buffer."""
    from .test_device_arrays import Counter

    x = specials("float32")
    gpuops.sign(x, device=device)  # compiled and planned before counting
    counter = Counter(device, monkeypatch)
    assert_identical(gpuops.sign(x, device=device), numpy_sign(x))
    assert (counter.submits, counter.maps, counter.reads) == (1, 1, 0)
    big = np.tile(x, pool.MAPPED_UPLOAD_BYTES // x.nbytes + 1)  # uploaded through a mapped buffer
    assert_identical(gpuops.sign(big, device=device), numpy_sign(big))
    assert (counter.submits, counter.maps, counter.reads) == (2, 3, 0)  # + the upload buffer's map


@pytest.mark.parametrize("extra", [0, 1, 3])
def test_large_uploads_of_any_byte_count(device, extra):
    """Past MAPPED_UPLOAD_BYTES inputs go through pooled mapped buffers; byte counts that are not whole words
    (write_buffer and buffer copies move 4-byte words) still arrive whole, on both paths."""
    for size in (pool.MAPPED_UPLOAD_BYTES + extra, 4093 + extra):
        a = np.random.default_rng(size).integers(-128, 128, size, dtype=np.int8)
        b = np.int8([3, -5, 7, 127, -128])[np.arange(size) % 5]
        assert_identical(gpuops.modulus_floor(a, b, device=device), np.remainder(a, b))
        assert_identical(gpuops.sign(a[::-1], device=device), np.sign(a[::-1]))


def test_what_types_and_layouts_decide_is_kept_in_a_bounded_table_without_refusals(device, monkeypatch):
    """A call's _Call (NumPy's loop, the shape, the plan) is made once per combination of operand types and
    layouts and kept per device (api._calls_of, least recently used dropped past MAX_CALLS); refusals are never
    kept, a weak scalar's value is checked on every call, and operands with no cheap summary (lists) are
    prepared every time."""
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)
    calls = api._calls_of(fresh)
    resolved = []
    resolve = api.resolve
    monkeypatch.setattr(api, "resolve", lambda *args: resolved.append(args[-1]) or resolve(*args))
    monkeypatch.setattr(api, "MAX_CALLS", 2)
    for _ in range(2):
        for dtype in ("float32", "int8", "int16", "float16"):
            x = specials(dtype)
            assert_identical(gpuops.sign(x, device=fresh), numpy_sign(x))
            assert len(calls) <= 2
        with pytest.raises(gpuops.ValidationError, match=r"a \(float64\), b=2 \(Python int\): NumPy computes in float64"):
            gpuops.modulus_floor(np.ones(4), 2, device=fresh)
    assert len(resolved) == 10  # the table holds two: each dtype is prepared again on the second round
    resolved.clear()
    a = np.int8([7, -7])
    for _ in range(3):
        assert_identical(gpuops.modulus_floor(a, 3, device=fresh), np.remainder(a, 3))
    assert len(resolved) == 1 and len(calls) == 2
    with pytest.raises(gpuops.ValidationError, match="b=300 does not fit int8"):
        gpuops.modulus_floor(a, 300, device=fresh)  # the same key: the value is checked all the same
    on_device = gpuops.asarray(a, fresh)
    assert_identical(gpuops.modulus_floor(on_device, 3).numpy(), np.remainder(a, 3))
    with pytest.raises(gpuops.ValidationError, match=r"b=300 does not fit int8, .* for a \(int8\), b=300"):
        gpuops.modulus_floor(on_device, 300)  # a device array beside it is named, not converted
    out = np.empty(2, np.int8)
    gpuops.modulus_floor(a, 3, out=out, device=fresh)
    out.flags.writeable = False  # the same layout, read-only: another key, refused
    with pytest.raises(gpuops.ValidationError, match="out is read-only"):
        gpuops.modulus_floor(a, 3, out=out, device=fresh)
    resolved.clear()
    for _ in range(2):
        assert_identical(gpuops.modulus_floor([7, -7, 5], np.int16(3), device=fresh),
                         np.remainder([7, -7, 5], np.int16(3)))
    assert len(resolved) == 2


def test_host_calls_reuse_pooled_buffers(device):
    """Repeated host calls of a few sizes make no new buffers once their size classes are pooled, and a caller's
    out= receives the result straight from the mapped staging buffer."""
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (5, 300, 301, 4000)]
    for x in arrays:
        gpuops.sign(x, device=fresh)
    made = pool.pool_of(fresh).stats().created
    for _ in range(20):
        for x in arrays:
            out = np.empty_like(x)
            assert gpuops.sign(x, out=out, device=fresh) is out
            assert_identical(out, numpy_sign(x))
    assert pool.pool_of(fresh).stats().created == made


def test_calls_run_through_wgpu_pys_public_maps_where_its_internals_are_missing(device):
    """The fallback of a wgpu-py without the internals gpuops uses (gpuops/wgpu_internals.py): wgpu-py's own
    map_async and promises, for read-backs, large uploads and synchronize."""
    fresh = device_with(device)
    fresh.host_access = wgpu_internals.public_access(fresh.wgpu)
    x = specials("float16")
    assert_identical(gpuops.sign(x, device=fresh), numpy_sign(x))
    assert_identical(gpuops.is_nan(x, device=fresh), np.isnan(x))
    base = specials("float32")
    big = np.tile(base, pool.MAPPED_UPLOAD_BYTES // base.nbytes + 1)
    assert_identical(gpuops.sign(big, device=fresh), numpy_sign(big))
    on_device = gpuops.sign(gpuops.asarray(x, fresh))
    fresh.synchronize()
    assert_identical(on_device.numpy(), numpy_sign(x))


def test_large_read_backs_copy_on_several_threads_exactly(device, monkeypatch):
    """Past PARALLEL_COPY_BYTES the read-back's copy runs in parts on several threads: forced here on small
    arrays, every layout's result is still NumPy's, element for element (a new array, a strided out=, a reversed
    input, a device array's read-back)."""
    from gpuops import hostcopy

    monkeypatch.setattr(hostcopy, "PARALLEL_COPY_BYTES", 64)
    monkeypatch.setattr(hostcopy, "PART_BYTES", 32)
    monkeypatch.setattr(hostcopy, "COPY_THREADS", 3)
    parts = []
    real_copyto = np.copyto
    monkeypatch.setattr(hostcopy.np, "copyto", lambda target, source: parts.append(target.size)
                        or real_copyto(target, source))
    x = np.random.default_rng(7).standard_normal((37, 41)).astype(np.float32)
    x[0, :4] = [np.nan, -0.0, np.inf, -np.inf]
    assert_identical(gpuops.sign(x, device=device), numpy_sign(x))
    assert len(parts) == 3 and sum(parts) == x.size
    out = np.zeros((37, 82), np.float32)
    gpuops.sign(x, out=out[:, ::2], device=device)
    assert_identical(out[:, ::2], numpy_sign(x)) and not out[:, 1::2].any()
    assert_identical(gpuops.sign(x[::-1, ::-1], device=device), numpy_sign(x[::-1, ::-1]))
    assert_identical(gpuops.asarray(x, device=device).numpy(), x)
    assert_identical(gpuops.is_nan(x, device=device), np.isnan(x))


def test_large_uploads_copy_on_several_threads_exactly(device, monkeypatch):
    """Past PARALLEL_COPY_BYTES a mapped upload's copy runs in parts on several threads too: forced here on small
    inputs (whole words and not), both inputs of a modulus arrive whole, byte for byte."""
    from gpuops import hostcopy

    monkeypatch.setattr(pool, "MAPPED_UPLOAD_BYTES", 64)
    monkeypatch.setattr(hostcopy, "PARALLEL_COPY_BYTES", 64)
    monkeypatch.setattr(hostcopy, "PART_BYTES", 32)
    monkeypatch.setattr(hostcopy, "COPY_THREADS", 3)
    writes = []
    real_fill_upload = pool.fill_upload
    monkeypatch.setattr(api, "fill_upload", lambda device, pool_, data, what: writes.append(data.nbytes)
                        or real_fill_upload(device, pool_, data, what))
    parts = []
    real_copyto = np.copyto
    monkeypatch.setattr(hostcopy.np, "copyto", lambda target, source: parts.append(target.nbytes)
                        or real_copyto(target, source))
    rng = np.random.default_rng(11)
    for n in (4099, 300):  # float16 inputs of 8198 and 600 bytes
        a = (rng.standard_normal(n) * 100).astype(np.float16)
        b = (rng.standard_normal(n) * 10).astype(np.float16)
        b[b == 0] = 1
        writes.clear()
        parts.clear()
        got = gpuops.modulus_floor(a, b, device=device)
        with np.errstate(all="ignore"):
            assert_identical(got, np.remainder(a, b))
        assert writes == [a.nbytes, b.nbytes]
        assert len(parts) == 3 * 3 and sum(parts) == a.nbytes + b.nbytes + got.nbytes


def test_copy_threads_come_from_the_environment():
    import subprocess
    import sys

    def threads(value: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from gpuops import hostcopy; print(hostcopy.COPY_THREADS)"],
                              env={**os.environ, "GPUOPS_COPY_THREADS": value}, capture_output=True, text=True)

    assert threads("3").stdout.strip() == "3"
    refused = threads("0")
    assert refused.returncode != 0 and "GPUOPS_COPY_THREADS='0' is not a positive number of threads" in refused.stderr


# Host calls larger than a piece (api._piece_bytes) run in pieces of the result: forced here on small arrays by a
# small DispatchPolicy.stream_bytes, every layout's result is NumPy's bit for bit.

def _operands(dtype: str, shape: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Values of `dtype` with its special values mixed in, and nonzero divisors."""
    rng = np.random.default_rng(seed)
    values = np.resize(specials(dtype), int(np.prod(shape)))
    if np.dtype(dtype).kind == "f":
        a = np.where(rng.random(values.size) < 0.5, values, (rng.standard_normal(values.size) * 100).astype(dtype))
        b = (rng.standard_normal(values.size) * 10).astype(dtype)
    else:
        info = np.iinfo(dtype)
        a = np.where(rng.random(values.size) < 0.5, values, rng.integers(info.min, info.max, values.size, dtype))
        b = rng.integers(info.min, info.max, values.size, dtype=dtype)
    b[b == 0] = 1
    return a.astype(dtype).reshape(shape), b.reshape(shape)


def _pieces_run(device, monkeypatch) -> list[int]:
    """Counts the calls started (a streamed call starts one per piece)."""
    started = []
    start = api._start
    monkeypatch.setattr(api, "_start", lambda *args: started.append(1) or start(*args))
    return started


STREAMED_LAYOUTS = {
    "packed": lambda a, b: (a, b),
    "transposed": lambda a, b: (a.T, b.T),
    "broadcast row": lambda a, b: (a, b[:1]),
    "broadcast column": lambda a, b: (a[:, :1], b),
    "strided": lambda a, b: (a[:, ::3], b[:, 1::3]),
    "reversed": lambda a, b: (a[::-1], b),
    "mixed orders": lambda a, b: (a, np.asfortranarray(b)),
}


STREAMED_TYPES = ["float16", "float32", "int8", "int64", "uint64", "int16", "uint32"]  # one per layout, in turn


@pytest.mark.parametrize("layout, dtype", list(zip(sorted(STREAMED_LAYOUTS), STREAMED_TYPES)))
def test_calls_larger_than_a_piece_run_in_pieces_exactly(device, monkeypatch, layout, dtype):
    streamed = device_with(device, stream_bytes=1024)
    a, b = STREAMED_LAYOUTS[layout](*_operands(dtype, (24, 150), seed=len(layout)))
    started = _pieces_run(streamed, monkeypatch)
    with np.errstate(all="ignore"):
        assert_identical(gpuops.modulus_floor(a, b, device=streamed), np.remainder(a, b))
        assert_identical(gpuops.modulus_truncate(a, b, device=streamed), np.fmod(a, b))
    assert_identical(gpuops.sign(a, device=streamed), numpy_sign(a))
    calls = 3
    if dtype in FLOATS:
        assert_identical(gpuops.is_nan(a, device=streamed), np.isnan(a))
        assert_identical(gpuops.is_infinity(b, "negative", device=streamed), np.isneginf(b))
        calls += 2
    assert len(started) >= 2 * calls  # each call ran in pieces


def test_pieces_into_out_touch_nothing_else(device):
    """out= a strided window of a larger array: the pieces write their elements only (canaries around and between
    stay), in place (out= the input itself) and with out= overlapping an input in another layout (copied first)."""
    streamed = device_with(device, stream_bytes=4096)
    a, b = _operands("int32", (50, 400), seed=3)
    canvas = np.full((52, 800), 0x5A5A5A5A, np.int32)
    out = canvas[1:-1, ::2]
    gpuops.modulus_floor(a, b, out=out, device=streamed)
    assert_identical(out, np.remainder(a, b))
    assert (canvas[0] == 0x5A5A5A5A).all() and (canvas[-1] == 0x5A5A5A5A).all()
    assert (canvas[1:-1, 1::2] == 0x5A5A5A5A).all()
    x = a.copy()
    assert gpuops.sign(x, out=x, device=streamed) is x
    assert_identical(x, np.sign(a))
    x = a.copy()
    with np.errstate(all="ignore"):
        gpuops.modulus_floor(x[::-1], x, out=x, device=streamed)  # out is the first operand, reversed
        assert_identical(x, np.remainder(a[::-1], a))
    mask = np.zeros(a.shape, np.bool_)
    f = _operands("float32", (50, 400), seed=4)[0]
    gpuops.is_nan(f, out=mask, device=streamed)
    assert_identical(mask, np.isnan(f))


def test_pieces_fit_the_largest_buffer_and_device_arrays_do_not_stream(device):
    """Host arrays larger than the device's largest buffer run in pieces that fit it; a device array cannot be
    larger than one buffer, and asking for one says so."""
    small = device_with(device, max_buffer_size=1 << 18)
    a, b = _operands("float32", (1 << 18,), seed=9)  # 1 MiB each
    assert api._piece_bytes(small) <= ((1 << 18) - api.GATHER_SLACK_BYTES) // 2
    with np.errstate(all="ignore"):
        assert_identical(gpuops.modulus_floor(a, b, device=small), np.remainder(a, b))
    with pytest.raises(gpuops.DeviceError, match=r"^gpuops.asarray: a buffer of 1048576 bytes is needed; the adapter "
                                                 r".* holds at most 262144 bytes in one buffer$"):
        gpuops.asarray(a, small)


def test_pieces_follow_the_memory_order():
    assert list(api._pieces((10,), (4,), 4)) == [(slice(0, 4),), (slice(4, 8),), (slice(8, 10),)]
    c_order = list(api._pieces((3, 5, 7), (140, 28, 4), 20))  # rows of 7 fit twice: runs of 2 rows per plane
    assert c_order[:3] == [(slice(0, 1), slice(0, 2), slice(None)), (slice(0, 1), slice(2, 4), slice(None)),
                           (slice(0, 1), slice(4, 5), slice(None))] and len(c_order) == 9
    f_order = list(api._pieces((6, 4), (4, 24), 12))  # column-major: whole columns, two at a time
    assert f_order == [(slice(None), slice(0, 2)), (slice(None), slice(2, 4))]
    assert list(api._pieces((3, 5), (20, 4), 1)) == [
        (slice(i, i + 1), slice(j, j + 1)) for i in range(3) for j in range(5)]


def test_a_host_array_over_two_gib_runs(device):
    """A host array larger than the adapter's largest buffer (2 GiB - 1 byte on the software adapters) runs
    through pooled buffers of a piece each: uint64, the widest type, for the fewest elements past 2^31 bytes."""
    n = (1 << 28) + 1  # 2 GiB + 8 bytes
    assert n * 8 > device.max_buffer_size or device.max_buffer_size > (1 << 31)
    x = np.zeros(n, np.uint64)
    x[::3] = 7
    x[-1] = np.iinfo(np.uint64).max
    got = gpuops.sign(x, device=device)
    assert got.dtype == np.uint64 and got.shape == (n,)
    step = 1 << 24
    for start in range(0, n, step):  # checked in parts: no second 2 GiB temporary
        assert np.array_equal(got[start:start + step], np.sign(x[start:start + step])), start
