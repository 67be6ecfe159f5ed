"""Enumerations and descriptions: DirectML's numeric values, parsing, frozen/hashable values, implied sizes.

No GPU needed. Expected values are transcribed from DirectML's documentation (docs/semantics.md restates them).
"""

from __future__ import annotations

import dataclasses
import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpuops
from gpuops import (
    DataType,
    FeatureLevel,
    IsInfinityDesc,
    IsInfinityMode,
    TensorDesc,
    TensorFlags,
    ValidationError,
)
from gpuops.operators import OPERATORS

from .reference import valid_tensors

T = DataType
EXAMPLES = int(os.environ.get("GPUOPS_HYPOTHESIS_EXAMPLES", "50"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------------------------------
# DataType
# ---------------------------------------------------------------------------------------------------------------

DATA_TYPES = [  # name, DML value, element size in bytes
    ("UNKNOWN", 0, 0), ("FLOAT32", 1, 4), ("FLOAT16", 2, 2), ("UINT32", 3, 4), ("UINT16", 4, 2),
    ("UINT8", 5, 1), ("INT32", 6, 4), ("INT16", 7, 2), ("INT8", 8, 1), ("FLOAT64", 9, 8), ("UINT64", 10, 8),
    ("INT64", 11, 8), ("UINT4", 12, 1), ("INT4", 13, 1),
]


def test_data_type_members_are_exactly_directmls():
    assert [(t.name, t.value) for t in DataType] == [(n, v) for n, v, _ in DATA_TYPES]


@pytest.mark.parametrize("name, value, size", DATA_TYPES, ids=[n for n, _, _ in DATA_TYPES])
def test_data_type_value_and_size(name, value, size):
    data_type = DataType[name]
    assert int(data_type) == value
    assert DataType(value) is data_type
    assert data_type.size == size


@pytest.mark.parametrize("name, value, size", DATA_TYPES, ids=[n for n, _, _ in DATA_TYPES])
def test_data_type_parse(name, value, size):
    data_type = DataType[name]
    for spelling in (name, f"DML_TENSOR_DATA_TYPE_{name}", name.lower(), f"dml_tensor_data_type_{name.lower()}",
                     f"  {name} ", value, data_type):
        assert DataType.parse(spelling) is data_type, spelling


@pytest.mark.parametrize("bad", ["BOOL", "FLOAT", "DML_TENSOR_DATA_TYPE_", "", "float 32", "DML_TENSOR_DATA_TYPE_BOOL",
                                 14, -1, 99])
def test_data_type_parse_unknown(bad):
    with pytest.raises(ValueError):
        DataType.parse(bad)


NUMPY_TYPES = [
    (np.float32, T.FLOAT32), (np.float16, T.FLOAT16), (np.uint32, T.UINT32), (np.uint16, T.UINT16),
    (np.uint8, T.UINT8), (np.int32, T.INT32), (np.int16, T.INT16), (np.int8, T.INT8), (np.float64, T.FLOAT64),
    (np.uint64, T.UINT64), (np.int64, T.INT64),
]


@pytest.mark.parametrize("np_type, data_type", NUMPY_TYPES, ids=[d.name for _, d in NUMPY_TYPES])
def test_data_type_from_numpy(np_type, data_type):
    assert DataType.from_numpy(np_type) is data_type
    assert DataType.from_numpy(np.dtype(np_type)) is data_type
    assert DataType.from_numpy(np.dtype(np_type).name) is data_type
    assert DataType.from_numpy(np.zeros(2, np_type).dtype) is data_type
    assert data_type.numpy_dtype == np.dtype(np_type)
    assert data_type.numpy_dtype.itemsize == data_type.size


def test_data_type_from_numpy_aliases():
    assert DataType.from_numpy(np.longlong) is T.INT64
    assert DataType.from_numpy(np.ulonglong) is T.UINT64
    assert DataType.from_numpy(np.intc) is T.INT32
    assert DataType.from_numpy(np.uintc) is T.UINT32
    assert DataType.from_numpy(np.half) is T.FLOAT16
    assert DataType.from_numpy(np.single) is T.FLOAT32
    assert DataType.from_numpy(np.double) is T.FLOAT64


@pytest.mark.parametrize("np_type", [np.bool_, bool, np.complex64, np.complex128, object, np.str_, np.void,
                                     np.dtype("datetime64[s]")], ids=str)
def test_data_type_from_numpy_without_dml_type(np_type):
    assert DataType.from_numpy(np_type) is None


@pytest.mark.parametrize("np_type", [np.float32, np.float16, np.int32, np.uint16, np.int64], ids=str)
def test_data_type_from_numpy_refuses_byte_swapped(np_type):
    swapped = np.dtype(np_type).newbyteorder()
    assert DataType.from_numpy(swapped) is None


def test_data_types_without_numpy_dtype():
    for data_type in (T.UNKNOWN, T.UINT4, T.INT4):
        assert data_type.numpy_dtype is None


# ---------------------------------------------------------------------------------------------------------------
# FeatureLevel
# ---------------------------------------------------------------------------------------------------------------

LEVELS = [("1_0", 0x1000), ("2_0", 0x2000), ("2_1", 0x2100), ("3_0", 0x3000), ("3_1", 0x3100), ("4_0", 0x4000),
          ("4_1", 0x4100), ("5_0", 0x5000), ("5_1", 0x5100), ("5_2", 0x5200), ("6_0", 0x6000), ("6_1", 0x6100),
          ("6_2", 0x6200), ("6_3", 0x6300), ("6_4", 0x6400)]


def test_feature_level_members_in_order():
    assert [(level.name, level.value) for level in FeatureLevel] == [(f"LEVEL_{n}", v) for n, v in LEVELS]
    members = list(FeatureLevel)
    assert members == sorted(members)
    assert all(a < b for a, b in zip(members, members[1:]))


@pytest.mark.parametrize("label, value", LEVELS, ids=[n for n, _ in LEVELS])
def test_feature_level_parse(label, value):
    level = FeatureLevel(value)
    major, minor = label.split("_")
    for spelling in (f"{major}.{minor}", label, f"LEVEL_{label}", f"DML_FEATURE_LEVEL_{label}",
                     f"dml_feature_level_{label}", f" {major}.{minor} ", value, hex(value), level):
        assert FeatureLevel.parse(spelling) is level, spelling
    assert level.label == label


def test_feature_level_parse_6_4():
    level = FeatureLevel.LEVEL_6_4
    assert FeatureLevel.parse("6.4") == FeatureLevel.parse("6_4") == FeatureLevel.parse(0x6400) == level
    assert FeatureLevel.parse("DML_FEATURE_LEVEL_6_4") is level
    assert FeatureLevel.parse("LEVEL_6_4") is level


@pytest.mark.parametrize("bad", ["7.0", "abc", 0x1234, "", "6", "6.", ".4", "6.4.1", "6.5", "1.1", "0.0", "-6.4",
                                 "6,4", "LEVEL_", 0, 0x6401, 0x7000, 6.4, "0x1234"])
def test_feature_level_parse_unknown(bad):
    with pytest.raises(ValueError):
        FeatureLevel.parse(bad)


@pytest.mark.parametrize("bad", ["1.16", "2.16", "2.17", "5.17"])
def test_feature_level_parse_refuses_two_digit_minor(bad):
    with pytest.raises(ValueError):
        FeatureLevel.parse(bad)


# ---------------------------------------------------------------------------------------------------------------
# TensorFlags and IsInfinityMode
# ---------------------------------------------------------------------------------------------------------------

def test_tensor_flags_values():
    assert int(TensorFlags.NONE) == 0
    assert int(TensorFlags.OWNED_BY_DML) == 1
    assert TensorFlags(1) is TensorFlags.OWNED_BY_DML


def test_is_infinity_mode_values():
    assert [(m.name, m.value) for m in IsInfinityMode] == [("EITHER", 0), ("POSITIVE", 1), ("NEGATIVE", 2)]


@pytest.mark.parametrize("spelling, mode", [
    ("DML_IS_INFINITY_MODE_POSITIVE", IsInfinityMode.POSITIVE), ("positive", IsInfinityMode.POSITIVE),
    ("POSITIVE", IsInfinityMode.POSITIVE), ("dml_is_infinity_mode_negative", IsInfinityMode.NEGATIVE),
    ("Either", IsInfinityMode.EITHER), (" NEGATIVE ", IsInfinityMode.NEGATIVE), (0, IsInfinityMode.EITHER),
    (1, IsInfinityMode.POSITIVE), (2, IsInfinityMode.NEGATIVE), (IsInfinityMode.NEGATIVE, IsInfinityMode.NEGATIVE),
])
def test_is_infinity_mode_parse(spelling, mode):
    assert IsInfinityMode.parse(spelling) is mode


@pytest.mark.parametrize("bad", ["BOTH", "", "DML_IS_INFINITY_MODE_", "1", 3, -1])
def test_is_infinity_mode_parse_unknown(bad):
    with pytest.raises(ValueError):
        IsInfinityMode.parse(bad)


# ---------------------------------------------------------------------------------------------------------------
# TensorDesc
# ---------------------------------------------------------------------------------------------------------------

def test_tensor_desc_is_frozen():
    tensor = TensorDesc(T.FLOAT32, (2, 3))
    for name, value in [("data_type", T.FLOAT16), ("sizes", (3, 2)), ("strides", (1, 2)),
                        ("total_tensor_size_in_bytes", 100), ("guaranteed_base_offset_alignment", 16),
                        ("flags", TensorFlags.OWNED_BY_DML)]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(tensor, name, value)
    assert tensor.sizes == (2, 3)


def test_tensor_desc_is_hashable_and_equal_by_value():
    a = TensorDesc(T.FLOAT32, [2, 3], [3, 1])
    b = TensorDesc("FLOAT32", (2, 3), (3, 1))
    c = TensorDesc(T.FLOAT32, (2, 3), (3, 1), total_tensor_size_in_bytes=24)  # the implied total, given
    assert a == b == c
    assert hash(a) == hash(b) == hash(c)
    table = {a: "x"}
    assert table[b] == "x" and table[c] == "x"
    assert len({a, b, c}) == 1
    assert a != TensorDesc(T.FLOAT32, (2, 3), (3, 1), total_tensor_size_in_bytes=28)
    assert a != TensorDesc(T.FLOAT16, (2, 3), (3, 1))
    assert a != TensorDesc(T.FLOAT32, (2, 3), (3, 1), flags=TensorFlags.OWNED_BY_DML)
    assert a != TensorDesc(T.FLOAT32, (2, 3), (3, 1), guaranteed_base_offset_alignment=16)
    assert a != TensorDesc(T.FLOAT32, (3, 2), (2, 1))


def test_tensor_desc_coerces_to_canonical_forms():
    tensor = TensorDesc("float16", [2, np.int64(3)], [np.int32(3), 1], flags=1)
    assert tensor.data_type is T.FLOAT16
    assert tensor.sizes == (2, 3) and type(tensor.sizes) is tuple
    assert all(type(v) is int for v in tensor.sizes + tensor.strides)
    assert tensor.strides == (3, 1) and type(tensor.strides) is tuple
    assert tensor.flags is TensorFlags.OWNED_BY_DML
    assert TensorDesc(1, (4,)).data_type is T.FLOAT32
    assert TensorDesc("DML_TENSOR_DATA_TYPE_INT8", (4,)).data_type is T.INT8
    assert TensorDesc(T.INT8, range(1, 4)).sizes == (1, 2, 3)
    assert TensorDesc(T.INT8, np.array([2, 2])).sizes == (2, 2)


def test_tensor_desc_properties():
    tensor = TensorDesc(T.FLOAT32, (2, 3, 4))
    assert tensor.dimension_count == 3
    assert tensor.element_count == 24
    assert tensor.element_strides == (12, 4, 1)
    assert tensor.strides is None
    strided = TensorDesc(T.FLOAT32, (2, 3), (0, 1))
    assert strided.element_strides == (0, 1)
    assert strided.implied_size_in_bytes == 12


IMPLIED = [  # dtype, sizes, strides, bytes
    (T.FLOAT16, (3,), None, 8),
    (T.FLOAT32, (2, 3), (0, 1), 12),
    (T.INT8, (5,), None, 8),
    (T.FLOAT32, (2, 2), (4, 1), 24),  # (1*4 + 1*1 + 1) * 4
    (T.FLOAT32, (2, 3), None, 24),
    (T.UINT8, (1,), None, 4),
    (T.UINT8, (4,), None, 4),
    (T.FLOAT16, (2,), None, 4),
    (T.INT64, (3,), None, 24),
    (T.FLOAT32, (2, 3), (0, 0), 4),
    (T.UINT16, (2, 3), (1, 2), 12),  # last index 1 + 4 = 5 -> 6 elements
    (T.UINT8, (3, 3), (1, 3), 12),  # last index 8 -> 9 bytes -> 12
    (T.FLOAT32, (2, 1, 3), (3, 1000, 1), 24),  # a size-1 dimension's stride does not count
    (T.FLOAT32, (), None, 4),  # no dimensions: one element
]


@pytest.mark.parametrize("dtype, sizes, strides, expected", IMPLIED, ids=[str(i) for i in range(len(IMPLIED))])
def test_total_size_implied_when_omitted(dtype, sizes, strides, expected):
    for omitted in (None, 0):
        tensor = TensorDesc(dtype, sizes, strides, total_tensor_size_in_bytes=omitted)
        assert tensor.total_tensor_size_in_bytes == expected
        assert tensor.total_size_was_implied
    assert TensorDesc(dtype, sizes, strides).implied_size_in_bytes == expected


def test_total_size_given_is_kept():
    tensor = TensorDesc(T.FLOAT16, (3,), total_tensor_size_in_bytes=64)
    assert tensor.total_tensor_size_in_bytes == 64
    assert not tensor.total_size_was_implied
    assert tensor.implied_size_in_bytes == 8
    # A too-small total is kept too (validate refuses it, construction does not).
    assert TensorDesc(T.FLOAT32, (4,), total_tensor_size_in_bytes=8).total_tensor_size_in_bytes == 8


def test_total_size_was_implied_is_not_part_of_the_value():
    implied = TensorDesc(T.FLOAT32, (4,))
    given_ = TensorDesc(T.FLOAT32, (4,), total_tensor_size_in_bytes=16)
    assert implied.total_size_was_implied and not given_.total_size_was_implied
    assert implied == given_ and hash(implied) == hash(given_)
    assert "total_size_was_implied" not in repr(implied)


def test_total_size_left_unknown_when_strides_do_not_match():
    assert TensorDesc(T.FLOAT32, (2, 3), (1,)).total_tensor_size_in_bytes is None


@pytest.mark.parametrize("kwargs, field", [
    ({"data_type": "BOGUS", "sizes": (2,)}, "TensorDesc.data_type"),
    ({"data_type": 99, "sizes": (2,)}, "TensorDesc.data_type"),
    ({"data_type": None, "sizes": (2,)}, "TensorDesc.data_type"),
    ({"data_type": T.FLOAT32, "sizes": 5}, "TensorDesc.sizes"),
    ({"data_type": T.FLOAT32, "sizes": (2.0, 3)}, "TensorDesc.sizes"),
    ({"data_type": T.FLOAT32, "sizes": "23"}, "TensorDesc.sizes"),
    ({"data_type": T.FLOAT32, "sizes": None}, "TensorDesc.sizes"),
    ({"data_type": T.FLOAT32, "sizes": (2, 3), "strides": (1.5, 1)}, "TensorDesc.strides"),
    ({"data_type": T.FLOAT32, "sizes": (2, 3), "strides": 1}, "TensorDesc.strides"),
    ({"data_type": T.FLOAT32, "sizes": (2,), "flags": "OWNED_BY_DML"}, "TensorDesc.flags"),
    ({"data_type": T.FLOAT32, "sizes": (2,), "flags": None}, "TensorDesc.flags"),
])
def test_tensor_desc_construction_errors(kwargs, field):
    with pytest.raises(ValidationError) as info:
        TensorDesc(**kwargs)
    assert str(info.value).startswith(field)
    assert isinstance(info.value, gpuops.GpuOpsError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("kwargs", [
    {"total_tensor_size_in_bytes": 23.9}, {"total_tensor_size_in_bytes": "abc"},
    {"guaranteed_base_offset_alignment": 4.5}, {"guaranteed_base_offset_alignment": None},
])
def test_tensor_desc_non_integer_total_or_alignment_refused(kwargs):
    with pytest.raises(ValidationError):
        TensorDesc(T.FLOAT32, (4,), **kwargs)


@PROPERTY
@given(st.data())
def test_property_implied_size_matches_definition(data):
    dtype = data.draw(st.sampled_from([t for t in DataType if t.size > 0]))
    count = data.draw(st.integers(1, 5))
    sizes = tuple(data.draw(st.lists(st.integers(1, 6), min_size=count, max_size=count)))
    packed = data.draw(st.booleans())
    strides = None if packed else tuple(data.draw(st.lists(st.integers(0, 50), min_size=count, max_size=count)))
    tensor = TensorDesc(dtype, sizes, strides)
    if packed:
        used = int(np.prod(sizes)) * dtype.size
    else:
        last = max(sum(i * s for i, s in zip(index, strides)) for index in np.ndindex(*sizes))
        used = (last + 1) * dtype.size
    expected = -(-used // 4) * 4
    assert tensor.total_tensor_size_in_bytes == expected
    assert expected % 4 == 0 and expected >= used
    # Packed strides spelled out give the same total.
    explicit = TensorDesc(dtype, sizes, tensor.element_strides)
    if packed:
        assert explicit.total_tensor_size_in_bytes == expected


# ---------------------------------------------------------------------------------------------------------------
# Operator descriptions
# ---------------------------------------------------------------------------------------------------------------

F32 = TensorDesc(T.FLOAT32, (2, 3))
U8 = TensorDesc(T.UINT8, (2, 3))

# Every operator's description with valid tensors, at each value of its attributes.
DESCS = [(spec.desc_type, {**valid_tensors(spec), **mode}) for spec in OPERATORS for mode in spec.modes()]


@pytest.mark.parametrize("cls, kwargs", DESCS, ids=[cls.__name__ + "".join(
    f"-{value.name}" for value in kwargs.values() if not isinstance(value, TensorDesc)) for cls, kwargs in DESCS])
def test_op_desc_frozen_and_hashable(cls, kwargs):
    desc = cls(**kwargs)
    for name in kwargs:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(desc, name, F32)
    twin = cls(**{k: (TensorDesc(v.data_type, list(v.sizes)) if isinstance(v, TensorDesc) else v)
                  for k, v in kwargs.items()})
    assert desc == twin and hash(desc) == hash(twin)
    assert {desc: 1}[twin] == 1
    # Any change of a tensor makes a different value.
    first = next(iter(kwargs))
    other = cls(**{**kwargs, first: TensorDesc(T.FLOAT16, (2, 3))})
    assert other != desc


def test_op_desc_types_differ():
    """Two operators' descriptions of the same tensors differ: the description's type is part of its value."""
    by_fields: dict[tuple[str, ...], list] = {}
    for spec in OPERATORS:
        by_fields.setdefault(spec.tensor_fields, []).append(spec.desc_type(**dict.fromkeys(spec.tensor_fields, F32)))
    pairs = [pair for descs in by_fields.values() for pair in itertools.combinations(descs, 2)]
    assert pairs and all(one != other for one, other in pairs)


def test_is_infinity_desc_mode():
    assert IsInfinityDesc(F32, U8).infinity_mode is IsInfinityMode.EITHER
    for spelling, mode in [("positive", IsInfinityMode.POSITIVE), ("DML_IS_INFINITY_MODE_NEGATIVE",
                                                                     IsInfinityMode.NEGATIVE),
                           (1, IsInfinityMode.POSITIVE), (2, IsInfinityMode.NEGATIVE), (0, IsInfinityMode.EITHER),
                           (IsInfinityMode.POSITIVE, IsInfinityMode.POSITIVE)]:
        desc = IsInfinityDesc(F32, U8, spelling)
        assert desc.infinity_mode is mode
        assert desc == IsInfinityDesc(F32, U8, infinity_mode=mode)
        assert hash(desc) == hash(IsInfinityDesc(F32, U8, infinity_mode=mode))
    assert IsInfinityDesc(F32, U8, "positive") != IsInfinityDesc(F32, U8, "negative")


@pytest.mark.parametrize("bad", [3, -1, "BOTH", "", None, 1.5, "DML_IS_INFINITY_MODE_BOTH"])
def test_is_infinity_desc_bad_mode(bad):
    with pytest.raises(ValidationError) as info:
        IsInfinityDesc(F32, U8, bad)
    assert "IsInfinityDesc.infinity_mode" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_is_infinity_desc_is_frozen_for_the_mode():
    desc = IsInfinityDesc(F32, U8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        desc.infinity_mode = IsInfinityMode.POSITIVE


def test_validation_error_hierarchy():
    assert issubclass(ValidationError, gpuops.GpuOpsError)
    assert issubclass(ValidationError, ValueError)
