"""DxDispatch model files, run on WebGPU: the format DirectML users already write.

Two stages, so that a malformed model never touches the GPU:

- `load_model` / `parse_model` read the JSON into frozen dataclasses and check everything that can be checked
  without a device: every key, every value, each operator description (gpuops.validate at the chosen feature level)
  and each binding's offset and size. Every refusal is a `ModelError` naming the JSON path of the bad key, e.g.
  ``resources.A.initialValuesDataType: unknown data type 'FLOAT99'``.
- `ModelRunner` allocates the resources as wgpu buffers, compiles the dispatchables, checks the bindings of every
  dispatch against the real buffers (in-place rules, overlaps), then runs the commands in order, timing each dispatch
  like DxDispatch (-i iterations, -r dispatches per iteration, the first -w samples cold).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import wgpu

from ..device import Binding, CompiledOperator, Device
from ..enums import DataType, FeatureLevel, TensorFlags
from ..errors import GpuOpsError, ValidationError
from ..operators import OPERATORS, Attribute, OperatorSpec, spec_by_name
from ..tensor import MINIMUM_BUFFER_TENSOR_ALIGNMENT, TensorDesc
from ..validation import validate, validate_bindings
from .ticks import split_writes
from .timing import GpuTimer
from .workload import buffer_usage

OTHER_DISPATCHABLES = {"hlsl": "HLSL compute shaders", "onnx": "ONNX models",
                       "dmlserializedgraph": "serialized DirectML graphs"}
EXECUTION_FLAGS = ("NONE", "ALLOW_HALF_PRECISION_COMPUTATION", "DISABLE_META_COMMANDS", "DESCRIPTORS_VOLATILE")
TENSOR_ATTRIBUTES = {"data_type": "DataType", "sizes": "Sizes", "strides": "Strides",
                     "total_tensor_size_in_bytes": "TotalTensorSizeInBytes",
                     "guaranteed_base_offset_alignment": "GuaranteedBaseOffsetAlignment", "flags": "Flags"}
FLOAT_WORDS = {"nan": math.nan, "+nan": math.nan, "-nan": -math.nan, "inf": math.inf, "+inf": math.inf,
               "infinity": math.inf, "+infinity": math.inf, "-inf": -math.inf, "-infinity": -math.inf}


class ModelError(GpuOpsError):
    """A model the runner refuses; `path` is the JSON path of the offending key ('' for the whole file)."""

    def __init__(self, path: str, message: str):
        self.path, self.message = path, message
        super().__init__(f"{path}: {message}" if path else message)


def dml_name(field: str) -> str:
    """A desc field by its DirectML name: 'a_tensor' -> 'ATensor', 'infinity_mode' -> 'InfinityMode'."""
    return "".join(part.capitalize() for part in field.split("_"))


# ------------------------------------------------------------------------------------------------ the model

@dataclass(frozen=True)
class Resource:
    """A buffer: its initializer's data type and values, where they start, and its size in bytes."""

    name: str
    data_type: DataType
    values: np.ndarray  # flat, of data_type
    offset: int  # initialValuesOffsetInBytes
    size: int  # bytes (a multiple of 4, at least offset + values)

    @property
    def value_count(self) -> int:
        return int(self.values.size)


@dataclass(frozen=True)
class BindingRef:
    """A region of a resource bound to a tensor: `size` None means up to the resource's declared size."""

    resource: str
    byte_offset: int
    size: int | None
    path: str


@dataclass(frozen=True)
class Dispatchable:
    name: str
    spec: OperatorSpec
    desc: object
    init_bindings: dict  # desc field -> BindingRef, for OWNED_BY_DML inputs (bound once at initialization)
    execution_flags: tuple[str, ...]


@dataclass(frozen=True)
class DispatchCommand:
    path: str
    dispatchable: str
    bindings: dict  # desc field -> BindingRef


@dataclass(frozen=True)
class PrintCommand:
    path: str
    resource: str


@dataclass(frozen=True)
class WriteFileCommand:
    path: str
    resource: str
    target: Path
    dimensions: tuple[int, ...] | None


Command = DispatchCommand | PrintCommand | WriteFileCommand


@dataclass(frozen=True)
class Model:
    source: Path | None
    feature_level: FeatureLevel
    resources: dict  # name -> Resource
    dispatchables: dict  # name -> Dispatchable
    commands: tuple


# --------------------------------------------------------------------------------------- JSON access helpers

def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return {str: "a string", int: "a number", float: "a number", list: "an array", dict: "an object"}.get(
        type(value), type(value).__name__)


def _object(value, path: str, what: str = "an object") -> dict:
    if not isinstance(value, dict):
        raise ModelError(path, f"expected {what}, got {_kind(value)}")
    return value


def _array(value, path: str, what: str = "an array") -> list:
    if not isinstance(value, list):
        raise ModelError(path, f"expected {what}, got {_kind(value)}")
    return value


def _string(value, path: str) -> str:
    if not isinstance(value, str):
        raise ModelError(path, f"expected a string, got {_kind(value)}")
    return value


