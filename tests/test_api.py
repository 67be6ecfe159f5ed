"""The NumPy-level API and the Device: what users call, and every refusal they can trigger."""

import numpy as np
import pytest

import gpuops
from gpuops import DataType, FeatureLevel, SignDesc, TensorDesc

from .reference import assert_same_bits


def test_device_reports_its_adapter(device):
    assert device.adapter_name
    assert device.feature_level == FeatureLevel.LEVEL_6_4
    assert gpuops.default_device() is gpuops.default_device()  # created once, reused


def test_backends(device, monkeypatch):
    assert device.backend in gpuops.backends.installed_backends()
    with pytest.raises(gpuops.ValidationError, match="backend 'vulkan-direct' is unknown; allowed: wgpu-native, dawn"):
        gpuops.Device(backend="vulkan-direct")
    monkeypatch.setenv("GPUOPS_BACKEND", device.backend)
    assert gpuops.Device().backend == device.backend
    assert gpuops.Device(wgpu_device=device.wgpu_device).backend == device.backend


def test_unknown_adapter_is_refused_with_the_list():
    with pytest.raises(gpuops.DeviceError, match="no adapter matches 'no-such-gpu'; adapters: "):
        gpuops.Device(adapter="no-such-gpu")


def test_adapter_by_name(device):
    name = device.adapter.info["device"].split()[0]
    other = gpuops.Device(adapter=name)
    assert other.adapter.info["device"] == device.adapter.info["device"]
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    assert gpuops.sign(x, device=other).tolist() == [-1.0, 0.0, 1.0]


def test_wrapping_a_callers_wgpu_device(device):
    wrapped = gpuops.Device(wgpu_device=device.wgpu_device)
    assert wrapped.wgpu_device is device.wgpu_device
    assert gpuops.is_nan(np.array([np.nan, 1], np.float16), device=wrapped).tolist() == [True, False]


def test_runtime_checks_left_out_by_default_and_kept_on_request(device, monkeypatch):
    monkeypatch.delenv("GPUOPS_RUNTIME_CHECKS", raising=False)
    assert gpuops.Device(backend=device.backend).runtime_checks is False
    checked = gpuops.Device(backend=device.backend, runtime_checks=True)
    assert checked.runtime_checks is True
    monkeypatch.setenv("GPUOPS_RUNTIME_CHECKS", "1")
    assert gpuops.Device(backend=device.backend).runtime_checks is True
    monkeypatch.setenv("GPUOPS_RUNTIME_CHECKS", "0")
    unchecked = gpuops.Device(backend=device.backend)
    assert unchecked.runtime_checks is False
    # What the checks guard, run both ways: int8's table in workgroup memory, float16's loop for large quotients,
    # a broadcast operand's rows.
    rng = np.random.default_rng(7)
    int8 = np.arange(-128, 128, dtype=np.int8)
    halves = rng.integers(0, 0x7c00, 4096, dtype=np.uint16).view(np.float16)
    cases = [(int8[:, None], np.where(int8 == 0, 1, int8)[None, :]),
             (np.where(np.arange(4096) % 2, -halves, halves), halves[::-1] * np.float16(1e-4))]
    for a, b in cases:
        for run in (gpuops.modulus_floor, gpuops.modulus_truncate):
            with np.errstate(all="ignore"):  # x % 0 and NaN from halves: both report as NumPy does
                want = (np.remainder if run is gpuops.modulus_floor else np.fmod)(a, b)
                assert_same_bits(run(a, b, device=unchecked), want)
                assert_same_bits(run(a, b, device=checked), want)
    # A device made by the caller: wgpu-native's checks are per shader, so either way; Dawn's are its toggles.
    if device.backend == "dawn":
        assert gpuops.Device(wgpu_device=unchecked.wgpu_device).runtime_checks is False
        assert gpuops.Device(wgpu_device=checked.wgpu_device).runtime_checks is True
        with pytest.raises(gpuops.ValidationError, match=r"runtime_checks=True asked of a Dawn device made without "
                                                         r"them: its toggles decide \(disable_robustness"):
            gpuops.Device(wgpu_device=unchecked.wgpu_device, runtime_checks=True)
    else:
        assert gpuops.Device(wgpu_device=unchecked.wgpu_device, runtime_checks=True).runtime_checks is True


def test_runtime_checks_refusals(monkeypatch):
    monkeypatch.delenv("GPUOPS_RUNTIME_CHECKS", raising=False)
    with pytest.raises(gpuops.ValidationError, match="runtime_checks must be True, False or None, not 'no'"):
        gpuops.Device(runtime_checks="no")
    monkeypatch.setenv("GPUOPS_RUNTIME_CHECKS", "off")
    with pytest.raises(gpuops.ValidationError, match=r"GPUOPS_RUNTIME_CHECKS='off': allowed '0' .* or '1'"):
        gpuops.Device()
    monkeypatch.delenv("GPUOPS_RUNTIME_CHECKS")
    # A wgpu-py whose internals no longer reach wgpu-native's trusted shader modules: kept by default, refused
    # when asked to leave them out.
    monkeypatch.setattr(gpuops.wgpu_internals, "_trusted_entry", lambda: None)
    assert gpuops.Device(backend="wgpu-native").runtime_checks is True
    with pytest.raises(gpuops.DeviceError, match=r"runtime_checks=False needs wgpu-native's trusted shader modules"):
        gpuops.Device(backend="wgpu-native", runtime_checks=False)


