"""validate(desc, feature_level): every rule of the contract (docs/semantics.md), no GPU needed.

Each rule is checked both ways: a valid description is accepted, and each broken variant is refused with a
ValidationError whose `.field` is the exact field path, whose `.operator` is the DML_OPERATOR_... name, and whose
message names both and the offending value. The operators come from gpuops' rows; what each must accept comes from
docs/semantics.md's tables (tests/contract.py), transcribed from DirectML's documentation independently of the
rows, so a wrong row there makes these tests fail.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpuops
from gpuops import (
    DataType,
    FeatureLevel,
    IsInfinityDesc,
    IsInfinityMode,
    SignDesc,
    TensorDesc,
    TensorFlags,
    ValidationError,
    validate,
)
from gpuops.operators import OPERATORS, spec_by_name

from .contract import operators_table, support_rows

T = DataType
L = FeatureLevel

FLOATS = frozenset({T.FLOAT32, T.FLOAT16})
SMALL_INTS = frozenset({T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8})
INT64S = frozenset({T.INT64, T.UINT64})
ALL_TYPES = tuple(DataType)
LEVELS = tuple(FeatureLevel)
CONTRACT = support_rows()


@dataclasses.dataclass(frozen=True)
class Op:
    """An operator as the tests see it: its description class and fields from its row, its support from the
    contract."""

    name: str  # ELEMENT_WISE_...

    @property
    def spec(self):
        return spec_by_name(self.name)

    @property
    def desc_type(self) -> type:
        return self.spec.desc_type

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.spec.inputs

    @property
    def output(self) -> str:
        return self.spec.output

    @property
    def fields(self) -> tuple[str, ...]:
        return self.inputs + (self.output,)

    @property
    def since(self) -> FeatureLevel:
        return CONTRACT[self.name][0].since

    @property
    def same_type(self) -> bool:
        """All tensors must share one DataType."""
        return CONTRACT[self.name][0].output_types is None

    @property
    def default_type(self) -> DataType:
        """The inputs' type in the tests' valid descriptions: FLOAT32 where the operator takes it from its first
        level, else the first type it takes there."""
        types = CONTRACT[self.name][0].input_types
        return T.FLOAT32 if T.FLOAT32 in types else min(types)

    @property
    def cls(self) -> str:
        return self.desc_type.__name__

    @property
    def dml(self) -> str:
        return f"DML_OPERATOR_{self.name}"


OPS = tuple(Op(spec.name) for spec in OPERATORS)
SIGN, IS_NAN, IS_INF, MOD_T, MOD_F = (Op(f"ELEMENT_WISE_{name}") for name in (
    "SIGN", "IS_NAN", "IS_INFINITY", "MODULUS_TRUNCATE", "MODULUS_FLOOR"))


def contract_row(op: Op, level: FeatureLevel):
    """The contract's row in force at `level`, or None where the operator does not exist."""
    rows = [row for row in CONTRACT[op.name] if row.since <= level]
    return rows[-1] if rows else None


def expected_types(op: Op, level: FeatureLevel) -> dict[str, frozenset[DataType]] | None:
    """Allowed data types per tensor field, or None when the operator does not exist at `level`."""
    row = contract_row(op, level)
    if row is None:
        return None
    return {**{f: row.input_types for f in op.inputs}, op.output: row.output_types or row.input_types}


def expected_dims(op: Op, level: FeatureLevel) -> tuple[int, ...]:
    return contract_row(op, level).dimension_counts


def levels_of(op: Op) -> list[FeatureLevel]:
    return [lv for lv in LEVELS if lv >= op.since]


def default_types(op: Op) -> dict[str, DataType]:
    """Inputs of the operator's default type, the output of the type DirectML gives where none is named."""
    return {**{f: op.default_type for f in op.inputs}, op.output: op.spec.output_type(op.default_type)}


def test_the_contract_documents_every_operator():
    """docs/semantics.md names every operator of the rows, with its DirectML id, the level it exists from and its
    tensors and attributes; and no other."""
    documented = operators_table()
    assert set(documented) == set(CONTRACT) == {spec.name for spec in OPERATORS}
    for spec in OPERATORS:
        names = tuple(f.removesuffix("_tensor") for f in spec.tensor_fields) + tuple(a.name for a in spec.attributes)
        assert documented[spec.name] == (spec.dml_id, CONTRACT[spec.name][0].since.label, names)


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------

SIZES4 = (2, 3, 1, 5)


def build(op: Op, sizes=SIZES4, types: dict | None = None, mode=None, **tensors: TensorDesc):
    """A desc of `op`: every tensor packed with `sizes` and the default (or given) data types; keyword arguments
    replace whole tensors."""
    dts = default_types(op)
    dts.update(types or {})
    args = {f: tensors.get(f, TensorDesc(dts[f], tuple(sizes))) for f in op.fields}
    if mode is not None:
        args[op.spec.mode_attribute.name] = mode
    return op.desc_type(**args)


def same_type(op: Op, dtype: DataType, sizes=SIZES4):
    """All tensors of a same-type op of one dtype; for the others the inputs only (IS_NAN's output UINT8)."""
    if op.same_type:
        return build(op, sizes, {f: dtype for f in op.fields})
    return build(op, sizes, {f: dtype for f in op.inputs})


def accepted(desc, level) -> None:
    validate(desc, level)  # raises on refusal


def refused(op: Op, desc, level, field: str, *fragments: str) -> ValidationError:
    """Assert validate refuses `desc` at `level`, naming exactly `field` (relative to the desc class)."""
    with pytest.raises(ValidationError) as info:
        validate(desc, level)
    err = info.value
    assert isinstance(err, gpuops.GpuOpsError) and isinstance(err, ValueError)
    full = f"{op.cls}.{field}"
    assert err.field == full, f"field {err.field!r}, expected {full!r}; message: {err}"
    assert err.operator == op.dml
    message = str(err)
    assert op.dml in message and full in message, message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return err


