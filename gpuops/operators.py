"""The five operators: their descriptions (frozen dataclasses) and their rows in one registry, and the operator
part of their kernels.

Everything gpuops knows about an operator is in its row: its tensors (the description's TensorDesc fields, inputs
first, the output last), DirectML's support rows, its WGSL and how it is built per type, its attributes, its NumPy
and PyTorch references, the ufunc whose type rules its NumPy-level function follows. Code elsewhere reads the rows
rather than naming operators. From a row, a description and the device's probed facts comes the Operation, the
operator part of every kernel key (gpuops/kernel.py), and the LoopRequest beside it. Adding an operator:
docs/architecture.md, "Adding an operator".
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .enums import DataType, FeatureLevel, IsInfinityMode
from .errors import Refusal, ValidationError, shown
from .kernel import Grid, LoopRequest, Operation
from .support import FLOATS, FOUR_D, INT64S, ONE_TO_EIGHT, SMALL_INTS, SupportRow, row_at
from .tensor import TensorDesc, frozen_description


def tensor_fields_of(cls: type) -> tuple[str, ...]:
    """The description class's TensorDesc fields, in their order: the inputs, then the output."""
    return tuple(name for name, annotation in cls.__annotations__.items() if annotation in ("TensorDesc", TensorDesc))


def operator_description(cls):
    """frozen_description, refusing at construction a tensor field that is not a TensorDesc: later it would
    surface as an unhashable key in a cache, or an attribute missing deep inside dispatch."""
    tensor_fields = tensor_fields_of(cls)
    own_post_init = cls.__dict__.get("__post_init__")

    def __post_init__(self) -> None:
        for name in tensor_fields:
            value = getattr(self, name)
            if not isinstance(value, TensorDesc):
                raise Refusal(f"DML_OPERATOR_{spec_of(self).name}", f"{type(self).__name__}.{name}",
                              f"{shown(value)} ({type(value).__name__}) is not a TensorDesc").error()
        if own_post_init is not None:
            own_post_init(self)

    cls.__post_init__ = __post_init__
    return frozen_description(cls)


@operator_description
class SignDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc


@operator_description
class IsNanDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc


@operator_description
class IsInfinityDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    infinity_mode: IsInfinityMode = IsInfinityMode.EITHER

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "infinity_mode", IsInfinityMode.parse(self.infinity_mode))
        except ValidationError:
            raise Refusal("DML_OPERATOR_ELEMENT_WISE_IS_INFINITY", "IsInfinityDesc.infinity_mode",
                          f"{shown(self.infinity_mode)} is not a mode; allowed: EITHER (0), POSITIVE (1), "
                          "NEGATIVE (2)").error() from None


@operator_description
class ModulusFloorDesc:
    a_tensor: TensorDesc
    b_tensor: TensorDesc
    output_tensor: TensorDesc


@operator_description
class ModulusTruncateDesc:
    a_tensor: TensorDesc
    b_tensor: TensorDesc
    output_tensor: TensorDesc


@dataclass(frozen=True)
class TypePolicy:
    """How an operator's kernel is built for one input type, where that differs from the default. Each choice
    was measured on the GPUs of docs/performance.md; the default is what every other type runs."""

    # The file in wgsl/lib/ giving the signed remainders of dtype/sint.wgsl (default: signed_by_magnitudes.wgsl,
    # magnitudes divided and the signs restored). int16 divides float32 values, signs and all, whose quotient is
    # exact from one rounding; int8 takes a table of signed reciprocals, so a remainder is one multiply-add.
    signed_remainder: str | None = None
    # Where b alone is the same on every row: divide a group of rows per invocation, b loaded once
    # (Grid.DIVISOR_ROWS, the rows written out; DIVISOR_ROWS_LOOPED, in a loop, for a kernel long enough that
    # four copies of it cost more than they save). None: the plain ROWS grid.
    divisor_rows: Grid | None = None
    # Units per invocation in linear kernels whose unit is a whole output chunk (default: one, for the most
    # workgroups): four where the kernel has enough instructions per element to gain from more work per invocation.
    linear_units_per_invocation: int | None = None
    # The kernel converts inexact float32 results to float16 and so depends on how pack2x16float rounds (the
    # device's probe, DeviceFacts.pack_rounds_to_nearest).
    pack_rounding: bool = False