def test_compile_validates_and_caches(device):
    desc = SignDesc(TensorDesc(DataType.INT64, (4,)), TensorDesc(DataType.INT64, (4,)))
    assert device.compile(desc) is device.compile(SignDesc(TensorDesc("INT64", [4]), TensorDesc("INT64", [4])))
    with pytest.raises(gpuops.ValidationError, match=r"SignDesc.input_tensor.data_type: INT64 .* 4_0"):
        device.compile(desc, feature_level="4.0")
    old = gpuops.Device(feature_level=FeatureLevel.LEVEL_4_0, wgpu_device=device.wgpu_device)
    with pytest.raises(gpuops.ValidationError):
        old.compile(desc)
    device.compile(desc, feature_level="4_1")


@pytest.mark.parametrize("dtype, refusal", [
    (np.float64, r"x \(float64\): NumPy computes in float64; gpuops computes sign at feature level 6_4 in float16, "
                 r"float32, int8, int16, int32, int64, uint8, uint16, uint32, uint64 and does not cast \(convert the "
                 r"operands with astype if a narrower type is meant\)$"),
    (np.bool_, r"x \(bool\): DirectML has no boolean tensors"),
    (np.complex64, r"NumPy computes in complex64; .* uint64 and does not cast$"),  # no narrower complex type
    (np.dtype("U3"), "NumPy has no sign for x \\(<U3\\)"),
])
def test_unsupported_dtypes_are_refused(device, dtype, refusal):
    x = np.zeros(3, dtype)
    with pytest.raises(gpuops.ValidationError, match=r"gpuops.sign: .*" + refusal):
        gpuops.sign(x, device=device)


def test_byte_swapped_input_gives_numpys_native_result(device):
    x = np.array([-2.0, 0.0, 3.0], ">f4")
    got = gpuops.sign(x, device=device)
    assert got.dtype == np.sign(x).dtype == np.float32 and got.tolist() == [-1.0, 0.0, 1.0]


def test_is_nan_refuses_integers(device):
    """No astype advice: no narrower type of the integers' kind would do."""
    with pytest.raises(gpuops.ValidationError, match=r"x \(int8\): NumPy computes in int8; gpuops computes is_nan at "
                                                     r"feature level 6_4 in float16, float32 and does not cast$"):
        gpuops.is_nan(np.arange(3, dtype=np.int8), device=device)


def test_type_lists_go_by_kind_and_width():
    desc = SignDesc(TensorDesc(DataType.FLOAT64, (4,)), TensorDesc(DataType.FLOAT64, (4,)))
    with pytest.raises(gpuops.ValidationError, match="FLOAT64 is not supported at feature level 6_4; allowed: FLOAT16, "
                                                     "FLOAT32, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64$"):
        gpuops.validate(desc)


def test_mixed_dtypes_promote_as_numpy_does(device):
    a, b = np.arange(-3, 3, dtype=np.int32), np.arange(1, 7, dtype=np.int64)
    assert_same_bits(gpuops.modulus_floor(a, b, device=device), np.remainder(a, b))
    with pytest.raises(gpuops.ValidationError, match=r"a \(int32\), b \(float32\): NumPy computes in float64"):
        gpuops.modulus_floor(a, b.astype(np.float32), device=device)


def test_shapes_that_cannot_broadcast(device):
    with pytest.raises(gpuops.ValidationError, match=r"shapes a \(3,\) and b \(4,\) cannot be broadcast"):
        gpuops.modulus_truncate(np.ones(3, np.float32), np.ones(4, np.float32), device=device)


def test_python_scalars_take_the_arrays_dtype(device):
    a = np.array([-7, 7, -128], np.int8)
    assert_same_bits(gpuops.modulus_floor(a, 3, device=device), np.remainder(a, np.int8(3)))
    assert_same_bits(gpuops.modulus_floor(100, a, device=device), np.remainder(np.int8(100), a))
    with pytest.raises(gpuops.ValidationError, match="does not fit int8"):
        gpuops.modulus_floor(a, 300, device=device)


def test_zero_dimensional_and_empty(device):
    x = np.float32(-3.5)
    got = gpuops.sign(x, device=device)
    assert type(got) is np.float32 and got == -1  # a NumPy scalar, as np.sign gives
    empty = gpuops.modulus_floor(np.zeros((0, 3), np.int16), np.ones(3, np.int16), device=device)
    assert empty.shape == (0, 3) and empty.dtype == np.int16