def refused_missing(op: Op, desc, level) -> ValidationError:
    """The operator does not exist at `level`."""
    with pytest.raises(ValidationError) as info:
        validate(desc, level)
    err = info.value
    # The field names the description itself (gpuops currently spells it "SignDesc."; see the report).
    assert err.field.rstrip(".") == op.cls
    assert err.operator == op.dml
    message = str(err)
    assert op.dml in message and "does not exist" in message and FeatureLevel.parse(level).label in message
    assert op.since.label in message
    return err


def ids(values):
    return [getattr(v, "name", None) or str(v) for v in values]


# ---------------------------------------------------------------------------------------------------------------
# Operator existence
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("level", LEVELS, ids=lambda lv: lv.label)
def test_operator_exists_from_its_level(op, level):
    desc = build(op)  # the default type, 4-D: valid wherever the operator exists
    if level >= op.since:
        accepted(desc, level)
    else:
        refused_missing(op, desc, level)


@pytest.mark.parametrize("op, first, before", [
    (SIGN, L.LEVEL_2_0, L.LEVEL_1_0), (IS_NAN, L.LEVEL_2_0, L.LEVEL_1_0),
    (IS_INF, L.LEVEL_2_1, L.LEVEL_2_0), (MOD_T, L.LEVEL_2_1, L.LEVEL_2_0), (MOD_F, L.LEVEL_2_1, L.LEVEL_2_0),
], ids=lambda v: getattr(v, "name", None) or str(v))
def test_operator_existence_boundaries(op, first, before):
    accepted(build(op), first)
    refused_missing(op, build(op), before)


@pytest.mark.parametrize("level", ["2.1", "2_1", "LEVEL_2_1", "DML_FEATURE_LEVEL_2_1", 0x2100, L.LEVEL_2_1])
def test_feature_level_spellings(level):
    accepted(build(MOD_F), level)
    refused_missing(MOD_F, build(MOD_F), "2.0")


def test_default_feature_level_is_6_4():
    validate(build(SIGN, types={"input_tensor": T.INT64, "output_tensor": T.INT64}))
    with pytest.raises(ValidationError) as info:
        validate(build(SIGN, types={"input_tensor": T.FLOAT64, "output_tensor": T.FLOAT64}))
    assert "6_4" in str(info.value)


@pytest.mark.parametrize("level", ["7.0", "abc", 0x1234, "", "6.5", 0])
def test_unknown_feature_level_refused(level):
    with pytest.raises(ValidationError):
        validate(build(SIGN), level)


def test_feature_level_none_is_a_validation_error():
    with pytest.raises(ValidationError):
        validate(build(SIGN), None)


# ---------------------------------------------------------------------------------------------------------------
# Data types: the whole matrix, per operator, per level, per tensor
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=ids(ALL_TYPES))
@pytest.mark.parametrize("level", LEVELS, ids=lambda lv: lv.label)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_data_type_matrix_first_tensor(op, level, dtype):
    """The first tensor (and, for same-type operators, every tensor) of `dtype`."""
    desc = same_type(op, dtype)
    table = expected_types(op, level)
    first = op.fields[0]
    if table is None:
        refused_missing(op, desc, level)
    elif dtype in table[first]:
        accepted(desc, level)
    else:
        refused(op, desc, level, f"{first}.data_type", dtype.name, level.label, "not supported")


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=ids(ALL_TYPES))
@pytest.mark.parametrize("level", LEVELS, ids=lambda lv: lv.label)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_data_type_matrix_output_only(op, level, dtype):
    """Valid inputs (the default type), only the output of `dtype`."""
    desc = build(op, types={op.output: dtype})
    table = expected_types(op, level)
    if table is None:
        refused_missing(op, desc, level)
    elif dtype not in table[op.output]:
        refused(op, desc, level, "output_tensor.data_type", dtype.name, level.label, "not supported")
    elif op.same_type and dtype != op.default_type:
        refused(op, desc, level, "output_tensor.data_type", dtype.name, op.default_type.name, "must be equal")
    else:
        accepted(desc, level)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=ids(ALL_TYPES))
@pytest.mark.parametrize("level", [L.LEVEL_2_1, L.LEVEL_5_2, L.LEVEL_6_0, L.LEVEL_6_4], ids=lambda lv: lv.label)
@pytest.mark.parametrize("op", [MOD_T, MOD_F], ids=lambda o: o.name)
def test_data_type_matrix_modulus_b_only(op, level, dtype):
    desc = build(op, types={"b_tensor": dtype})
    table = expected_types(op, level)
    if dtype not in table["b_tensor"]:
        refused(op, desc, level, "b_tensor.data_type", dtype.name, "not supported")
    elif dtype != T.FLOAT32:
        refused(op, desc, level, "b_tensor.data_type", dtype.name, "must be equal")
    else:
        accepted(desc, level)


def _sign(dtype):
    return build(SIGN, types={"input_tensor": dtype, "output_tensor": dtype})


def _mod(op, dtype):
    return build(op, types={f: dtype for f in op.fields})


@pytest.mark.parametrize("dtype", [T.INT64, T.UINT64], ids=ids([T.INT64, T.UINT64]))
def test_sign_int64_from_4_1(dtype):
    refused(SIGN, _sign(dtype), L.LEVEL_4_0, "input_tensor.data_type", dtype.name, "4_0")
    accepted(_sign(dtype), L.LEVEL_4_1)
    accepted(_sign(dtype), L.LEVEL_6_4)


@pytest.mark.parametrize("dtype", sorted(SMALL_INTS), ids=ids(sorted(SMALL_INTS)))
def test_sign_small_ints_from_2_1(dtype):
    refused(SIGN, _sign(dtype), L.LEVEL_2_0, "input_tensor.data_type", dtype.name, "2_0")
    accepted(_sign(dtype), L.LEVEL_2_1)
    accepted(_sign(dtype), L.LEVEL_4_0)