DEFAULT_TYPE_POLICY = TypePolicy()


@dataclass(frozen=True)
class DeviceFacts:
    """What was probed on the device that an operation may depend on."""

    pack_rounds_to_nearest: bool = False  # pack2x16float rounds to nearest, ties to even, as NumPy rounds


@dataclass(frozen=True)
class TypeWgsl:
    """An operator's WGSL for one input type beyond its op file and the type's family: files relative to wgsl/,
    the WGSL constants they read, and, apart from them, a library keeping a table in workgroup memory
    (Operation.workgroup_file)."""

    files: tuple[str, ...] = ()
    constants: Mapping[str, int | bool] = field(default_factory=lambda: MappingProxyType({}))
    workgroup_file: str | None = None


# Where an operator whose row has error_flags keeps what its files note (note_errors), in every kernel of it.
ERROR_NOTES = "lib/error_notes.wgsl"

# What every operator needs of an element type (constants and predicates, wgsl/dtype/README.md): its family's file
# and the libraries that file is built on.
TYPE_FAMILIES: Mapping[DataType, tuple[str, ...]] = MappingProxyType({
    DataType.FLOAT32: ("lib/float_lanes.wgsl", "dtype/float32.wgsl"),
    DataType.FLOAT16: ("lib/float_lanes.wgsl", "dtype/float16.wgsl"),
    DataType.INT32: ("dtype/sint.wgsl",),
    DataType.INT16: ("dtype/sint.wgsl",),
    DataType.INT8: ("dtype/sint.wgsl",),
    DataType.UINT32: ("dtype/uint.wgsl",),
    DataType.UINT16: ("dtype/uint.wgsl",),
    DataType.UINT8: ("dtype/uint.wgsl",),
    DataType.INT64: ("lib/u64.wgsl", "dtype/sint64.wgsl"),
    DataType.UINT64: ("lib/u64.wgsl", "dtype/uint64.wgsl"),
})


@dataclass(frozen=True)
class Attribute:
    """A desc field that is not a tensor: a setting of DirectML's, such as IS_INFINITY's mode."""

    name: str  # the desc field, e.g. "infinity_mode"
    dml_name: str  # its name in DirectML's desc and in model files, e.g. "InfinityMode"
    parse: Callable[[Any], Any]  # a value as written (name, number or member) -> the member; refuses anything else
    default: Any
    values: tuple[Any, ...]  # every value it can take, in DirectML's order
    wgsl_constant: str | None = None  # the WGSL constant its value sets (None: the shader does not depend on it)

    @property
    def label(self) -> str:
        """'infinity mode': the attribute in messages."""
        return self.name.replace("_", " ")


NumpyReference = Callable[[Sequence[np.ndarray], Mapping[str, Any], DataType], np.ndarray]
TorchReference = Callable[[Any, Mapping[str, Any], bool], Callable[..., Any]]