def test_many_dimensions_merge_when_contiguous(device):
    x = np.arange(-6, 6, dtype=np.int32).reshape((2, 1, 3, 1, 2, 1, 1, 1, 1, 1))  # 10-D, merges to 1-D
    assert_same_bits(gpuops.sign(x, device=device), np.sign(x))
    scattered = np.arange(2**9, dtype=np.int16).reshape((2,) * 9).transpose(8, 0, 7, 1, 6, 2, 5, 3, 4)
    assert_same_bits(gpuops.sign(scattered, device=device), np.sign(scattered))  # reordered, then merged
    unmergeable = np.zeros((3,) * 9, np.int8)[(slice(0, 2),) * 9]  # padding after every dimension
    with pytest.raises(gpuops.ValidationError, match="needs 9 dimensions"):
        gpuops.sign(unmergeable, device=device)


def test_out_argument(device):
    a = np.array([5, -5], np.int32)
    out = np.empty(2, np.int32)
    assert gpuops.modulus_floor(a, 3, out=out, device=device) is out
    assert out.tolist() == [2, 1]
    wide = np.empty(2, np.int64)  # converted as NumPy converts it (tests/test_ufunc_contract.py: every dtype)
    assert gpuops.modulus_floor(a, 3, out=wide, device=device) is wide and wide.tolist() == [2, 1]
    with pytest.raises(gpuops.CastingError, match="Cannot cast ufunc 'remainder' output from dtype"):
        gpuops.modulus_floor(a, 3, out=np.empty(2, np.int16), casting="safe", device=device)
    with pytest.raises(gpuops.ValidationError, match=r"shape \(3,\)"):
        gpuops.sign(a, out=np.empty(3, np.int32), device=device)


def test_infinity_modes(device):
    x = np.array([np.inf, -np.inf, np.nan, 1], np.float32)
    assert gpuops.is_infinity(x, device=device).dtype == np.bool_
    assert gpuops.is_infinity(x, device=device).tolist() == [True, True, False, False]
    assert gpuops.is_infinity(x, "positive", device=device).tolist() == [True, False, False, False]
    assert gpuops.is_infinity(x, mode=gpuops.IsInfinityMode.NEGATIVE, device=device).tolist() == \
        [False, True, False, False]
    with pytest.raises(gpuops.ValidationError, match="mode 'sideways'"):
        gpuops.is_infinity(x, "sideways", device=device)


def test_old_feature_levels_run_four_dimensional(device):
    x = np.array([[-1.5, 0.0], [2.0, np.nan]], np.float16)
    assert_same_bits(gpuops.sign(x, device=device, feature_level="2.0"), np.array([[-1, 0], [1, 0]], np.float16))
    with pytest.raises(gpuops.ValidationError, match="at feature level 2_0 in float16, float32 and does not cast"):
        gpuops.sign(np.arange(3, dtype=np.int32), device=device, feature_level="2.0")
    with pytest.raises(gpuops.ValidationError, match="does not exist"):
        gpuops.modulus_floor(x, x, device=device, feature_level="2.0")


def test_output_follows_the_inputs_memory_order(device):
    """Like NumPy's order='K': a transposed input gives a transposed (F-ordered) result, one contiguous pass."""
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    got = gpuops.sign(x.T, device=device)
    assert got.flags.f_contiguous and got.flags.writeable
    assert_same_bits(got, np.sign(x.T))
    assert np.sign(x.T).flags.f_contiguous


def _grid(*shape: int) -> np.ndarray:
    return np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)


ORDER_CASES = {  # (a, b) of every kind of order agreement, with broadcast operands
    "row-broadcast": lambda: (_grid(3, 5), _grid(5)),
    "column-broadcast": lambda: (_grid(5, 1), _grid(5, 3)),
    "transposed-and-row": lambda: (_grid(5, 4).T, _grid(5)),
    "transposed-and-column": lambda: (_grid(5, 4).T, _grid(4, 1)),
    "transposed-and-packed": lambda: (_grid(5, 4).T, _grid(4, 5)),
    "both-transposed": lambda: (_grid(5, 4).T, _grid(5, 4).T),
    "3-d-middle-broadcast": lambda: (_grid(4, 1, 3), _grid(2, 3)),
    "3-d-reversed-order": lambda: (_grid(4, 3, 2).transpose(2, 1, 0), _grid(3, 1)),
}


@pytest.mark.parametrize("case", list(ORDER_CASES))
def test_output_order_is_numpys_with_broadcast_inputs(device, case):
    """Broadcast inputs (zero strides) have no say in the order, and disagreement keeps C order, as in NumPy: a
    row broadcast over rows gives a C-ordered result, not a column-major one."""
    a, b = ORDER_CASES[case]()
    expected = np.remainder(a, b)
    got = gpuops.modulus_floor(a, b, device=device)
    assert got.strides == expected.strides
    assert_same_bits(got, expected)
    for x in (np.broadcast_to(a, expected.shape), np.broadcast_to(b, expected.shape)):
        assert gpuops.sign(x, device=device).strides == np.sign(x).strides