def test_sign_int32_at_2_1_needs_4d():
    accepted(build(SIGN, (2, 3, 4, 5), {"input_tensor": T.INT32, "output_tensor": T.INT32}), L.LEVEL_2_1)
    refused(SIGN, build(SIGN, (2, 3, 4), {"input_tensor": T.INT32, "output_tensor": T.INT32}), L.LEVEL_2_1,
            "input_tensor.sizes", "exactly 4")


@pytest.mark.parametrize("op", [MOD_T, MOD_F], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [T.INT64, T.UINT64], ids=ids([T.INT64, T.UINT64]))
def test_modulus_int64_from_6_0(op, dtype):
    refused(op, _mod(op, dtype), L.LEVEL_5_2, "a_tensor.data_type", dtype.name, "5_2")
    accepted(_mod(op, dtype), L.LEVEL_6_0)
    accepted(_mod(op, dtype), L.LEVEL_6_4)


def test_is_nan_uint32_output_from_3_0():
    desc = build(IS_NAN, types={"output_tensor": T.UINT32})
    refused(IS_NAN, desc, L.LEVEL_2_0, "output_tensor.data_type", "UINT32", "2_0")
    refused(IS_NAN, desc, L.LEVEL_2_1, "output_tensor.data_type", "UINT32", "2_1")
    accepted(desc, L.LEVEL_3_0)
    accepted(desc, L.LEVEL_6_4)


@pytest.mark.parametrize("dtype", [t for t in ALL_TYPES if t != T.UINT8], ids=ids([t for t in ALL_TYPES if t != T.UINT8]))
def test_is_infinity_output_must_be_uint8(dtype):
    refused(IS_INF, build(IS_INF, types={"output_tensor": dtype}), L.LEVEL_6_4, "output_tensor.data_type",
            dtype.name, "UINT8")
    accepted(build(IS_INF, types={"output_tensor": T.UINT8}), L.LEVEL_6_4)


@pytest.mark.parametrize("dtype", [T.FLOAT64, T.UINT4, T.INT4, T.UNKNOWN], ids=ids([T.FLOAT64, T.UINT4, T.INT4, T.UNKNOWN]))
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_unsupported_everywhere_at_6_4(op, dtype):
    refused(op, same_type(op, dtype), L.LEVEL_6_4, f"{op.fields[0]}.data_type", dtype.name)
    refused(op, build(op, types={op.output: dtype}), L.LEVEL_6_4, "output_tensor.data_type", dtype.name)


INTEGERS = sorted(SMALL_INTS | INT64S)


@pytest.mark.parametrize("dtype", INTEGERS, ids=ids(INTEGERS))
@pytest.mark.parametrize("op", [IS_NAN, IS_INF], ids=lambda o: o.name)
@pytest.mark.parametrize("level", [L.LEVEL_3_0, L.LEVEL_6_4], ids=lambda lv: lv.label)
def test_is_nan_is_infinity_refuse_integer_input(op, dtype, level):
    refused(op, build(op, types={"input_tensor": dtype}), level, "input_tensor.data_type", dtype.name)


@pytest.mark.parametrize("out", [T.UINT8, T.UINT32], ids=["UINT8", "UINT32"])
@pytest.mark.parametrize("inp", [T.FLOAT16, T.FLOAT32], ids=["FLOAT16", "FLOAT32"])
def test_is_nan_input_and_output_types_differ_freely(inp, out):
    accepted(build(IS_NAN, types={"input_tensor": inp, "output_tensor": out}), L.LEVEL_3_0)
    accepted(build(IS_INF, types={"input_tensor": inp}), L.LEVEL_3_0)


# ---------------------------------------------------------------------------------------------------------------
# Equal data types, dimension counts and sizes between tensors
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("level", [L.LEVEL_2_1, L.LEVEL_3_0, L.LEVEL_6_4], ids=lambda lv: lv.label)
def test_same_data_type_rules(level):
    refused(SIGN, build(SIGN, types={"input_tensor": T.FLOAT32, "output_tensor": T.FLOAT16}), level,
            "output_tensor.data_type", "FLOAT16", "FLOAT32")
    refused(SIGN, build(SIGN, types={"input_tensor": T.INT8, "output_tensor": T.UINT8}), level,
            "output_tensor.data_type", "UINT8", "INT8")
    for op in (MOD_T, MOD_F):
        refused(op, build(op, types={"a_tensor": T.INT32, "b_tensor": T.INT16, "output_tensor": T.INT32}), level,
                "b_tensor.data_type", "INT16", "INT32")
        refused(op, build(op, types={"a_tensor": T.INT32, "b_tensor": T.INT32, "output_tensor": T.UINT32}),
                level, "output_tensor.data_type", "UINT32", "INT32")
        refused(op, build(op, types={"a_tensor": T.FLOAT16, "b_tensor": T.FLOAT32, "output_tensor": T.FLOAT32}),
                level, "b_tensor.data_type", "FLOAT32", "FLOAT16")
        accepted(build(op, types={f: T.UINT16 for f in op.fields}), level)
    accepted(build(IS_NAN, types={"input_tensor": T.FLOAT16, "output_tensor": T.UINT8}), level)
    accepted(build(IS_INF, types={"input_tensor": T.FLOAT16, "output_tensor": T.UINT8}), level)


@pytest.mark.parametrize("level", [L.LEVEL_3_0, L.LEVEL_6_4], ids=lambda lv: lv.label)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_sizes_must_be_equal(op, level):
    for name in op.fields[1:]:
        other = TensorDesc(default_types(op)[name], (2, 3, 1, 6))
        refused(op, build(op, **{name: other}), level, f"{name}.sizes", "[2, 3, 1, 6]", "[2, 3, 1, 5]")
        # No implicit broadcasting: a size of 1 against 5 is refused too.
        other = TensorDesc(default_types(op)[name], (2, 3, 1, 1))
        refused(op, build(op, **{name: other}), level, f"{name}.sizes", "broadcast")
        # Same element count, different shape.
        other = TensorDesc(default_types(op)[name], (3, 2, 1, 5))
        refused(op, build(op, **{name: other}), level, f"{name}.sizes")
    # When the first tensor is the odd one out, the second tensor is named (it differs from the first).
    first = TensorDesc(default_types(op)[op.fields[0]], (2, 3, 1, 6))
    refused(op, build(op, **{op.fields[0]: first}), level, f"{op.fields[1]}.sizes")