@dataclass(frozen=True)
class OperatorSpec:
    """One operator's row: what it is called, its description, where DirectML supports it, its WGSL, its
    attributes and references."""

    name: str  # DML_OPERATOR_<name>
    dml_id: int
    desc_type: type  # its tensor fields (TensorDesc annotations) are the inputs in binding order, then the output
    support: tuple[SupportRow, ...]  # DirectML's rows, by feature level; the first is where the operator begins
    same_data_type: bool  # every tensor must have one DataType
    in_place: bool  # may the output alias an input (identical region)?
    shader: str  # file under wgsl/ops/: fn op over lanes
    # What the shader text depends on besides data types and layout: desc -> {WGSL constant: value}. None: the
    # attributes' wgsl_constant values.
    shader_constants: Callable[[object], dict[str, int]] | None = None
    # The operator's WGSL for an input type beyond its op file and the type's family (e.g. the modulus's
    # remainders and the division library they need): (type, its TypePolicy, the device's facts) -> TypeWgsl.
    type_wgsl: Callable[[DataType, TypePolicy, DeviceFacts], TypeWgsl] = lambda data_type, policy, facts: TypeWgsl()
    # Per input type, where its kernel differs from the default (TypePolicy).
    type_policies: Mapping[DataType, TypePolicy] = field(default_factory=lambda: MappingProxyType({}))
    attributes: tuple[Attribute, ...] = ()  # the desc's fields that are not tensors
    # The NumPy ufunc whose type resolution (NEP 50) the NumPy-level function follows: numpy_types.resolve.
    numpy_ufunc: np.ufunc | None = None
    # (inputs, attribute values, output DataType) -> what gpuops must produce, bit for bit: the oracle of the tests
    # and the benchmarks (gpuops/bench/reference.py).
    numpy_reference: NumpyReference | None = None
    # (torch module, attribute values, whether an out= tensor is given) -> f(*tensors, out): the same operation in
    # PyTorch, for the benchmarks' comparison (gpuops/bench/torch_compare.py).
    torch_reference: TorchReference | None = None
    # The output type DirectML gives where a caller names none (UINT8 for the predicates); None: the input's.
    default_output_type: DataType | None = None
    # Its WGSL notes where NumPy's ufunc raises a floating-point error (note_errors, wgsl/lib/error_notes.wgsl, in
    # every kernel of the operator; the type files give ERROR_FLAG, NumPy's bit), so that the NumPy-level function
    # can ask for kernels that report it, as NumPy does (operation's error_flags: Operation.error_flags).
    error_flags: bool = False

    def __post_init__(self) -> None:
        if self.shader_constants is None:
            constants = tuple((a.name, a.wgsl_constant) for a in self.attributes if a.wgsl_constant)
            object.__setattr__(self, "shader_constants",
                               lambda desc: {constant: int(getattr(desc, name)) for name, constant in constants})

    @functools.cached_property
    def tensor_fields(self) -> tuple[str, ...]:
        return tensor_fields_of(self.desc_type)

    @functools.cached_property
    def inputs(self) -> tuple[str, ...]:
        """Desc field names of the input tensors, in binding order."""
        return self.tensor_fields[:-1]

    @functools.cached_property
    def output(self) -> str:
        return self.tensor_fields[-1]

    @property
    def since(self) -> FeatureLevel:
        return self.support[0].since

    def support_row(self, level: FeatureLevel) -> SupportRow | None:
        """DirectML's row in force at `level`, or None where the operator does not exist there."""
        return row_at(self.support, level)

    def operation(self, desc: object, facts: DeviceFacts = DeviceFacts(), error_flags: bool = False) -> Operation:
        """The operator part of the kernels that run `desc` (whose tensors' types, attributes and the device's
        facts it depends on). `error_flags`: the variant that reports NumPy's floating-point errors into a flag word
        (Operation.error_flags), which the NumPy-level functions ask for; only an operator whose row has
        error_flags has it."""
        if error_flags and not self.error_flags:
            raise ValidationError(f"DML_OPERATOR_{self.name} reports no floating-point errors: its row's "
                                  "error_flags is False")
        input_type = getattr(desc, self.tensor_fields[0]).data_type
        output_type = getattr(desc, self.output).data_type
        own = self.type_wgsl(input_type, self.type_policy(input_type), facts)
        constants = {**self.shader_constants(desc), **own.constants}
        notes = (ERROR_NOTES,) if self.error_flags else ()
        return Operation(input_type, output_type, self.shader, notes + TYPE_FAMILIES[input_type] + own.files,
                         tuple(sorted(constants.items())), own.workgroup_file, error_flags)

    def loop_request(self, input_type: DataType) -> LoopRequest:
        """What the operator's kernels for `input_type` ask of the loop (its TypePolicy's measured choices)."""
        policy = self.type_policy(input_type)
        return LoopRequest(policy.divisor_rows, policy.linear_units_per_invocation)

    def type_policy(self, data_type: DataType) -> TypePolicy:
        return self.type_policies.get(data_type, DEFAULT_TYPE_POLICY)

    @property
    def numpy_name(self) -> str:
        return self.name.removeprefix("ELEMENT_WISE_").lower()

    def output_type(self, input_type: DataType) -> DataType:
        """The output type where a caller names none."""
        return self.default_output_type or input_type

    def modes(self) -> tuple[Mapping[str, Any], ...]:
        """Every combination of attribute values, {field: value}: IS_INFINITY's three modes; one empty combination
        for an operator without attributes."""
        names = tuple(a.name for a in self.attributes)
        return tuple(MappingProxyType(dict(zip(names, combination)))
                     for combination in itertools.product(*(a.values for a in self.attributes)))

    def attribute_values(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every attribute's value: those `given` parsed, the others their defaults; an unknown field or value is
        refused."""
        given = dict(given or {})
        values = {}
        for attribute in self.attributes:
            raw = given.pop(attribute.name, attribute.default)
            try:
                values[attribute.name] = attribute.parse(raw)
            except ValidationError as err:
                raise self._refusal(attribute.name, str(err)) from None
        for name, raw in given.items():
            known = ", ".join(a.name for a in self.attributes) or "none"
            raise self._refusal(name, f"{shown(raw)}: the operator has no attribute {name!r}; attributes: {known}")
        return values

    @property
    def mode_attribute(self) -> Attribute | None:
        """The attribute that one `mode` value sets (the benchmarks' --mode and results, the tests' cases): the
        operator's only attribute; None without one."""
        if len(self.attributes) > 1:
            raise self._refusal("mode", "one mode value cannot set the attributes "
                                        f"{', '.join(a.name for a in self.attributes)}; give them by name")
        return self.attributes[0] if self.attributes else None

    def mode_values(self, mode: Any = None) -> dict[str, Any]:
        """attribute_values with the mode attribute set to `mode` (its default where None); a mode for an operator
        without attributes is refused."""
        attribute = self.mode_attribute
        if mode is None:
            return self.attribute_values()
        if attribute is None:
            raise self._refusal("mode", f"{shown(mode)}: the operator has no mode")
        return self.attribute_values({attribute.name: mode})

    def _refusal(self, name: str, message: str) -> ValidationError:
        return Refusal(f"DML_OPERATOR_{self.name}", f"{self.desc_type.__name__}.{name}", message).error()


def _modulus_policies(floor: bool) -> Mapping[DataType, TypePolicy]:
    policies = {
        DataType.INT16: TypePolicy(signed_remainder="signed_by_estimate.wgsl"),
        DataType.INT8: TypePolicy(signed_remainder="signed_by_reciprocals.wgsl", divisor_rows=Grid.DIVISOR_ROWS),
        DataType.INT64: TypePolicy(divisor_rows=Grid.DIVISOR_ROWS),
        DataType.FLOAT16: TypePolicy(divisor_rows=Grid.DIVISOR_ROWS_LOOPED, pack_rounding=floor),
    }
    if floor:
        policies[DataType.FLOAT32] = TypePolicy(linear_units_per_invocation=4)
    return MappingProxyType(policies)


RECIPROCAL_TABLE = "lib/reciprocal_table.wgsl"
# magnitude_rem, integer magnitudes' remainders (wgsl/ops/modulus/lanes.wgsl takes them lane by lane), per type:
# 8-bit types by the table of reciprocals, uint16 by a float estimate of the quotient, the others by `%`.
_MAGNITUDE_DIVISION = {DataType.UINT8: ("lib/divide_by_reciprocals.wgsl",),
                       DataType.INT8: ("lib/divide_by_reciprocals.wgsl",),
                       DataType.UINT16: ("lib/rem_by_estimate.wgsl", "lib/divide_by_estimate.wgsl")}


def _modulus_wgsl(data_type: DataType, policy: TypePolicy, facts: DeviceFacts) -> TypeWgsl:
    """The remainders of the input type's family (wgsl/ops/modulus/) and the libraries they are built on. Integer
    lanes divide their magnitudes (_MAGNITUDE_DIVISION), signed ones putting the signs back
    (lib/signed_by_magnitudes.wgsl) unless the type's policy names remainders of their own; every 8-bit division
    reads the table of reciprocals in workgroup memory. float16 MODULUS_FLOOR rounds as the device's pack2x16float
    was found to (lib/f16_bits.wgsl: F16_PACK_ROUNDS_TO_NEAREST)."""
    if data_type == DataType.FLOAT32:
        return TypeWgsl(("lib/f32_bits.wgsl", "lib/rem_by_estimate.wgsl", "ops/modulus/float32.wgsl"))
    if data_type == DataType.FLOAT16:
        rounds = policy.pack_rounding and facts.pack_rounds_to_nearest
        return TypeWgsl(("lib/f16_bits.wgsl", "ops/modulus/float16.wgsl"),
                        MappingProxyType({"F16_PACK_ROUNDS_TO_NEAREST": rounds}))
    if data_type in (DataType.INT64, DataType.UINT64):
        return TypeWgsl((f"ops/modulus/{'sint64' if data_type == DataType.INT64 else 'uint64'}.wgsl",))
    signed = data_type in (DataType.INT8, DataType.INT16, DataType.INT32)
    remainders = (policy.signed_remainder or "signed_by_magnitudes.wgsl") if signed else None
    files: tuple[str, ...] = ()
    if remainders in (None, "signed_by_magnitudes.wgsl"):
        files += _MAGNITUDE_DIVISION.get(data_type, ("lib/divide_plain.wgsl",)) + ("ops/modulus/lanes.wgsl",)
    if remainders is not None:
        files += (f"lib/{remainders}",)
    files += (f"ops/modulus/{'sint' if signed else 'uint'}.wgsl",)
    return TypeWgsl(files, workgroup_file=RECIPROCAL_TABLE if data_type.size == 1 else None)


def _sign(inputs: Sequence[np.ndarray], attributes: Mapping[str, Any], out_type: DataType) -> np.ndarray:
    (x,) = inputs
    result = np.sign(x)
    if x.dtype.kind == "f":  # gpuops decision: NaN and -0 give +0
        result = np.where(np.isnan(x) | (x == 0), x.dtype.type(0), result)
    return result.astype(x.dtype)


_INFINITY_TESTS = {IsInfinityMode.EITHER: (np.isinf, "isinf"), IsInfinityMode.POSITIVE: (np.isposinf, "isposinf"),
                   IsInfinityMode.NEGATIVE: (np.isneginf, "isneginf")}  # NumPy's test, torch's function's name


def _torch_is_nan(torch, attributes: Mapping[str, Any], out_given: bool):
    if out_given:  # isnan has no out=; x != x is the same test and takes one (a strided output needs it)
        return lambda x, out: torch.ne(x, x, out=out)
    return lambda x, out: torch.isnan(x)


def _torch_is_infinity(torch, attributes: Mapping[str, Any], out_given: bool):
    test = getattr(torch, _INFINITY_TESTS[attributes["infinity_mode"]][1])
    return lambda x, out: test(x)


INFINITY_MODE = Attribute("infinity_mode", "InfinityMode", IsInfinityMode.parse, IsInfinityMode.EITHER,
                          tuple(IsInfinityMode), wgsl_constant="INFINITY_MODE")

_FLOATS_AND_SMALL_INTS = FLOATS | SMALL_INTS  # SIGN and the modulus from 2_1
_MODULUS_SUPPORT = (SupportRow(FeatureLevel.LEVEL_2_1, FOUR_D, _FLOATS_AND_SMALL_INTS),
                    SupportRow(FeatureLevel.LEVEL_3_0, ONE_TO_EIGHT, _FLOATS_AND_SMALL_INTS),
                    SupportRow(FeatureLevel.LEVEL_6_0, ONE_TO_EIGHT, _FLOATS_AND_SMALL_INTS | INT64S))
_UINT8 = frozenset({DataType.UINT8})

OPERATORS: tuple[OperatorSpec, ...] = (
    OperatorSpec("ELEMENT_WISE_SIGN", 79, SignDesc,
                 support=(SupportRow(FeatureLevel.LEVEL_2_0, FOUR_D, FLOATS),
                          SupportRow(FeatureLevel.LEVEL_2_1, FOUR_D, _FLOATS_AND_SMALL_INTS),
                          SupportRow(FeatureLevel.LEVEL_3_0, ONE_TO_EIGHT, _FLOATS_AND_SMALL_INTS),
                          SupportRow(FeatureLevel.LEVEL_4_1, ONE_TO_EIGHT, _FLOATS_AND_SMALL_INTS | INT64S)),
                 same_data_type=True, in_place=True, shader="sign.wgsl",
                 numpy_ufunc=np.sign, numpy_reference=_sign,
                 torch_reference=lambda torch, attributes, out_given: lambda x, out: torch.sign(x, out=out)),
    OperatorSpec("ELEMENT_WISE_IS_NAN", 80, IsNanDesc,
                 support=(SupportRow(FeatureLevel.LEVEL_2_0, FOUR_D, FLOATS, _UINT8),
                          SupportRow(FeatureLevel.LEVEL_3_0, ONE_TO_EIGHT, FLOATS, _UINT8 | {DataType.UINT32})),
                 same_data_type=False, in_place=False, shader="is_nan.wgsl",
                 numpy_ufunc=np.isnan,
                 numpy_reference=lambda inputs, attributes, out_type: np.isnan(*inputs).astype(out_type.numpy_dtype),
                 torch_reference=_torch_is_nan, default_output_type=DataType.UINT8),
    OperatorSpec("ELEMENT_WISE_IS_INFINITY", 100, IsInfinityDesc,
                 support=(SupportRow(FeatureLevel.LEVEL_2_1, FOUR_D, FLOATS, _UINT8),
                          SupportRow(FeatureLevel.LEVEL_3_0, ONE_TO_EIGHT, FLOATS, _UINT8)),
                 same_data_type=False, in_place=False, shader="is_infinity.wgsl",
                 attributes=(INFINITY_MODE,),
                 numpy_ufunc=np.isinf,  # the three modes take np.isinf's types
                 numpy_reference=lambda inputs, attributes, out_type:
                     _INFINITY_TESTS[attributes["infinity_mode"]][0](*inputs).astype(out_type.numpy_dtype),
                 torch_reference=_torch_is_infinity, default_output_type=DataType.UINT8),
    OperatorSpec("ELEMENT_WISE_MODULUS_TRUNCATE", 101, ModulusTruncateDesc, support=_MODULUS_SUPPORT,
                 same_data_type=True, in_place=True, shader="modulus/truncate.wgsl", type_wgsl=_modulus_wgsl,
                 error_flags=True,
                 type_policies=_modulus_policies(floor=False),
                 numpy_ufunc=np.fmod, numpy_reference=lambda inputs, attributes, out_type: np.fmod(*inputs),
                 torch_reference=lambda torch, attributes, out_given: lambda a, b, out: torch.fmod(a, b, out=out)),
    OperatorSpec("ELEMENT_WISE_MODULUS_FLOOR", 102, ModulusFloorDesc, support=_MODULUS_SUPPORT,
                 same_data_type=True, in_place=True, shader="modulus/floor.wgsl", type_wgsl=_modulus_wgsl,
                 error_flags=True,
                 type_policies=_modulus_policies(floor=True),
                 numpy_ufunc=np.remainder, numpy_reference=lambda inputs, attributes, out_type: np.remainder(*inputs),
                 torch_reference=lambda torch, attributes, out_given:
                     lambda a, b, out: torch.remainder(a, b, out=out)),
)

_BY_DESC_TYPE = {spec.desc_type: spec for spec in OPERATORS}
_BY_NAME = {spec.name: spec for spec in OPERATORS}


def spec_of(desc: object) -> OperatorSpec:
    """The row of a desc instance; anything else is refused."""
    spec = _BY_DESC_TYPE.get(type(desc))
    if spec is None:
        known = ", ".join(s.desc_type.__name__ for s in OPERATORS)
        raise ValidationError(f"{type(desc).__name__} is not an operator description gpuops knows; known: {known}")
    return spec


def spec_by_name(name: str) -> OperatorSpec:
    """'DML_OPERATOR_ELEMENT_WISE_SIGN', 'ELEMENT_WISE_SIGN' or 'sign'."""
    key = name.strip().upper().removeprefix("DML_OPERATOR_")
    spec = _BY_NAME.get(key) or _BY_NAME.get("ELEMENT_WISE_" + key)
    if spec is None:
        known = ", ".join(_BY_NAME)
        raise ValidationError(f"operator {name!r} is not implemented by gpuops; implemented: {known}")
    return spec