def _integer(value, path: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelError(path, f"expected an integer, got {_kind(value)} {value!r}" if value is not None
                         else "expected an integer, got null")
    if value < minimum:
        raise ModelError(path, f"{value}; must be at least {minimum}")
    return value


def _required(obj: dict, key: str, path: str, why: str = ""):
    if key not in obj:
        raise ModelError(_key(path, key), "missing (required)" + (f"; {why}" if why else ""))
    return obj[key]


def _known_keys(obj: dict, allowed, path: str) -> None:
    for key in obj:
        if key not in allowed:
            raise ModelError(_key(path, key), f"unknown key; expected: {', '.join(allowed)}")


# ------------------------------------------------------------------------------------------------- parsing

def load_model(path: str | Path, feature_level: FeatureLevel | str | int = FeatureLevel.LEVEL_6_4) -> Model:
    """Read and check a model file (no GPU work)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError("", f"cannot read the model: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ModelError("", "the model is not UTF-8 text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError("", f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse_model(doc, path.parent, feature_level, source=path)


def parse_model(doc, base_dir: str | Path = ".", feature_level: FeatureLevel | str | int = FeatureLevel.LEVEL_6_4,
                source: Path | None = None) -> Model:
    """Check a decoded model; file paths in it are looked up next to `base_dir`, then in the current directory."""
    try:
        level = FeatureLevel.parse(feature_level)
    except ValueError as exc:
        raise ModelError("", str(exc)) from None
    if not isinstance(doc, dict):
        raise ModelError("", f"the top level must be an object with resources, dispatchables and commands; "
                             f"got {_kind(doc)}")
    _known_keys(doc, ("$schema", "resources", "dispatchables", "commands"), "")
    why = "a model has resources, dispatchables and commands"
    raw_resources = _object(_required(doc, "resources", "", why), "resources")
    raw_dispatchables = _object(_required(doc, "dispatchables", "", why), "dispatchables")
    raw_commands = _array(_required(doc, "commands", "", why), "commands")
    base = Path(base_dir)
    resources = {name: _parse_resource(name, raw, f"resources.{name}", base) for name, raw in raw_resources.items()}
    dispatchables = {name: _parse_dispatchable(name, raw, f"dispatchables.{name}", level, resources)
                     for name, raw in raw_dispatchables.items()}
    commands = tuple(_parse_command(raw, f"commands[{i}]", resources, dispatchables)
                     for i, raw in enumerate(raw_commands))
    return Model(source, level, resources, dispatchables, commands)


# resources --------------------------------------------------------------------------------------------------

def _parse_resource(name: str, raw, path: str, base: Path) -> Resource:
    obj = _object(raw, path)
    _known_keys(obj, ("initialValuesDataType", "initialValues", "sizeInBytes", "initialValuesOffsetInBytes"), path)
    initial = _required(obj, "initialValues", path)
    data_type = None
    if "initialValuesDataType" in obj:
        data_type = _parse_resource_type(obj["initialValuesDataType"], _key(path, "initialValuesDataType"))
    values_path = _key(path, "initialValues")
    is_npy = isinstance(initial, dict) and str(initial.get("sourcePath", "")).lower().endswith(".npy")
    if data_type is None and not is_npy:
        _required(obj, "initialValuesDataType", path, "only a .npy source carries its own data type")
    values = _parse_values(initial, data_type, values_path, base)
    if data_type is None:
        data_type = DataType.from_numpy(values.dtype)
    offset = _integer(obj.get("initialValuesOffsetInBytes", 0), _key(path, "initialValuesOffsetInBytes"))
    needed = offset + values.nbytes
    size = -(-needed // 4) * 4
    if "sizeInBytes" in obj:
        declared = _integer(obj["sizeInBytes"], _key(path, "sizeInBytes"))
        if declared < needed:
            raise ModelError(_key(path, "sizeInBytes"), f"{declared} is smaller than the {needed} bytes the initial "
                                                        f"values need ({values.size} x {data_type.name}"
                                                        + (f" at offset {offset}" if offset else "") + ")")
        size = -(-declared // 4) * 4  # DirectML's 4-byte alignment, like DxDispatch
    return Resource(name, data_type, values, offset, size)


def _parse_resource_type(raw, path: str) -> DataType:
    text = _string(raw, path)
    try:
        data_type = DataType.parse(text)
    except (ValueError, KeyError):
        raise ModelError(path, f"unknown data type {text!r}") from None
    if data_type.numpy_dtype is None:
        reason = ("list initializers (HLSL constant buffers) are not supported" if data_type == DataType.UNKNOWN
                  else "4-bit types are not supported")
        raise ModelError(path, f"{data_type.name}: {reason}")
    return data_type


def _parse_values(raw, data_type: DataType | None, path: str, base: Path) -> np.ndarray:
    if isinstance(raw, list):
        if not raw:
            raise ModelError(path, "an empty array; give at least one value")
        return _array_values(raw, data_type, path)
    obj = _object(raw, path, "an array of values or an initializer object")
    if "sourcePath" in obj:
        _known_keys(obj, ("sourcePath",), path)
        return _file_values(obj["sourcePath"], data_type, _key(path, "sourcePath"), base)
    if "valueStart" in obj or "valueDelta" in obj:
        _known_keys(obj, ("valueCount", "valueStart", "valueDelta"), path)
        count = _value_count(_required(obj, "valueCount", path), _key(path, "valueCount"))
        start = _number(_required(obj, "valueStart", path), data_type, _key(path, "valueStart"))
        delta = _number(_required(obj, "valueDelta", path), data_type, _key(path, "valueDelta"))
        return _sequence(count, start, delta, data_type, path)
    if "value" in obj or "valueCount" in obj:
        _known_keys(obj, ("valueCount", "value"), path)
        count = _value_count(_required(obj, "valueCount", path), _key(path, "valueCount"))
        value = _number(_required(obj, "value", path), data_type, _key(path, "value"))
        return _typed([value], data_type, path).repeat(count)
    raise ModelError(path, "expected an array, {valueCount, value}, {valueCount, valueStart, valueDelta} or "
                           "{sourcePath}")


def _value_count(raw, path: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ModelError(path, f"{json.dumps(raw)}; valueCount must be a positive integer")
    return raw


def _number(value, data_type: DataType, path: str) -> int | float:
    """One JSON value as a number of `data_type`: floats also take 'nan'/'inf'/'-inf'; integers must fit."""
    dtype = data_type.numpy_dtype
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ModelError(path, f"expected a number, got {_kind(value)}")
    if isinstance(value, str):
        if dtype.kind != "f":
            raise ModelError(path, f"{value!r}: strings ('nan', 'inf', '-inf') are for floating-point types, "
                                   f"not {data_type.name}")
        word = value.strip().lower()
        if word not in FLOAT_WORDS:
            raise ModelError(path, f"{value!r} is not a number; the strings allowed are 'nan', 'inf' and '-inf'")
        return FLOAT_WORDS[word]
    if dtype.kind == "f":
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ModelError(path, f"{value!r} is not an integer; {data_type.name} holds integers")
        value = int(value)
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise ModelError(path, f"{value} does not fit {data_type.name} ({info.min} to {info.max})")
    return value


def _typed(values: list, data_type: DataType, path: str) -> np.ndarray:
    with np.errstate(over="ignore"):  # 1e40 as FLOAT32 is inf, as in C++
        return np.array(values, dtype=data_type.numpy_dtype)


def _array_values(raw: list, data_type: DataType, path: str) -> np.ndarray:
    return _typed([_number(v, data_type, f"{path}[{i}]") for i, v in enumerate(raw)], data_type, path)


def _sequence(count: int, start, delta, data_type: DataType, path: str) -> np.ndarray:
    """start + i * delta: in double precision rounded once for floats, exactly for integers (which must fit)."""
    dtype = data_type.numpy_dtype
    if dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            return (start + np.arange(count, dtype=np.float64) * delta).astype(dtype)
    last = start + (count - 1) * delta
    info = np.iinfo(dtype)
    if not info.min <= last <= info.max:
        raise ModelError(path, f"the sequence reaches {last}, which does not fit {data_type.name} "
                               f"({info.min} to {info.max})")
    return (np.arange(count, dtype=object) * delta + start).astype(dtype)


def _file_values(raw, data_type: DataType | None, path: str, base: Path) -> np.ndarray:
    name = _string(raw, path)
    candidates = [base / name, Path(name)] if not Path(name).is_absolute() else [Path(name)]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        raise ModelError(path, f"{name!r} not found next to the model ({base}) or in the current directory")
    suffix = found.suffix.lower()
    if suffix == ".npy":
        try:
            array = np.load(found, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ModelError(path, f"{name!r} is not a readable .npy file: {exc}") from None
        file_type = DataType.from_numpy(array.dtype)
        if file_type is None or file_type.numpy_dtype is None:
            raise ModelError(path, f"{name!r} holds {array.dtype}, which is no DirectML data type")
        if data_type is not None and file_type != data_type:
            raise ModelError(path, f"{name!r} holds {file_type.name} but initialValuesDataType is {data_type.name}")
        if array.size == 0:
            raise ModelError(path, f"{name!r} holds no values")
        return np.ascontiguousarray(array).reshape(-1)
    if suffix in (".dat", ".bin"):
        raw_bytes = found.read_bytes()
        if len(raw_bytes) == 0 or len(raw_bytes) % data_type.size:
            raise ModelError(path, f"{name!r} has {len(raw_bytes)} bytes, not a whole number of "
                                   f"{data_type.name} values")
        return np.frombuffer(raw_bytes, data_type.numpy_dtype).copy()
    raise ModelError(path, f"{name!r}: only .npy, .dat and .bin sources are supported")


# dispatchables ----------------------------------------------------------------------------------------------

def _parse_dispatchable(name: str, raw, path: str, level: FeatureLevel, resources: dict) -> Dispatchable:
    obj = _object(raw, path)
    type_name = _string(_required(obj, "type", path), _key(path, "type"))
    spec = _operator(type_name, _key(path, "type"))
    _known_keys(obj, ("type", "desc", "Desc", "executionFlags", "bindings", "dmlCompileType"), path)
    desc_key = "desc" if "desc" in obj or "Desc" not in obj else "Desc"
    desc_path = _key(path, desc_key)
    desc = _parse_desc(spec, _required(obj, desc_key, path), desc_path, level)
    flags = _execution_flags(obj.get("executionFlags", ["NONE"]), _key(path, "executionFlags"))
    owned = {f for f in spec.inputs if getattr(desc, f).flags & TensorFlags.OWNED_BY_DML}
    init_bindings = {}
    if "bindings" in obj:
        bindings_path = _key(path, "bindings")
        for bind_point, value in _object(obj["bindings"], bindings_path).items():
            field = _bind_point(spec, bind_point, bindings_path)
            point_path = _key(bindings_path, bind_point)
            if field not in owned:
                raise ModelError(point_path, f"initialization bindings are for OWNED_BY_DML inputs; "
                                             f"{desc_path}.{bind_point}.Flags is not OWNED_BY_DML")
            init_bindings[field] = _binding(value, point_path, resources, getattr(desc, field))
    for field in sorted(owned - set(init_bindings)):
        raise ModelError(_key(path, "bindings"), f"{dml_name(field)} is OWNED_BY_DML, so it must be bound here "
                                                 "(at initialization)")
    return Dispatchable(name, spec, desc, init_bindings, flags)


def _operator(type_name: str, path: str) -> OperatorSpec:
    if type_name.lower() in OTHER_DISPATCHABLES:
        raise ModelError(path, f"'{type_name}' dispatchables ({OTHER_DISPATCHABLES[type_name.lower()]}) are not "
                               f"supported; gpuops runs the DirectML operators {_implemented()}")
    try:
        return spec_by_name(type_name)
    except ValidationError:
        full = "DML_OPERATOR_" + type_name.strip().upper().removeprefix("DML_OPERATOR_")
        raise ModelError(path, f"{full} is not implemented by gpuops; implemented: {_implemented()}") from None


def _implemented() -> str:
    return ", ".join(f"DML_OPERATOR_{spec.name}" for spec in OPERATORS)


def _execution_flags(raw, path: str) -> tuple[str, ...]:
    items = [raw] if isinstance(raw, str) else _array(raw, path, "a flag name or an array of them")
    flags = []
    for i, item in enumerate(items):
        item_path = f"{path}[{i}]" if not isinstance(raw, str) else path
        word = _string(item, item_path).strip().upper().removeprefix("DML_EXECUTION_FLAG_")
        if word not in EXECUTION_FLAGS:
            raise ModelError(item_path, f"unknown execution flag {item!r}; allowed: {', '.join(EXECUTION_FLAGS)}")
        flags.append(word)
    return tuple(flags)


def _parse_desc(spec: OperatorSpec, raw, path: str, level: FeatureLevel) -> object:
    obj = _object(raw, path)
    tensor_names = {dml_name(field): field for field in spec.tensor_fields}
    attributes = {attribute.dml_name: attribute for attribute in spec.attributes}
    _known_keys(obj, list(tensor_names) + list(attributes), path)
    kwargs = {field: _parse_tensor(_required(obj, key, path), _key(path, key)) for key, field in tensor_names.items()}
    for key, attribute in attributes.items():
        if key in obj:
            kwargs[attribute.name] = _attribute(attribute, obj[key], _key(path, key))
    desc = spec.desc_type(**kwargs)
    try:
        validate(desc, level)
    except ValidationError as err:
        raise _translate(err, path, type_path=path.rsplit(".", 1)[0] + ".type") from None
    return desc


def _attribute(attribute: Attribute, raw, path: str):
    """An attribute's value: a DirectML enum name (with or without its prefix) or number."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise ModelError(path, f"{attribute.label}: expected a name or number, got {_kind(raw)}")
    try:
        return attribute.parse(raw)
    except (ValueError, KeyError):
        allowed = ", ".join(f"{value.name} ({int(value)})" for value in attribute.values)
        raise ModelError(path, f"unknown {attribute.label} {raw!r}; allowed: {allowed}, by name (with or without "
                               "DirectML's prefix) or number") from None


def _parse_tensor(raw, path: str) -> TensorDesc:
    obj = _object(raw, path, "a tensor description")
    if "Desc" in obj:  # the long form {"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {...}}
        _known_keys(obj, ("Type", "Desc"), path)
        _tensor_type(obj.get("Type", "BUFFER"), _key(path, "Type"))
        path, obj = _key(path, "Desc"), _object(obj["Desc"], _key(path, "Desc"), "a tensor description")
    _known_keys(obj, ("Type", "DataType", "Sizes", "Strides", "TotalTensorSizeInBytes",
                      "GuaranteedBaseOffsetAlignment", "Flags", "DimensionCount"), path)
    if "Type" in obj:
        _tensor_type(obj["Type"], _key(path, "Type"))
    type_text = _string(_required(obj, "DataType", path), _key(path, "DataType"))
    try:
        data_type = DataType.parse(type_text)
    except (ValueError, KeyError):
        raise ModelError(_key(path, "DataType"), f"unknown data type {type_text!r}") from None
    sizes_path = _key(path, "Sizes")
    sizes = tuple(_integer(v, f"{sizes_path}[{i}]")
                  for i, v in enumerate(_array(_required(obj, "Sizes", path), sizes_path)))
    strides = None
    if obj.get("Strides") is not None:
        strides_path = _key(path, "Strides")
        strides = tuple(_integer(v, f"{strides_path}[{i}]")
                        for i, v in enumerate(_array(obj["Strides"], strides_path)))
    if "DimensionCount" in obj:
        count = _integer(obj["DimensionCount"], _key(path, "DimensionCount"))
        if count != len(sizes):
            raise ModelError(_key(path, "DimensionCount"), f"{count}, but Sizes has {len(sizes)} values")
    total = _integer(obj.get("TotalTensorSizeInBytes", 0), _key(path, "TotalTensorSizeInBytes"))
    alignment = _integer(obj.get("GuaranteedBaseOffsetAlignment", 0), _key(path, "GuaranteedBaseOffsetAlignment"))
    flags = _tensor_flags(obj.get("Flags", "NONE"), _key(path, "Flags"))
    return TensorDesc(data_type, sizes, strides, total or None, alignment, flags)


def _tensor_type(raw, path: str) -> None:
    text = _string(raw, path)
    if text.strip().upper().removeprefix("DML_TENSOR_TYPE_") != "BUFFER":
        raise ModelError(path, f"{text!r}; only buffer tensors (DML_TENSOR_TYPE_BUFFER) exist")


def _tensor_flags(raw, path: str) -> TensorFlags:
    items = raw if isinstance(raw, list) else [raw]
    flags = TensorFlags.NONE
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            if item not in (0, 1):
                raise ModelError(path, f"{item}; allowed: NONE (0), OWNED_BY_DML (1)")
            flags |= TensorFlags(item)
            continue
        for word in _string(item, path).split("|"):
            name = word.strip().upper().removeprefix("DML_TENSOR_FLAG_")
            if name not in TensorFlags.__members__:
                raise ModelError(path, f"unknown tensor flag {word.strip()!r}; allowed: NONE, OWNED_BY_DML")
            flags |= TensorFlags[name]
    return flags


def _translate(err: ValidationError, desc_path: str, type_path: str) -> ModelError:
    """A gpuops refusal of a description, re-addressed to the JSON path of the field it names."""
    field = getattr(err, "field", "")
    message = str(err)
    prefix = f"{getattr(err, 'operator', '')}: {field}: "
    if field and message.startswith(prefix):
        message = message[len(prefix):]
    parts = field.split(".")[1:]  # drop the desc class name
    path = ".".join([desc_path] + [_dml_part(p) for p in parts]) if parts else type_path
    return ModelError(path, _dml_words(message))


def _dml_part(part: str) -> str:
    name, bracket, rest = part.partition("[")
    return (TENSOR_ATTRIBUTES.get(name) or dml_name(name)) + (bracket + rest if bracket else "")


_SNAKE_FIELD = re.compile(r"\b(input_tensor|output_tensor|a_tensor|b_tensor)(?:\.(\w+))?")


def _dml_words(message: str) -> str:
    """'b_tensor.data_type' in a gpuops message becomes 'BTensor.DataType', the names the model uses."""
    def replace(match: re.Match) -> str:
        attribute = match.group(2)
        return dml_name(match.group(1)) + (f".{TENSOR_ATTRIBUTES.get(attribute, attribute)}" if attribute else "")
    return _SNAKE_FIELD.sub(replace, message)


# commands ---------------------------------------------------------------------------------------------------

def _parse_command(raw, path: str, resources: dict, dispatchables: dict) -> Command:
    obj = _object(raw, path)
    kind = _string(_required(obj, "type", path), _key(path, "type"))
    if kind == "dispatch":
        _known_keys(obj, ("type", "dispatchable", "bindings", "threadGroupCount"), path)
        name = _string(_required(obj, "dispatchable", path), _key(path, "dispatchable"))
        if name not in dispatchables:
            raise ModelError(_key(path, "dispatchable"), f"unknown dispatchable {name!r}; defined: "
                                                          f"{_names(dispatchables)}")
        return _dispatch(path, dispatchables[name], obj, resources)
    if kind == "print":
        _known_keys(obj, ("type", "resource"), path)
        return PrintCommand(path, _resource_name(_required(obj, "resource", path), _key(path, "resource"),
                                                 resources))
    if kind == "writeFile":
        _known_keys(obj, ("type", "resource", "targetPath", "dimensions"), path)
        resource = _resource_name(_required(obj, "resource", path), _key(path, "resource"), resources)
        target = Path(_string(_required(obj, "targetPath", path), _key(path, "targetPath")))
        if target.suffix.lower() not in (".npy", ".dat", ".bin"):
            raise ModelError(_key(path, "targetPath"), f"{str(target)!r}: only .npy, .dat and .bin files are "
                                                       "supported")
        dimensions = None
        if obj.get("dimensions") is not None:
            dims_path = _key(path, "dimensions")
            dimensions = tuple(_integer(v, f"{dims_path}[{i}]")
                               for i, v in enumerate(_array(obj["dimensions"], dims_path)))
            count = resources[resource].value_count
            if math.prod(dimensions) != count:
                raise ModelError(dims_path, f"{list(dimensions)} hold {math.prod(dimensions)} values; resource "
                                            f"{resource!r} has {count}")
        return WriteFileCommand(path, resource, target, dimensions)
    raise ModelError(_key(path, "type"), f"unknown command type {kind!r}; expected dispatch, print or writeFile")


def _names(table: dict) -> str:
    return ", ".join(table) or "none"


def _resource_name(raw, path: str, resources: dict) -> str:
    name = _string(raw, path)
    if name not in resources:
        raise ModelError(path, f"unknown resource {name!r}; defined: {_names(resources)}")
    return name


def _bind_point(spec: OperatorSpec, key: str, path: str) -> str:
    points = {dml_name(field): field for field in spec.tensor_fields}
    if key not in points:
        raise ModelError(_key(path, key), f"unknown binding; DML_OPERATOR_{spec.name} binds "
                                          f"{', '.join(points)}")
    return points[key]


def _dispatch(path: str, dispatchable: Dispatchable, obj: dict, resources: dict) -> DispatchCommand:
    spec, desc = dispatchable.spec, dispatchable.desc
    bindings_path = _key(path, "bindings")
    raw = _object(_required(obj, "bindings", path), bindings_path)
    bindings = {}
    for key, value in raw.items():
        field = _bind_point(spec, key, bindings_path)
        point_path = _key(bindings_path, key)
        if field in dispatchable.init_bindings:
            raise ModelError(point_path, f"{key} is OWNED_BY_DML: it is bound once, in "
                                         f"dispatchables.{dispatchable.name}.bindings, not per dispatch")
        bindings[field] = _binding(value, point_path, resources, getattr(desc, field))
    for field in spec.tensor_fields:
        if field not in bindings and field not in dispatchable.init_bindings:
            raise ModelError(bindings_path, f"{dml_name(field)} is not bound; DML_OPERATOR_{spec.name} binds "
                                            f"{', '.join(dml_name(f) for f in spec.tensor_fields)}")
    return DispatchCommand(path, dispatchable.name, bindings)


def _binding(raw, path: str, resources: dict, tensor: TensorDesc) -> BindingRef:
    """A bind point's value: "name", {"name", "elementOffset", "elementCount"} or a one-element array of those."""
    if isinstance(raw, list):
        if len(raw) != 1:
            raise ModelError(path, f"{len(raw)} resources bound; this bind point takes exactly one")
        raw, path = raw[0], f"{path}[0]"
    if isinstance(raw, str):
        name, element_offset, element_count = _resource_name(raw, path, resources), 0, None
    else:
        obj = _object(raw, path, "a resource name or a binding object")
        _known_keys(obj, ("name", "elementOffset", "elementCount", "elementStride", "format"), path)
        name = _resource_name(_required(obj, "name", path), _key(path, "name"), resources)
        element_offset = _integer(obj.get("elementOffset", 0), _key(path, "elementOffset"))
        element_count = None
        if "elementCount" in obj:
            element_count = _integer(obj["elementCount"], _key(path, "elementCount"), minimum=1)
    resource = resources[name]
    element_size = resource.data_type.size
    byte_offset = element_offset * element_size
    alignment = max(MINIMUM_BUFFER_TENSOR_ALIGNMENT, tensor.guaranteed_base_offset_alignment)
    if byte_offset % alignment:
        raise ModelError(_key(path, "elementOffset"),
                         f"{element_offset} elements of {resource.data_type.name} is byte offset {byte_offset}; "
                         f"DirectML binds at multiples of {alignment} bytes")
    size = None if element_count is None else element_count * element_size
    end = resource.size if size is None else byte_offset + size
    if byte_offset > resource.size or end > resource.size:
        raise ModelError(path, f"bytes {byte_offset} to {end} run past the end of resource {name!r} "
                               f"({resource.size} bytes)")
    available = end - byte_offset
    if available < tensor.total_tensor_size_in_bytes:
        raise ModelError(path, f"resource {name!r} offers {available} bytes from byte offset {byte_offset}; the "
                               f"tensor needs TotalTensorSizeInBytes {tensor.total_tensor_size_in_bytes}")
    return BindingRef(name, byte_offset, size, path)


# ---------------------------------------------------------------------------------------------------- running

@dataclass(frozen=True)
class RunOptions:
    """DxDispatch's timing flags: -i, -r, -w, -t and -v."""

    iterations: int = 1
    repeat: int = 1
    warmup: int = 1  # leading samples counted as cold (reported apart at -v 1, left out of the medians)
    milliseconds: float | None = None  # run each dispatch for this long instead of `iterations` times
    verbosity: int = 0


def format_value(value, data_type: DataType) -> str:
    """A value as DxDispatch prints it: integral floats without a fraction (-1, 0, 1), NaN as nan, infinities as
    inf/-inf, other floats in the shortest form that reads back to the same value."""
    if data_type.numpy_dtype.kind != "f":
        return str(int(value))
    number = float(value)
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    if number.is_integer() and abs(number) < 1e16:
        return ("-" if math.copysign(1.0, number) < 0 else "") + str(abs(int(number)))
    return str(data_type.numpy_dtype.type(value))


def _ms(ns: float) -> str:
    ms = ns / 1e6
    return f"{ms:.4f}" if ms >= 0.01 else f"{ms:.6f}"


class ModelRunner:
    """Runs a checked Model on a device, writing DxDispatch's lines through `write`.

    writeFile commands write a relative targetPath under `output_dir`, by default the current directory (as any
    command-line tool writes its outputs: never among the model's own files); each file written is reported with
    its full path.
    `slow(message)`, when given, is a context manager around every dispatch command (progress for long ones)."""

    def __init__(self, model: Model, device: Device, options: RunOptions = RunOptions(),
                 write: Callable[[str], None] = print, timer: GpuTimer | None = None,
                 output_dir: str | Path | None = None,
                 slow: Callable[[str], contextlib.AbstractContextManager] | None = None):
        self.model, self.device, self.options, self.write = model, device, options, write
        self.output_dir = Path.cwd() / (output_dir if output_dir is not None else "")
        self.slow = slow or (lambda message: contextlib.nullcontext())
        self.timer = timer or GpuTimer(device)
        self.buffers: dict[str, wgpu.GPUBuffer] = {}
        self.compiled: dict[str, CompiledOperator] = {}
        self.init_bindings: dict[str, dict[str, Binding]] = {}
        self._snapshots: list[wgpu.GPUBuffer] = []

    def run(self) -> None:
        try:
            self._allocate()
            self._initialize()
            plans = [self._bindings(c) if isinstance(c, DispatchCommand) else None for c in self.model.commands]
            for command, bindings in zip(self.model.commands, plans):
                if isinstance(command, DispatchCommand):
                    with self.slow(f"{command.path}: dispatch '{command.dispatchable}'"):
                        self._dispatch(command, bindings)
                elif isinstance(command, PrintCommand):
                    values = self.read(command.resource)
                    data_type = self.model.resources[command.resource].data_type
                    self.write(f"Resource '{command.resource}': "
                               + ", ".join(format_value(v, data_type) for v in values))
                else:
                    self._write_file(command)
        finally:
            self.release()

    def _allocate(self) -> None:
        wgpu_device = self.device.wgpu_device
        for name, resource in self.model.resources.items():
            data = np.zeros(max(16, -(-resource.size // 16) * 16), np.uint8)
            raw = resource.values.view(np.uint8)
            data[resource.offset: resource.offset + raw.size] = raw
            self.buffers[name] = wgpu_device.create_buffer_with_data(data=data, usage=buffer_usage(self.device))

    def _initialize(self) -> None:
        """Compile every dispatchable and bind its OWNED_BY_DML inputs: DirectML reads them at initialization,
        so they are copied now and later writes to the resource do not reach the operator."""
        for name, dispatchable in self.model.dispatchables.items():
            start = time.perf_counter_ns()
            try:
                self.compiled[name] = self.device.compile(dispatchable.desc, feature_level=self.model.feature_level)
            except ValidationError as err:
                raise _translate(err, f"dispatchables.{name}.desc", f"dispatchables.{name}.type") from None
            owned = {}
            for field, ref in dispatchable.init_bindings.items():
                snapshot = self._snapshot(ref.resource)
                owned[field] = Binding(snapshot, ref.byte_offset, self._size(ref))
            self.init_bindings[name] = owned
            if self.options.verbosity >= 1:
                self.write(f"Initialize '{name}': {_ms(time.perf_counter_ns() - start)} ms")

    def _snapshot(self, resource: str) -> wgpu.GPUBuffer:
        source = self.buffers[resource]
        wgpu_device = self.device.wgpu_device
        copy = wgpu_device.create_buffer(size=source.size, usage=buffer_usage(self.device))
        encoder = wgpu_device.create_command_encoder()
        encoder.copy_buffer_to_buffer(source, 0, copy, 0, source.size)
        wgpu_device.queue.submit([encoder.finish()])
        self._snapshots.append(copy)
        return copy

    def _size(self, ref: BindingRef) -> int:
        return self.model.resources[ref.resource].size - ref.byte_offset if ref.size is None else ref.size

    def _bindings(self, command: DispatchCommand) -> dict[str, Binding]:
        """The dispatch's bindings, checked against the real buffers before any command runs."""
        dispatchable = self.model.dispatchables[command.dispatchable]
        bindings = dict(self.init_bindings[command.dispatchable])
        for field, ref in command.bindings.items():
            bindings[field] = Binding(self.buffers[ref.resource], ref.byte_offset, self._size(ref))
        try:
            validate_bindings(dispatchable.spec, dispatchable.desc, bindings, self.device)
        except ValidationError as err:
            raise self._binding_error(command, err) from None
        return bindings

    @staticmethod
    def _binding_error(command: DispatchCommand, err: ValidationError) -> ModelError:
        field = getattr(err, "field", "")
        match = re.fullmatch(r"bindings\['(\w+)'\]", field)
        path = f"{command.path}.bindings" + (f".{dml_name(match.group(1))}" if match else "")
        message = str(err)
        prefix = f"{getattr(err, 'operator', '')}: {field}: "
        if message.startswith(prefix):
            message = message[len(prefix):]
        return ModelError(path, _dml_words(message))

    def _dispatch(self, command: DispatchCommand, bindings: dict[str, Binding]) -> None:
        compiled, repeat = self.compiled[command.dispatchable], self.options.repeat

        def record(encoder: wgpu.GPUCommandEncoder, writes: dict | None) -> None:
            for i in range(repeat):
                compiled.record(encoder, bindings, split_writes(writes, i, repeat))

        cpu, gpu = self._samples(record)
        cpu = [t / repeat for t in cpu]
        gpu = [t / repeat for t in gpu]
        self._report(command.dispatchable, cpu, gpu)

    def _samples(self, record) -> tuple[list[float], list[float]]:
        if self.options.milliseconds is None:
            timing = self.timer.run(record, self.options.iterations, 0)
            return list(timing.host_ns), list(timing.gpu_ns)
        cpu, gpu = [], []
        deadline = time.perf_counter_ns() + self.options.milliseconds * 1e6
        # Past the deadline too until a sample follows the cold ones: the first includes first-use costs (the
        # pipeline's creation in the driver) and must not be the one reported hot.
        while len(cpu) <= self.options.warmup or time.perf_counter_ns() < deadline:
            timing = self.timer.run(record, 1, 0)
            cpu += timing.host_ns
            gpu += timing.gpu_ns
        return cpu, gpu

    def _report(self, name: str, cpu: list[float], gpu: list[float]) -> None:
        """The leading `warmup` samples are cold, the rest hot; the medians are the hot samples', or every
        sample's when all are cold (fewer iterations than -w allows)."""
        cold_count = min(self.options.warmup, len(cpu))
        hot_cpu, hot_gpu = cpu[cold_count:], gpu[cold_count:]
        if self.options.verbosity == 0:
            kept_cpu, kept_gpu = (hot_cpu, hot_gpu) if hot_cpu else (cpu, gpu)
            line = f"Dispatch '{name}': {len(cpu)} iterations, {_ms(statistics.median(kept_cpu))} ms median (CPU)"
            if kept_gpu:
                line += f", {_ms(statistics.median(kept_gpu))} ms median (GPU)"
            self.write(line)
            return
        self.write(f"Dispatch '{name}': {len(cpu)} iterations")
        for label, samples in (("Cold", (cpu[:cold_count], gpu[:cold_count])), ("Hot", (hot_cpu, hot_gpu))):
            for kind, values in zip(("CPU", "GPU"), samples):
                if values:
                    self.write(f"{f'{kind} Timings ({label})':<18} : {len(values)} samples, "
                               f"{_ms(statistics.mean(values))} ms average, {_ms(min(values))} ms min, "
                               f"{_ms(statistics.median(values))} ms median, {_ms(max(values))} ms max")
        if self.options.verbosity >= 2:
            self.write("The timings of each iteration:")
            for i, host in enumerate(cpu):
                line = f"iteration {i}: {_ms(host)} ms (CPU)"
                if gpu:
                    line += f", {_ms(gpu[i])} ms (GPU)"
                self.write(line)

    def read(self, resource_name: str) -> np.ndarray:
        """The resource's values now: as many as its initializer has, of its data type, from its offset."""
        resource = self.model.resources[resource_name]
        raw = self.device.wgpu_device.queue.read_buffer(self.buffers[resource_name])
        return np.frombuffer(raw, resource.data_type.numpy_dtype, resource.value_count, resource.offset).copy()

    def _write_file(self, command: WriteFileCommand) -> None:
        values = self.read(command.resource)
        if command.dimensions is not None:
            values = values.reshape(command.dimensions)
        target = self.output_dir / command.target  # an absolute target stays as it is
        try:
            if target.parent != Path("") and not target.parent.exists():
                target.parent.mkdir(parents=True)
            if target.suffix.lower() == ".npy":
                np.save(target, values)
            else:
                target.write_bytes(values.tobytes())
        except OSError as exc:
            raise ModelError(f"{command.path}.targetPath", f"cannot write {str(target)!r}: "
                                                           f"{exc.strerror or exc}") from None
        self.write(f"Resource '{command.resource}' written to {target}")

    def release(self) -> None:
        for buffer in [*self.buffers.values(), *self._snapshots]:
            buffer.destroy()
        self.buffers, self._snapshots = {}, []