@pytest.mark.parametrize("level", [L.LEVEL_3_0, L.LEVEL_5_0, L.LEVEL_6_4], ids=lambda lv: lv.label)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_dimension_counts_must_be_equal(op, level):
    for name in op.fields[1:]:
        other = TensorDesc(default_types(op)[name], (2, 3, 5))  # same element count as SIZES4, 3 dims
        refused(op, build(op, **{name: other}), level, f"{name}.sizes", "3 dimensions", "4")
        other = TensorDesc(default_types(op)[name], (1, 2, 3, 1, 5))
        refused(op, build(op, **{name: other}), level, f"{name}.sizes", "5 dimensions")


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_broadcast_by_zero_strides_accepted(op):
    for name in op.inputs:
        broadcast = TensorDesc(default_types(op)[name], SIZES4, strides=(0, 1, 0, 0))  # 3 distinct elements
        accepted(build(op, **{name: broadcast}), L.LEVEL_6_4)
        accepted(build(op, **{name: broadcast}), max(op.since, L.LEVEL_2_1))
        scalar = TensorDesc(default_types(op)[name], SIZES4, strides=(0, 0, 0, 0))
        accepted(build(op, **{name: scalar}), L.LEVEL_6_4)


# ---------------------------------------------------------------------------------------------------------------
# Dimension counts
# ---------------------------------------------------------------------------------------------------------------

def _dims_desc(op: Op, count: int):
    sizes = tuple([2, 3, 1, 2, 1, 1, 2, 1, 1][:count])
    return build(op, sizes)


@pytest.mark.parametrize("count", range(0, 10))
@pytest.mark.parametrize("level", LEVELS[1:], ids=lambda lv: lv.label)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_dimension_count_matrix(op, level, count):
    desc = _dims_desc(op, count)
    if level < op.since:
        refused_missing(op, desc, level)
    elif count in expected_dims(op, level):
        accepted(desc, level)
    else:
        dims = expected_dims(op, level)
        allowed = f"exactly {dims[0]}" if len(dims) == 1 else f"{dims[0]} to {dims[-1]}"
        refused(op, desc, level, f"{op.fields[0]}.sizes", f"{count} dimensions", level.label, allowed)


@pytest.mark.parametrize("op", [SIGN, IS_INF, MOD_F], ids=lambda o: o.name)
def test_dimension_count_boundaries(op):
    for count in (3, 5):
        refused(op, _dims_desc(op, count), L.LEVEL_2_1, f"{op.fields[0]}.sizes", "exactly 4")
    accepted(_dims_desc(op, 4), L.LEVEL_2_1)
    for level in (L.LEVEL_3_0, L.LEVEL_6_4):
        for count in (0, 9):
            refused(op, _dims_desc(op, count), level, f"{op.fields[0]}.sizes", f"{count} dimensions")
        for count in (1, 8):
            accepted(_dims_desc(op, count), level)


def test_dimension_count_only_output_wrong_before_3_0():
    desc = build(SIGN, output_tensor=TensorDesc(T.FLOAT32, (2, 3, 5)))
    refused(SIGN, desc, L.LEVEL_2_1, "output_tensor.sizes", "exactly 4")
    refused(SIGN, desc, L.LEVEL_3_0, "output_tensor.sizes", "must match")


# ---------------------------------------------------------------------------------------------------------------
# Sizes and element counts
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [0, -1])
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_size_at_least_one(op, bad):
    for name in op.fields:
        for i in range(4):
            sizes = list(SIZES4)
            sizes[i] = bad
            # Every tensor gets the bad size, so only the per-tensor rule can fire, on the first tensor...
            refused(op, build(op, sizes), L.LEVEL_6_4, f"{op.fields[0]}.sizes[{i}]", str(bad))
            # ...and a single bad tensor is named itself.
            tensor = TensorDesc(default_types(op)[name], tuple(sizes))
            refused(op, build(op, **{name: tensor}), L.LEVEL_2_1 if op.since <= L.LEVEL_2_1 else op.since,
                    f"{name}.sizes[{i}]", str(bad))


def test_element_count_limit():
    u8 = {"input_tensor": T.UINT8, "output_tensor": T.UINT8}
    assert 65535 * 65537 == 2**32 - 1
    accepted(build(SIGN, (65535, 65537), u8), L.LEVEL_6_4)
    accepted(build(SIGN, (65535, 65537), u8), L.LEVEL_3_0)
    refused(SIGN, build(SIGN, (65536, 65536), u8), L.LEVEL_6_4, "input_tensor.sizes", "4294967296")
    refused(SIGN, build(SIGN, (16,) * 8, u8), L.LEVEL_6_4, "input_tensor.sizes", "2^32")
    accepted(build(SIGN, (1, 1, 65535, 65537), u8), L.LEVEL_2_1)
    refused(SIGN, build(SIGN, (1, 1, 65536, 65536), u8), L.LEVEL_2_1, "input_tensor.sizes")
    # Only the output too large: the output is named.
    desc = build(MOD_F, (65535, 65537), output_tensor=TensorDesc(T.FLOAT32, (65536, 65536)))
    refused(MOD_F, desc, L.LEVEL_6_4, "output_tensor.sizes", "4294967296")
    # A broadcast input still counts its logical elements.
    desc = build(SIGN, (65536, 65536), u8, input_tensor=TensorDesc(T.UINT8, (65536, 65536), strides=(0, 0)))
    refused(SIGN, desc, L.LEVEL_6_4, "input_tensor.sizes")


