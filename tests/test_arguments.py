"""Arguments are checked where they enter: a wrong type or value is refused there, with a gpuops error (or a
TypeError) that names the field and the value as the caller wrote it; never an AttributeError, KeyError or
OverflowError from deep inside. Bools are not integers; sizes and offsets are integers, NumPy ones included."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
import wgpu
from hypothesis import given
from hypothesis import strategies as st

import gpuops
from gpuops import (Binding, DataType, DeviceError, FeatureLevel, GpuOpsError, IsInfinityDesc, IsInfinityMode,
                    IsNanDesc, ModulusFloorDesc, SignDesc, TensorDesc, ValidationError, validate)
from gpuops.adapter_choice import check_wgpu_device, compute_shader_problem, pick_adapter
from gpuops.enums import integer_value
from gpuops.errors import shown
from gpuops.operators import OPERATORS

from .reference import valid_tensors

T = DataType
F32 = TensorDesc(T.FLOAT32, (2, 3))
U8 = TensorDesc(T.UINT8, (2, 3))
SPECS = {spec.desc_type: spec for spec in OPERATORS}  # description class -> its row
DESCS = {cls: valid_tensors(spec) for cls, spec in SPECS.items()}  # class -> valid tensor keyword arguments


class BrokenRepr:
    def __repr__(self):
        raise RuntimeError("a repr that fails")


class Indexable:
    """Not an int, but usable as one (operator.index): accepted like NumPy integers."""

    def __index__(self):
        return 16


# What callers get wrong: every Python kind of value, the numeric edges, NumPy scalars and arrays.
WRONG = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.binary(max_size=4), st.integers(-2**80, -1), st.integers(2**31, 2**80), st.integers(0, 20),
    st.complex_numbers(max_magnitude=10),
    st.lists(st.one_of(st.integers(-5, 5), st.booleans(), st.floats(-4, 4), st.none(), st.text(max_size=2)),
             max_size=5),
    st.tuples(st.booleans(), st.integers(1, 4)),
    st.dictionaries(st.text(max_size=2), st.integers(0, 3), max_size=2), st.frozensets(st.integers(0, 3), max_size=3),
    st.sampled_from([np.int64(-16), np.uint64(2**64 - 1), np.int8(3), np.float32(16.0), np.float64(1.5), np.True_,
                     np.bool_(False), np.array([2, 3]), np.array(4), np.array(2.5), np.array([]), np.nan,
                     object(), BrokenRepr(), Indexable(), type, int, T.FLOAT32, FeatureLevel.LEVEL_6_4,
                     IsInfinityMode.NEGATIVE, range(3), F32, SignDesc(F32, F32), wgpu]),
)


def entered(call, field: str, value):
    """Run `call`; a refusal must be a gpuops error naming `field` and the value as written, or a TypeError."""
    try:
        return call()
    except GpuOpsError as err:
        message = str(err)
        assert field in message, f"{field!r} not named in {message!r}"
        assert shown(value) in message, f"{shown(value)!r} not in {message!r}"
        return None
    except TypeError:
        return None


def survives(call) -> None:
    """Run `call`: a refusal must be a gpuops error or a TypeError."""
    try:
        call()
    except (GpuOpsError, TypeError):
        pass


# ---------------------------------------------------------------------------------------------------------------
# The argument fuzz: any other exception fails the test
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def buffer():
    return gpuops.default_device().wgpu_device.create_buffer(size=256, usage=wgpu.BufferUsage.STORAGE)


@given(value=WRONG)
def test_fuzz_binding(buffer, value):
    entered(lambda: Binding(value), "Binding.buffer", value)
    for field in ("offset", "size"):
        binding = entered(lambda: Binding(buffer, **{field: value}), f"Binding.{field}", value)
        if binding is not None:  # accepted: an exact Python int (or None for size), never a bool
            kept = getattr(binding, field)
            assert (kept is None and field == "size") or (type(kept) is int and kept >= 0)
            assert hash(binding) == hash(dataclasses.replace(binding))


TENSOR_ARGUMENTS = {  # field -> how a wrong value is placed in an otherwise valid TensorDesc
    "data_type": lambda v: dict(data_type=v, sizes=(2,)),
    "sizes": lambda v: dict(data_type=T.FLOAT32, sizes=v),
    "sizes[1]": lambda v: dict(data_type=T.FLOAT32, sizes=(2, v)),
    "strides": lambda v: dict(data_type=T.FLOAT32, sizes=(2,), strides=v),
    "strides[0]": lambda v: dict(data_type=T.FLOAT32, sizes=(2,), strides=(v,)),
    "total_tensor_size_in_bytes": lambda v: dict(data_type=T.FLOAT32, sizes=(2,), total_tensor_size_in_bytes=v),
    "guaranteed_base_offset_alignment": lambda v: dict(data_type=T.FLOAT32, sizes=(2,),
                                                       guaranteed_base_offset_alignment=v),
    "flags": lambda v: dict(data_type=T.FLOAT32, sizes=(2,), flags=v),
}


@given(value=WRONG)
def test_fuzz_tensor_desc(value):
    for field, arguments in TENSOR_ARGUMENTS.items():
        # An entry (sizes[1]) is named by its index; the message quotes the whole sequence as written.
        named, quoted = field.partition("[")[0], value if "[" not in field else arguments(value)[field[:-3]]
        tensor = entered(lambda: TensorDesc(**arguments(value)), f"TensorDesc.{named}", quoted)
        if tensor is not None:
            assert type(tensor.data_type) is DataType
            assert all(type(n) is int for n in tensor.sizes + (tensor.strides or ()))
            hash(tensor)
            survives(lambda: validate(SignDesc(tensor, tensor)))


@given(value=WRONG)
def test_fuzz_operator_descriptions(value):
    for cls, kwargs in DESCS.items():
        fields = list(kwargs) + [attribute.name for attribute in SPECS[cls].attributes]
        for field in fields:
            desc = entered(lambda: cls(**{**kwargs, field: value}), f"{cls.__name__}.{field}", value)
            if desc is not None:
                hash(desc)
                survives(lambda: validate(desc))


@given(value=WRONG)
def test_fuzz_parsers(value):
    entered(lambda: FeatureLevel.parse(value), "feature level", value)
    entered(lambda: IsInfinityMode.parse(value), "infinity mode", value)
    entered(lambda: DataType.parse(value), "data type", value)
    entered(lambda: validate(SignDesc(F32, F32), value), "feature_level", value)


@given(value=WRONG)
def test_fuzz_adapter_names_and_wgpu_devices(value):
    backend = fake_backend(recommended=VULKAN, adapters=[VULKAN, LLVMPIPE_GL])
    index = integer_value(value) if not isinstance(value, str) else None
    if isinstance(value, str) or (index is not None and index >= 0):  # a name or an index: the adapters there are
        survives(lambda: pick_adapter(backend, value))
    else:
        entered(lambda: pick_adapter(backend, value), "Device.adapter", value)
    entered(lambda: check_wgpu_device(value), "Device.wgpu_device", value)


HUGE = st.integers(-2**70, 2**70) | st.integers(2**62, 2**66)


@given(data=st.data())
def test_fuzz_validate_wild_integers(data):
    """Integers of any size are accepted at construction and refused (or accepted) by validate, exactly."""
    sizes = data.draw(st.lists(st.integers(1, 3) | HUGE, max_size=5))
    strides = data.draw(st.none() | st.lists(st.integers(0, 3) | HUGE, min_size=len(sizes), max_size=len(sizes))
                        | st.lists(HUGE, max_size=5))
    tensor = TensorDesc(T.FLOAT32, sizes, strides, data.draw(st.none() | HUGE), data.draw(st.just(0) | HUGE),
                        data.draw(st.integers(0, 2**70)))
    for desc in (SignDesc(tensor, tensor), IsNanDesc(tensor, tensor)):
        try:
            validate(desc)
        except ValidationError:
            pass


@pytest.mark.parametrize("strides, distinct", [((2**62, 2**62 + 1), True), ((10**30, 10**30), False),
                                               ((10**30, 10**30 + 1), True), ((2**63, 1), True)])
def test_output_overlap_of_strides_past_int64_is_exact(strides, distinct):
    out = TensorDesc(T.FLOAT32, (2, 2), strides)
    desc = SignDesc(TensorDesc(T.FLOAT32, (2, 2)), out)
    if distinct:
        validate(desc)
    else:
        with pytest.raises(ValidationError, match=r"SignDesc\.output_tensor\.strides: .* the same address"):
            validate(desc)


# ---------------------------------------------------------------------------------------------------------------
# Binding
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("size", 16.5), ("size", "16"), ("size", True), ("size", -1),
                                          ("size", np.float64(16)), ("offset", 16.0), ("offset", "0"),
                                          ("offset", False), ("offset", -16), ("offset", None),
                                          ("offset", np.int64(-16))])
def test_binding_refuses_non_integers(buffer, field, value):
    with pytest.raises(ValidationError) as info:
        Binding(buffer, **{field: value})
    assert str(info.value).startswith(f"Binding.{field}: {value!r};"), str(info.value)
    assert "allowed" in str(info.value)


@pytest.mark.parametrize("value", [None, 123, "buffer", np.zeros(4), Binding, wgpu.GPUBuffer])
def test_binding_refuses_what_is_not_a_wgpu_buffer(value):
    with pytest.raises(ValidationError) as info:
        Binding(value)
    message = str(info.value)
    assert message.startswith(f"Binding.buffer: {shown(value)} ({type(value).__name__}) is not a GPUBuffer")
    assert "wgpu or wgpudawn" in message


def test_binding_accepts_numpy_integers_as_python_ints(buffer):
    binding = Binding(buffer, np.int64(16), np.uint32(32))
    assert (binding.offset, binding.size) == (16, 32)
    assert type(binding.offset) is int and type(binding.size) is int
    assert Binding(buffer, Indexable()).offset == 16
    # Equal to, and hashed like, the same region written with Python ints (devices cache plans by bindings).
    plain = Binding(buffer, 16, 32)
    assert binding == plain and hash(binding) == hash(plain) and {plain: 1}[binding] == 1
    assert binding != Binding(buffer, 16, 48) and binding != Binding(buffer, 32, 32)
    other = gpuops.default_device().wgpu_device.create_buffer(size=256, usage=wgpu.BufferUsage.STORAGE)
    assert binding != Binding(other, 16, 32)  # the buffer by identity
    with pytest.raises(dataclasses.FrozenInstanceError):
        binding.offset = 0
    assert Binding(buffer, 0, None).size is None and Binding(buffer, 0, 0).size == 0


def test_binding_with_numpy_offsets_runs(device):
    """A NumPy offset used to reach validation as np.int64 and be refused as "not a multiple of 16"."""
    data = np.array([-2.0, 0.0, 3.5, -0.0], np.float32)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    x = device.wgpu_device.create_buffer_with_data(data=np.concatenate([np.zeros(4, np.float32), data]), usage=usage)
    y = device.wgpu_device.create_buffer(size=48, usage=usage)
    tensor = TensorDesc(T.FLOAT32, (4,))
    offsets = np.array([16, 32], np.int64)
    device.compile(SignDesc(tensor, tensor)).execute({"input_tensor": Binding(x, offsets[0]),
                                                      "output_tensor": Binding(y, offsets[1], np.int32(16))})
    out = np.frombuffer(device.wgpu_device.queue.read_buffer(y), np.float32)[8:]
    assert out.tolist() == [-1.0, 0.0, 1.0, 0.0]


# ---------------------------------------------------------------------------------------------------------------
# TensorDesc
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, field, quoted", [
    (dict(data_type=True, sizes=(True, 4)), "TensorDesc.data_type", "True"),
    (dict(data_type=1.0, sizes=(4,)), "TensorDesc.data_type", "1.0"),
    (dict(data_type=np.float32(1), sizes=(4,)), "TensorDesc.data_type", repr(np.float32(1))),
    (dict(data_type=np.True_, sizes=(4,)), "TensorDesc.data_type", repr(np.True_)),
    (dict(data_type=T.FLOAT32, sizes=(True, 4)), "TensorDesc.sizes[0]", "(True, 4)"),
    (dict(data_type=T.FLOAT32, sizes=(2, 4.0)), "TensorDesc.sizes[1]", "(2, 4.0)"),
    (dict(data_type=T.FLOAT32, sizes=np.array([2.0, 3.0])), "TensorDesc.sizes[0]", "array([2., 3.])"),
    (dict(data_type=T.FLOAT32, sizes=(np.True_, 2)), "TensorDesc.sizes[0]", repr(np.True_)),
    (dict(data_type=T.FLOAT32, sizes={2: 1, 3: 1}), "TensorDesc.sizes", "{2: 1, 3: 1}"),
    (dict(data_type=T.FLOAT32, sizes={2, 3}), "TensorDesc.sizes", "{2, 3}"),
    (dict(data_type=T.FLOAT32, sizes=b"\x02\x03"), "TensorDesc.sizes", repr(b"\x02\x03")),
    (dict(data_type=T.FLOAT32, sizes=(2, 3), strides=(3, False)), "TensorDesc.strides[1]", "(3, False)"),
    (dict(data_type=T.FLOAT32, sizes=(2,), total_tensor_size_in_bytes=True), "TensorDesc.total_tensor_size_in_bytes",
     "True"),
    (dict(data_type=T.FLOAT32, sizes=(2,), guaranteed_base_offset_alignment=np.float64(16)),
     "TensorDesc.guaranteed_base_offset_alignment", repr(np.float64(16))),
    (dict(data_type=T.FLOAT32, sizes=(2,), flags=True), "TensorDesc.flags", "True"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_tensor_desc_refuses_bools_and_floats(kwargs, field, quoted):
    with pytest.raises(ValidationError) as info:
        TensorDesc(**kwargs)
    message = str(info.value)
    assert message.startswith(field + ":"), message
    assert quoted in message, message


def test_tensor_desc_data_type_message_lists_the_allowed_types():
    with pytest.raises(ValidationError) as info:
        TensorDesc(99, (4,))
    assert "99" in str(info.value) and "FLOAT32 (1)" in str(info.value) and "INT4 (13)" in str(info.value)


def test_tensor_desc_accepts_numpy_integers():
    tensor = TensorDesc(np.int64(1), (np.int32(2), np.uint8(3)), np.array([3, 1]), np.int64(24), np.int16(16),
                        np.uint8(1))
    assert tensor == TensorDesc(T.FLOAT32, (2, 3), (3, 1), 24, 16, 1)
    assert type(tensor.total_tensor_size_in_bytes) is int and type(tensor.guaranteed_base_offset_alignment) is int


def test_long_values_are_cut_short_in_messages():
    sizes = list(range(10_000)) + [0.5]
    with pytest.raises(ValidationError) as info:
        TensorDesc(T.FLOAT32, sizes)
    assert len(str(info.value)) < 300 and str(info.value).startswith("TensorDesc.sizes[10000]: 0.5 in [0, 1, 2")
    with pytest.raises(ValidationError, match=r"Binding.buffer: <BrokenRepr object> \(BrokenRepr\)"):
        Binding(BrokenRepr())


# ---------------------------------------------------------------------------------------------------------------
# Operator descriptions and enumerations
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [1.0, True, False, np.float64(2.0), np.True_, 0.0, [1], (1,)], ids=repr)
def test_infinity_mode_refuses_bools_and_floats(mode):
    with pytest.raises(ValidationError) as info:
        IsInfinityDesc(F32, U8, infinity_mode=mode)
    assert info.value.field == "IsInfinityDesc.infinity_mode"
    assert info.value.operator == "DML_OPERATOR_ELEMENT_WISE_IS_INFINITY"
    assert repr(mode) in str(info.value)
    with pytest.raises(ValidationError, match="allowed: EITHER"):
        IsInfinityMode.parse(mode)


def test_infinity_mode_accepts_numpy_integers():
    assert IsInfinityDesc(F32, U8, infinity_mode=np.int64(1)).infinity_mode is IsInfinityMode.POSITIVE
    assert IsInfinityMode.parse(np.uint8(2)) is IsInfinityMode.NEGATIVE


@pytest.mark.parametrize("cls", list(DESCS), ids=lambda c: c.__name__)
@pytest.mark.parametrize("bad", [[1], None, "FLOAT32", (2, 3), T.FLOAT32, 0], ids=repr)
def test_description_tensor_fields_refused_at_construction(cls, bad):
    for field in DESCS[cls]:
        with pytest.raises(ValidationError) as info:
            cls(**{**DESCS[cls], field: bad})
        err = info.value
        assert err.field == f"{cls.__name__}.{field}"
        assert err.operator == f"DML_OPERATOR_{SPECS[cls].name}"
        assert f"{repr(bad)} ({type(bad).__name__}) is not a TensorDesc" in str(err)
        with pytest.raises(ValidationError):
            dataclasses.replace(cls(**DESCS[cls]), **{field: bad})


def test_compile_of_a_list_tensor_is_a_validation_error(device):
    """It used to reach the compiled-operator cache and fail there with "unhashable type: 'list'"."""
    with pytest.raises(ValidationError, match=r"ModulusFloorDesc\.a_tensor: \[1\] \(list\) is not a TensorDesc"):
        device.compile(ModulusFloorDesc([1], F32, F32))


def test_feature_level_message_quotes_what_was_written():
    with pytest.raises(ValidationError) as info:
        FeatureLevel.parse("9.9")
    message = str(info.value)
    assert "'9.9'" in message and "39168" not in message
    assert all(level.label in message for level in FeatureLevel)
    with pytest.raises(ValidationError, match=r"4660 \(0x1234\)"):
        FeatureLevel.parse(0x1234)
    for bad in ("0xZZ", "0x", "６.４", "².1", "6.4\n.", " "):
        with pytest.raises(ValidationError, match="unknown feature level"):
            FeatureLevel.parse(bad)


@pytest.mark.parametrize("bad", [True, False, 6.4, 25600.0, np.float64(25600), np.True_, None, [0x6400], b"6.4"],
                         ids=repr)
def test_feature_level_refuses_bools_floats_and_other_types(bad):
    with pytest.raises(ValidationError, match="unknown feature level") as info:
        FeatureLevel.parse(bad)
    assert shown(bad) in str(info.value)
    with pytest.raises(ValidationError, match=r"^validate: feature_level: unknown feature level"):
        validate(SignDesc(F32, F32), bad)


def test_feature_level_accepts_numpy_integers():
    assert FeatureLevel.parse(np.int64(0x6400)) is FeatureLevel.LEVEL_6_4
    assert FeatureLevel.parse(np.uint16(0x2100)) is FeatureLevel.LEVEL_2_1
    assert FeatureLevel.parse("0x6400") is FeatureLevel.LEVEL_6_4


@pytest.mark.parametrize("bad", [True, 1.0, np.float32(1), b"FLOAT32", None, [1]], ids=repr)
def test_data_type_parse_refuses_bools_and_floats(bad):
    with pytest.raises(ValidationError, match="unknown data type"):
        DataType.parse(bad)
    assert DataType.parse(np.int8(6)) is T.INT32


# ---------------------------------------------------------------------------------------------------------------
# Adapters: names, compute-shader capability (fake adapters), the caller's wgpu device
# ---------------------------------------------------------------------------------------------------------------

GOOD_LIMITS = {"max-compute-invocations-per-workgroup": 1024, "max-compute-workgroup-size-x": 1024,
               "max-compute-workgroups-per-dimension": 65535, "max-storage-buffer-binding-size": 2**27}
NO_COMPUTE_LIMITS = {"max-compute-invocations-per-workgroup": 0, "max-compute-workgroup-size-x": 0,
                     "max-compute-workgroups-per-dimension": 0, "max-storage-buffer-binding-size": 0}


@dataclasses.dataclass(frozen=True)
class FakeAdapter:
    device: str
    backend_type: str
    adapter_type: str
    description: str
    limits: dict = dataclasses.field(default_factory=lambda: dict(GOOD_LIMITS), hash=False)

    @property
    def info(self) -> dict:
        return {"device": self.device, "backend_type": self.backend_type, "adapter_type": self.adapter_type,
                "description": self.description, "vendor": ""}


VULKAN = FakeAdapter("llvmpipe (LLVM 15.0.6, 256 bits)", "Vulkan", "CPU", "Mesa 22.3.6 (LLVM 15.0.6)")
LLVMPIPE_GL = FakeAdapter("llvmpipe (LLVM 15.0.6, 256 bits)", "OpenGL", "CPU", "4.5 (Core Profile) Mesa 22.3.6")
# What NVIDIA's EGL gives wgpu: a 3.3 context. Its driver advertises GL_ARB_compute_shader, so the limits are not 0.
NVIDIA_GL = FakeAdapter("NVIDIA T400 4GB/PCIe/SSE2", "OpenGL", "Other", "3.3.0 NVIDIA 610.43.03")
GLES_30 = FakeAdapter("Mali-G52", "OpenGL", "IntegratedGPU", "OpenGL ES 3.0 v1.r20p0", dict(NO_COMPUTE_LIMITS))
DISCRETE_VULKAN = FakeAdapter("NVIDIA H100", "Vulkan", "DiscreteGPU", "570.86")


def fake_backend(recommended, adapters):
    def enumerate_adapters_sync():
        return list(adapters)

    gpu = types.SimpleNamespace(request_adapter_sync=lambda **_: recommended,
                                enumerate_adapters_sync=enumerate_adapters_sync)
    return types.SimpleNamespace(gpu=gpu, __name__="wgpu")


COMPUTE_NEEDS = "WebGPU compute needs OpenGL ES 3.1 or OpenGL 4.3"


@pytest.mark.parametrize("description, limits, problem", [
    ("4.5 (Core Profile) Mesa 22.3.6", GOOD_LIMITS, None),
    ("4.3.0 NVIDIA 550.54", GOOD_LIMITS, None),
    ("OpenGL ES 3.1 Mesa 23.0", GOOD_LIMITS, None),
    ("OpenGL ES 3.2 NVIDIA 550.54", GOOD_LIMITS, None),
    ("3.3.0 NVIDIA 610.43.03", GOOD_LIMITS, f"OpenGL 3.3; {COMPUTE_NEEDS}"),
    ("4.2.0 NVIDIA 390.1", GOOD_LIMITS, f"OpenGL 4.2; {COMPUTE_NEEDS}"),
    ("OpenGL ES 3.0 Mesa 23.0", GOOD_LIMITS, f"OpenGL ES 3.0; {COMPUTE_NEEDS}"),
    ("OpenGL ES-CM 1.1 Mesa", GOOD_LIMITS, f"OpenGL ES 1.1; {COMPUTE_NEEDS}"),
    ("4.6 (Compatibility Profile)", NO_COMPUTE_LIMITS, "its limits"),
    ("an unknown version string", GOOD_LIMITS, None),  # decided by the limits alone
    ("an unknown version string", NO_COMPUTE_LIMITS, "its limits"),
])
def test_compute_shader_problem_of_opengl_adapters(description, limits, problem):
    found = compute_shader_problem({"backend_type": "OpenGL", "description": description}, limits)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem), found


def test_compute_shader_problem_of_other_backends():
    assert compute_shader_problem({"backend_type": "Vulkan", "description": "3.3.0"}, GOOD_LIMITS) is None
    problem = compute_shader_problem({"backend_type": "Vulkan"}, {**GOOD_LIMITS, "max-compute-workgroup-size-x": 0})
    assert problem == "its limits max-compute-workgroup-size-x are 0"


def test_pick_adapter_prefers_native_over_a_recommended_opengl_adapter():
    assert pick_adapter(fake_backend(LLVMPIPE_GL, [LLVMPIPE_GL, VULKAN]), None) is VULKAN
    assert pick_adapter(fake_backend(NVIDIA_GL, [NVIDIA_GL, VULKAN, DISCRETE_VULKAN]), None) is DISCRETE_VULKAN
    assert pick_adapter(fake_backend(None, [VULKAN]), None) is VULKAN


def test_pick_adapter_keeps_a_recommended_native_adapter_without_enumerating():
    backend = fake_backend(VULKAN, [])
    backend.gpu.enumerate_adapters_sync = None  # calling it would fail
    assert pick_adapter(backend, None) is VULKAN


def test_pick_adapter_falls_back_to_an_opengl_adapter_that_runs_compute():
    assert pick_adapter(fake_backend(NVIDIA_GL, [NVIDIA_GL, LLVMPIPE_GL]), None) is LLVMPIPE_GL


def test_pick_adapter_never_chooses_an_adapter_without_compute_shaders():
    with pytest.raises(DeviceError) as info:
        pick_adapter(fake_backend(NVIDIA_GL, [NVIDIA_GL, GLES_30]), None)
    message = str(info.value)
    assert ("adapter NVIDIA T400 4GB/PCIe/SSE2 (OpenGL, Other) cannot run compute shaders (OpenGL 3.3; "
            f"{COMPUTE_NEEDS})") in message
    assert "Mali-G52" in message and "mesa-vulkan-drivers" in message
    with pytest.raises(DeviceError, match="no WebGPU adapter found by wgpu-native"):
        pick_adapter(fake_backend(None, []), None)


def test_pick_adapter_by_name_says_the_adapter_cannot_run_compute_shaders():
    with pytest.raises(DeviceError) as info:
        pick_adapter(fake_backend(VULKAN, [VULKAN, NVIDIA_GL]), "NVIDIA")
    assert str(info.value) == ("adapter NVIDIA T400 4GB/PCIe/SSE2 (OpenGL, Other) cannot run compute shaders "
                               f"(OpenGL 3.3; {COMPUTE_NEEDS})")
    # A name that matches a usable adapter too picks that one.
    assert pick_adapter(fake_backend(VULKAN, [NVIDIA_GL, LLVMPIPE_GL, VULKAN]), "OpenGL") is LLVMPIPE_GL
    assert pick_adapter(fake_backend(VULKAN, [NVIDIA_GL, LLVMPIPE_GL, VULKAN]), "llvmpipe") is VULKAN


@pytest.mark.parametrize("name", [-1, True, 1.5, b"Vulkan", ["Vulkan"], object()], ids=lambda value: type(value).__name__)
def test_pick_adapter_refuses_what_is_neither_an_index_nor_a_name(name):
    with pytest.raises(ValidationError) as info:
        pick_adapter(fake_backend(VULKAN, [VULKAN]), name)
    assert str(info.value).startswith(f"Device.adapter: {shown(name)} ({type(name).__name__}); allowed: None")
    assert "an adapter's index (an int of at least 0, see gpuops.adapters())" in str(info.value)


TWIN = FakeAdapter("NVIDIA H200", "Vulkan", "DiscreteGPU", "570.86")
TWIN_2 = FakeAdapter("NVIDIA H200", "Vulkan", "DiscreteGPU", "570.86")


def test_pick_adapter_by_index_tells_identical_gpus_apart():
    backend = fake_backend(TWIN, [TWIN, TWIN_2, NVIDIA_GL])
    assert pick_adapter(backend, 0) is TWIN and pick_adapter(backend, 1) is TWIN_2
    assert pick_adapter(backend, np.int64(1)) is TWIN_2  # NumPy integers are indices too
    assert pick_adapter(backend, "H200") is TWIN  # a name picks the best match, the first of equals


def test_pick_adapter_index_past_the_end_lists_the_adapters():
    backend = fake_backend(TWIN, [TWIN, TWIN_2, GLES_30])
    with pytest.raises(gpuops.DeviceError) as info:
        pick_adapter(backend, 3)
    assert str(info.value) == (
        "Device.adapter: index 3 is past the adapters wgpu-native finds (allowed: 0 to 2); adapters: "
        "[0] NVIDIA H200 (Vulkan, DiscreteGPU); [1] NVIDIA H200 (Vulkan, DiscreteGPU); "
        "[2] Mali-G52 (OpenGL, IntegratedGPU) (cannot run compute shaders)")
    with pytest.raises(gpuops.DeviceError, match=r"^GPUOPS_ADAPTER='7': index 7 is past .* \(allowed: none: no "
                                                 r"adapter found\); adapters: none$"):
        pick_adapter(fake_backend(None, []), 7, "GPUOPS_ADAPTER='7'")
    with pytest.raises(gpuops.DeviceError, match="adapter Mali-G52 .* cannot run compute shaders"):
        pick_adapter(backend, 2)


def test_adapters_lists_what_gpuops_runs_on_by_index(device, monkeypatch):
    listed = gpuops.adapters(device.backend)
    enumerated = device.wgpu.gpu.enumerate_adapters_sync()
    assert listed and [a.index for a in listed] == sorted({a.index for a in listed})
    for adapter in listed:
        info = enumerated[adapter.index].info
        assert (adapter.name, adapter.backend, adapter.type) == (info["device"], info["backend_type"],
                                                                 info["adapter_type"])
        assert str(adapter) == f"[{adapter.index}] {adapter.name} ({adapter.backend}, {adapter.type})"
    ours = next(a for a in listed if device.adapter.info["device"] == a.name
                and device.adapter.info["backend_type"] == a.backend)
    by_index = gpuops.Device(adapter=ours.index, backend=device.backend)
    assert by_index.adapter_name == device.adapter_name
    assert gpuops.sign(np.float32([-2, 0, 3]), device=by_index).tolist() == [-1, 0, 1]
    monkeypatch.setenv("GPUOPS_ADAPTER", str(ours.index))
    assert gpuops.Device(backend=device.backend).adapter_name == device.adapter_name
    monkeypatch.setenv("GPUOPS_ADAPTER", str(len(enumerated)))
    with pytest.raises(gpuops.DeviceError, match=rf"^GPUOPS_ADAPTER='{len(enumerated)}': index {len(enumerated)} "
                                                 r"is past the adapters .*; adapters: \[0\] "):
        gpuops.Device(backend=device.backend)


def test_pick_adapter_on_this_machine_is_not_opengl_by_itself():
    assert pick_adapter(wgpu, None).info["backend_type"] != "OpenGL"


def test_check_wgpu_device(device):
    check_wgpu_device(device.wgpu_device)  # a working device passes
    for bad, hint in [(device.adapter, "request one from it with adapter.request_device_sync()"),
                      (device, "is not a GPUDevice"), (None, "is not a GPUDevice"), ("gpu", "is not a GPUDevice")]:
        with pytest.raises(ValidationError) as info:
            check_wgpu_device(bad)
        assert str(info.value).startswith(f"Device.wgpu_device: {shown(bad)} ({type(bad).__name__})")
        assert hint in str(info.value)


def test_check_wgpu_device_refuses_a_destroyed_device(device):
    if device.backend != "wgpu-native":
        pytest.skip("only wgpu-native refuses work on a destroyed device at once")
    destroyed = device.adapter.request_device_sync()
    check_wgpu_device(destroyed)
    destroyed.destroy()
    with pytest.raises(DeviceError, match="cannot create a buffer .lost or destroyed"):
        check_wgpu_device(destroyed)