# ---------------------------------------------------------------------------------------------------------------
# Strides and total sizes
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_strides_length(op):
    for name in op.fields:
        dt = default_types(op)[name]
        for strides in [(1,), (30, 10, 5, 5, 1), ()]:
            tensor = TensorDesc(dt, SIZES4, strides=strides)
            refused(op, build(op, **{name: tensor}), L.LEVEL_6_4, f"{name}.strides", str(list(strides)))
        accepted(build(op, **{name: TensorDesc(dt, SIZES4, strides=(15, 5, 5, 1))}), L.LEVEL_6_4)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_negative_strides(op):
    for name in op.fields:
        dt = default_types(op)[name]
        for i in range(4):
            strides = [15, 5, 5, 1]
            strides[i] = -strides[i]
            tensor = TensorDesc(dt, SIZES4, strides=tuple(strides), total_tensor_size_in_bytes=1024)
            refused(op, build(op, **{name: tensor}), L.LEVEL_6_4, f"{name}.strides[{i}]", str(strides[i]))


TOTAL_CASES = [
    # (dtype, sizes, strides, implied)
    (T.FLOAT32, (2, 3), None, 24),
    (T.FLOAT16, (3,), None, 8),
    (T.FLOAT32, (2, 3), (0, 1), 12),
    (T.FLOAT32, (2, 2), (4, 1), 24),
    (T.INT8, (5,), None, 8),
    (T.UINT8, (2, 3), (3, 1), 8),
    (T.INT16, (3, 2), (1, 3), 12),
    (T.FLOAT16, (2, 1, 3), (7, 100, 2), 24),  # last index 7 + 4 = 11 -> 12 elements of 2 bytes
]


@pytest.mark.parametrize("dtype, sizes, strides, implied", TOTAL_CASES, ids=[str(i) for i in range(len(TOTAL_CASES))])
@pytest.mark.parametrize("op", [SIGN, MOD_T], ids=lambda o: o.name)
def test_total_tensor_size(op, dtype, sizes, strides, implied):
    def tensor(total):
        return TensorDesc(dtype, sizes, strides=strides, total_tensor_size_in_bytes=total)

    assert tensor(None).total_tensor_size_in_bytes == implied
    for name in op.fields:
        for total in (implied - 1, implied - 4, 1, -implied):
            desc = build(op, sizes, {f: dtype for f in op.fields}, **{name: tensor(total)})
            refused(op, desc, L.LEVEL_6_4, f"{name}.total_tensor_size_in_bytes", str(total), str(implied))
        for total in (implied, implied + 1, implied + 4, 1 << 20):
            desc = build(op, sizes, {f: dtype for f in op.fields}, **{name: tensor(total)})
            if name == op.output and strides is not None and 0 in strides and sizes[strides.index(0)] > 1:
                continue  # a zero-stride output is refused for overlap, tested elsewhere
            accepted(desc, L.LEVEL_6_4)


def test_total_size_of_an_output_with_padding():
    # Output rows padded to 8 elements: implied (1*8 + 2 + 1) * 4 = 44 bytes.
    out = TensorDesc(T.FLOAT32, (2, 3), strides=(8, 1))
    assert out.total_tensor_size_in_bytes == 44
    accepted(build(SIGN, (2, 3), output_tensor=out), L.LEVEL_6_4)
    refused(SIGN, build(SIGN, (2, 3), output_tensor=dataclasses.replace(out, total_tensor_size_in_bytes=40)),
            L.LEVEL_6_4, "output_tensor.total_tensor_size_in_bytes", "40", "44")


# ---------------------------------------------------------------------------------------------------------------
# GuaranteedBaseOffsetAlignment
# ---------------------------------------------------------------------------------------------------------------

ALIGNMENTS = [
    (T.FLOAT32, 0, True), (T.FLOAT32, 1, False), (T.FLOAT32, 2, False), (T.FLOAT32, 3, False),
    (T.FLOAT32, 4, True), (T.FLOAT32, 6, False), (T.FLOAT32, 8, True), (T.FLOAT32, 12, False),
    (T.FLOAT32, 16, True), (T.FLOAT32, 256, True), (T.FLOAT32, -4, False), (T.FLOAT32, 1 << 20, True),
    (T.FLOAT16, 1, False), (T.FLOAT16, 2, True), (T.FLOAT16, 3, False), (T.FLOAT16, 4, True),
    (T.INT8, 1, True), (T.INT8, 2, True), (T.INT8, 3, False), (T.INT8, 0, True),
    (T.UINT8, 1, True), (T.UINT16, 1, False), (T.UINT16, 2, True),
    (T.INT64, 4, False), (T.INT64, 8, True), (T.UINT64, 16, True), (T.UINT64, 24, False),
]


@pytest.mark.parametrize("dtype, alignment, ok", ALIGNMENTS, ids=[f"{d.name}-{a}" for d, a, _ in ALIGNMENTS])
def test_guaranteed_base_offset_alignment(dtype, alignment, ok):
    for op in (SIGN, MOD_F):
        for name in op.fields:
            tensor = TensorDesc(dtype, SIZES4, guaranteed_base_offset_alignment=alignment)
            desc = build(op, types={f: dtype for f in op.fields}, **{name: tensor})
            if ok:
                accepted(desc, L.LEVEL_6_4)
            else:
                refused(op, desc, L.LEVEL_6_4, f"{name}.guaranteed_base_offset_alignment", str(alignment),
                        str(dtype.size))


def test_alignment_of_is_nan_tensors_uses_each_element_size():
    # Input FLOAT32 needs >= 4, output UINT8 accepts 1.
    desc = build(IS_NAN, input_tensor=TensorDesc(T.FLOAT32, SIZES4, guaranteed_base_offset_alignment=4),
                 output_tensor=TensorDesc(T.UINT8, SIZES4, guaranteed_base_offset_alignment=1))
    accepted(desc, L.LEVEL_2_0)
    desc = build(IS_NAN, input_tensor=TensorDesc(T.FLOAT32, SIZES4, guaranteed_base_offset_alignment=1))
    refused(IS_NAN, desc, L.LEVEL_2_0, "input_tensor.guaranteed_base_offset_alignment", "1")


# ---------------------------------------------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("level", [L.LEVEL_2_1, L.LEVEL_6_4], ids=lambda lv: lv.label)
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_owned_by_dml_inputs_only(op, level):
    level = max(level, op.since)
    owned = {name: TensorDesc(default_types(op)[name], SIZES4, flags=TensorFlags.OWNED_BY_DML) for name in op.fields}
    for name in op.inputs:
        accepted(build(op, **{name: owned[name]}), level)
    accepted(build(op, **{n: owned[n] for n in op.inputs}), level)
    refused(op, build(op, output_tensor=owned[op.output]), level, "output_tensor.flags", "OWNED_BY_DML")
    refused(op, build(op, **owned), level, "output_tensor.flags", "OWNED_BY_DML")
    # The int spelling of the flag is the same flag.
    refused(op, build(op, output_tensor=TensorDesc(default_types(op)[op.output], SIZES4, flags=1)), level,
            "output_tensor.flags")


@pytest.mark.parametrize("flags", [2, 3, 4])
def test_unknown_flag_bits_refused(flags):
    desc = build(SIGN, input_tensor=TensorDesc(T.FLOAT32, SIZES4, flags=flags))
    refused(SIGN, desc, L.LEVEL_6_4, "input_tensor.flags", str(flags))


# ---------------------------------------------------------------------------------------------------------------
# Infinity mode
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(IsInfinityMode) + ["EITHER", "positive", "DML_IS_INFINITY_MODE_NEGATIVE", 0, 1, 2])
@pytest.mark.parametrize("level", [L.LEVEL_2_1, L.LEVEL_3_0, L.LEVEL_6_4], ids=lambda lv: lv.label)
def test_infinity_modes_accepted(mode, level):
    desc = build(IS_INF, mode=mode)
    assert isinstance(desc.infinity_mode, IsInfinityMode)
    accepted(desc, level)


@pytest.mark.parametrize("mode", [3, -1, 255, "BOTH", "", None, "DML_IS_INFINITY_MODE_", 1.5])
def test_infinity_mode_invalid_refused_at_construction(mode):
    with pytest.raises(ValidationError) as info:
        IsInfinityDesc(TensorDesc(T.FLOAT32, SIZES4), TensorDesc(T.UINT8, SIZES4), mode)
    message = str(info.value)
    assert "ELEMENT_WISE_IS_INFINITY" in message
    assert "IsInfinityDesc.infinity_mode" in message
    assert repr(mode) in message


def test_infinity_mode_error_names_operator_and_field_like_other_refusals():
    with pytest.raises(ValidationError) as info:
        build(IS_INF, mode=3)
    assert info.value.field == "IsInfinityDesc.infinity_mode"
    assert info.value.operator == IS_INF.dml
    assert IS_INF.dml in str(info.value)


# ---------------------------------------------------------------------------------------------------------------
# Output overlap
# ---------------------------------------------------------------------------------------------------------------

def _addresses_distinct(sizes, strides) -> bool:
    offsets = [sum(i * s for i, s in zip(index, strides)) for index in itertools.product(*(range(n) for n in sizes))]
    return len(set(offsets)) == len(offsets)


OUTPUT_LAYOUTS = [
    # (sizes, strides, distinct)
    ((2, 3), (3, 1), True),  # packed
    ((2, 3), (1, 2), True),  # column-major (permuted)
    ((2, 2), (1, 2), True),
    ((3, 2), (2, 7), True),
    ((2, 3), (3, 2), True),  # interleaved: sorted-stride reasoning fails, addresses {0,2,4,3,5,7} distinct
    ((2, 3, 4), (3, 2, 8), True),  # interleaved and padded
    ((2, 3), (8, 1), True),  # padded rows
    ((1, 3), (0, 1), True),  # zero stride on a size-1 dimension is fine
    ((3, 1, 1), (1, 0, 0), True),
    ((2, 3), (0, 1), False),  # zero stride on a dimension of size 2
    ((4,), (0,), False),
    ((2, 2), (1, 1), False),
    ((2, 3), (2, 1), False),  # offsets 0,1,2,2,3,4
    ((3, 3), (2, 1), False),
    ((2, 3, 2), (3, 2, 4), False),  # i*3+j*2+k*4: (0,2,0)=4=(0,0,1)
]


@pytest.mark.parametrize("sizes, strides, distinct", OUTPUT_LAYOUTS, ids=[f"{s}-{t}" for s, t, _ in OUTPUT_LAYOUTS])
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_output_overlap(op, sizes, strides, distinct):
    assert _addresses_distinct(sizes, strides) == distinct  # the table itself
    out = TensorDesc(default_types(op)[op.output], sizes, strides=strides)
    desc = build(op, sizes, output_tensor=out)
    if distinct:
        accepted(desc, L.LEVEL_6_4)
    else:
        refused(op, desc, L.LEVEL_6_4, "output_tensor.strides", str(list(strides)), str(list(sizes)))


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_overlapping_inputs_are_fine(op):
    for name in op.inputs:
        for strides in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 1)]:
            tensor = TensorDesc(default_types(op)[name], (2, 3), strides=strides)
            accepted(build(op, (2, 3), **{name: tensor}), L.LEVEL_6_4)


def test_overlap_refused_at_4d_before_3_0():
    out = TensorDesc(T.FLOAT32, SIZES4, strides=(0, 5, 5, 1))
    refused(SIGN, build(SIGN, output_tensor=out), L.LEVEL_2_0, "output_tensor.strides")


def test_large_provably_distinct_output_accepted():
    from gpuops.validation import EXACT_OVERLAP_CHECK_LIMIT

    n = EXACT_OVERLAP_CHECK_LIMIT
    out = TensorDesc(T.UINT8, (n, 2), strides=(1, n))  # column-major, 2n elements
    accepted(build(SIGN, (n, 2), {"input_tensor": T.UINT8, "output_tensor": T.UINT8}, output_tensor=out),
             L.LEVEL_6_4)
    overlapping = TensorDesc(T.UINT8, (n, 2), strides=(1, 1))
    refused(SIGN, build(SIGN, (n, 2), {"input_tensor": T.UINT8, "output_tensor": T.UINT8},
                        output_tensor=overlapping), L.LEVEL_6_4, "output_tensor.strides")


def test_large_interleaved_output_refused_by_gpuops_decision():
    """gpuops decision (validation.py EXACT_OVERLAP_CHECK_LIMIT): above the limit an output whose non-overlap
    cannot be proven by sorted strides is refused rather than enumerated, even when its addresses are distinct."""
    from gpuops.validation import EXACT_OVERLAP_CHECK_LIMIT

    k = EXACT_OVERLAP_CHECK_LIMIT // 6 + 1
    sizes, strides = (2, 3, k), (3, 2, 8)
    assert _addresses_distinct((2, 3, 3), (3, 2, 8))
    out = TensorDesc(T.UINT8, sizes, strides=strides)
    refused(SIGN, build(SIGN, sizes, {"input_tensor": T.UINT8, "output_tensor": T.UINT8}, output_tensor=out),
            L.LEVEL_6_4, "output_tensor.strides")
    small = TensorDesc(T.UINT8, (2, 3, 1000), strides=strides)
    accepted(build(SIGN, (2, 3, 1000), {"input_tensor": T.UINT8, "output_tensor": T.UINT8}, output_tensor=small),
             L.LEVEL_6_4)


# ---------------------------------------------------------------------------------------------------------------
# Things that are not descriptions
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("obj", [None, "SIGN", 79, {"input_tensor": None}, SignDesc, TensorDesc(T.FLOAT32, (1,)),
                                 object()], ids=lambda o: type(o).__name__)
def test_non_descriptions_refused(obj):
    with pytest.raises(ValidationError) as info:
        validate(obj, L.LEVEL_6_4)
    assert "SignDesc" in str(info.value)  # lists the known descriptions


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_tensor_fields_that_are_not_tensor_descs(op):
    """Refused where the description is made (a list there used to surface as "unhashable type" from compile)."""
    for name in op.fields:
        for bad in (None, (2, 3, 1, 5), "FLOAT32", [1]):
            with pytest.raises(ValidationError) as info:
                build(op, **{name: bad})
            err, full = info.value, f"{op.cls}.{name}"
            assert err.field == full and err.operator == op.dml
            message = str(err)
            assert op.dml in message and full in message and repr(bad) in message and type(bad).__name__ in message


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_validate_refuses_a_tensor_field_set_past_construction(op):
    desc = build(op)
    object.__setattr__(desc, op.output, "FLOAT32")  # what only code that bypasses the dataclass can do
    refused(op, desc, L.LEVEL_6_4, op.output, "str")


# ---------------------------------------------------------------------------------------------------------------
# Rule precedence on a desc with several problems: the first tensor's first broken rule is named
# ---------------------------------------------------------------------------------------------------------------

def test_first_refusal_is_reported_in_field_order():
    bad_in = TensorDesc(T.FLOAT64, (2, 0), strides=(-1,), guaranteed_base_offset_alignment=3)
    bad_out = TensorDesc(T.FLOAT32, (2, 2), strides=(1, 1), flags=TensorFlags.OWNED_BY_DML)
    refused(SIGN, SignDesc(bad_in, bad_out), L.LEVEL_6_4, "input_tensor.data_type")
    refused(SIGN, SignDesc(dataclasses.replace(bad_in, data_type=T.FLOAT32), bad_out), L.LEVEL_6_4,
            "input_tensor.sizes[1]")
    # The operator's existence is checked before anything else.
    refused_missing(SIGN, SignDesc(bad_in, bad_out), L.LEVEL_1_0)


# ---------------------------------------------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------------------------------------------

EXAMPLES = int(os.environ.get("GPUOPS_HYPOTHESIS_EXAMPLES", "50"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _distinct_strides(draw, sizes) -> tuple[int, ...]:
    """Non-overlapping strides: dimensions nested in a random order, each with random padding."""
    order = draw(st.permutations(range(len(sizes))))
    strides = [0] * len(sizes)
    extent = 1
    for d in order:
        strides[d] = extent + draw(st.integers(0, 3))
        extent = strides[d] * (sizes[d] - 1) + extent
    return tuple(strides)


@st.composite
def tensor_layout(draw, data_type: DataType, sizes, is_output: bool) -> TensorDesc:
    layout = draw(st.sampled_from(["packed", "explicit_packed", "nested"] + ([] if is_output else ["broadcast"])))
    if layout == "packed":
        strides = None
    elif layout == "explicit_packed":
        strides = tuple(math.prod(sizes[i + 1:]) for i in range(len(sizes)))
    else:
        strides = _distinct_strides(draw, sizes)
        if layout == "broadcast":
            zeros = draw(st.lists(st.booleans(), min_size=len(sizes), max_size=len(sizes)))
            strides = tuple(0 if z else s for s, z in zip(strides, zeros))
    implied = TensorDesc(data_type, sizes, strides=strides).total_tensor_size_in_bytes
    total = draw(st.one_of(st.none(), st.just(implied), st.integers(implied, implied + 64)))
    alignment = draw(st.sampled_from([0] + [1 << k for k in range(9) if (1 << k) >= data_type.size]))
    flags = TensorFlags.NONE if is_output else draw(st.sampled_from([TensorFlags.NONE, TensorFlags.OWNED_BY_DML]))
    return TensorDesc(data_type, sizes, strides=strides, total_tensor_size_in_bytes=total,
                      guaranteed_base_offset_alignment=alignment, flags=flags)


@st.composite
def valid_case(draw):
    op = draw(st.sampled_from(OPS))
    level = draw(st.sampled_from(levels_of(op)))
    count = draw(st.sampled_from(expected_dims(op, level)))
    sizes = tuple(draw(st.lists(st.integers(1, 4), min_size=count, max_size=count)))
    table = expected_types(op, level)
    if op.same_type:
        dtype = draw(st.sampled_from(sorted(table[op.fields[0]])))
        types = {f: dtype for f in op.fields}
    else:
        types = {f: draw(st.sampled_from(sorted(table[f]))) for f in op.fields}
    args = {f: draw(tensor_layout(types[f], sizes, f == op.output)) for f in op.fields}
    for attribute in op.spec.attributes:
        args[attribute.name] = draw(st.sampled_from(attribute.values))
    return op, level, op.desc_type(**args)


MUTATIONS = ["data_type", "size_zero", "dim_count", "stride_length", "negative_stride", "total_too_small",
             "alignment", "output_flags", "output_overlap", "size_mismatch", "data_type_mismatch"]


@st.composite
def broken_case(draw):
    """A valid case with one field broken, and the field path validate must name."""
    op, level, desc = draw(valid_case())
    kind = draw(st.sampled_from(MUTATIONS))
    table = expected_types(op, level)
    name = op.output if kind in ("output_flags", "output_overlap") else draw(st.sampled_from(op.fields))
    tensor: TensorDesc = getattr(desc, name)
    count = tensor.dimension_count
    replace = dataclasses.replace
    if kind == "data_type":
        bad = draw(st.sampled_from([t for t in ALL_TYPES if t not in table[name]]))
        new, field = replace(tensor, data_type=bad), f"{name}.data_type"
    elif kind == "size_zero":
        i = draw(st.integers(0, count - 1))
        sizes = list(tensor.sizes)
        sizes[i] = draw(st.sampled_from([0, -1, -7]))
        new, field = replace(tensor, sizes=tuple(sizes)), f"{name}.sizes[{i}]"
    elif kind == "dim_count":
        bad = draw(st.sampled_from([c for c in range(10) if c not in expected_dims(op, level)]))
        new = replace(tensor, sizes=(1,) * bad, strides=None, total_tensor_size_in_bytes=None)
        field = f"{name}.sizes"
    elif kind == "stride_length":
        length = draw(st.sampled_from([n for n in (0, count - 1, count + 1, count + 3) if n >= 0 and n != count]))
        new, field = replace(tensor, strides=(1,) * length), f"{name}.strides"
    elif kind == "negative_stride":
        i = draw(st.integers(0, count - 1))
        strides = list(tensor.element_strides)
        strides[i] = -draw(st.integers(1, 100))
        new, field = replace(tensor, strides=tuple(strides)), f"{name}.strides[{i}]"
    elif kind == "total_too_small":
        implied = tensor.implied_size_in_bytes
        total = draw(st.integers(1, implied - 1)) if draw(st.booleans()) else -draw(st.integers(1, 100))
        new, field = replace(tensor, total_tensor_size_in_bytes=total), f"{name}.total_tensor_size_in_bytes"
    elif kind == "alignment":
        size = tensor.data_type.size
        bad = draw(st.sampled_from([3 * size, 5 * size, -size] + ([size // 2] if size > 1 else [])))
        new, field = replace(tensor, guaranteed_base_offset_alignment=bad), f"{name}.guaranteed_base_offset_alignment"
    elif kind == "output_flags":
        new, field = replace(tensor, flags=TensorFlags.OWNED_BY_DML), f"{name}.flags"
    elif kind == "output_overlap":
        assume(any(s > 1 for s in tensor.sizes))
        new, field = replace(tensor, strides=(0,) * count), f"{name}.strides"
    elif kind == "size_mismatch":
        assume(name != op.fields[0])
        i = draw(st.integers(0, count - 1))
        sizes = list(tensor.sizes)
        sizes[i] += draw(st.integers(1, 3))
        new = replace(tensor, sizes=tuple(sizes), total_tensor_size_in_bytes=None)
        field = f"{name}.sizes"
    else:  # data_type_mismatch
        assume(op.same_type and name != op.fields[0])
        others = [t for t in sorted(table[name]) if t != tensor.data_type]
        bad = draw(st.sampled_from(others))
        new = replace(tensor, data_type=bad, total_tensor_size_in_bytes=None, guaranteed_base_offset_alignment=0)
        field = f"{name}.data_type"
    return op, level, replace(desc, **{name: new}), field


@PROPERTY
@given(valid_case())
def test_property_valid_descriptions_accepted(case):
    op, level, desc = case
    validate(desc, level)
    validate(desc, level.label)
    validate(desc, int(level))
    assert hash(desc) == hash(dataclasses.replace(desc))
    # ...and refused below the operator's first level.
    for lower in LEVELS:
        if lower < op.since:
            refused_missing(op, desc, lower)


@PROPERTY
@given(valid_case())
def test_property_valid_descriptions_stay_valid_at_later_levels(case):
    op, level, desc = case
    # Support only grows with the level (4-D is valid before and after 3_0).
    for later in LEVELS:
        if later >= level:
            validate(desc, later)


@PROPERTY
@given(broken_case())
def test_property_one_broken_field_is_named(case):
    op, level, desc, field = case
    refused(op, desc, level, field)


@PROPERTY
@given(st.data())
def test_property_output_overlap_matches_brute_force(data):
    count = data.draw(st.integers(1, 4))
    sizes = tuple(data.draw(st.lists(st.integers(1, 4), min_size=count, max_size=count)))
    strides = tuple(data.draw(st.lists(st.integers(0, 9), min_size=count, max_size=count)))
    out = TensorDesc(T.FLOAT32, sizes, strides=strides)
    desc = build(SIGN, sizes, output_tensor=out)
    if _addresses_distinct(sizes, strides):
        accepted(desc, L.LEVEL_6_4)
    else:
        refused(SIGN, desc, L.LEVEL_6_4, "output_tensor.strides")
