"""Every rule of the contract, checked in one place, before any GPU work (no GPU needed)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .enums import DataType, FeatureLevel, TensorFlags, in_listing_order
from .errors import Refusal, ValidationError
from .operators import OperatorSpec, spec_of
from .tensor import TensorDesc, implied_size_in_bytes

MAX_ELEMENTS = 2**32 - 1
# Above this many elements an output whose strides fail the quick non-overlap test is refused rather than
# enumerated address by address (see _output_addresses_distinct).
EXACT_OVERLAP_CHECK_LIMIT = 1 << 22


def validate(desc: object, feature_level: FeatureLevel | str | int = FeatureLevel.LEVEL_6_4) -> None:
    """Raise ValidationError naming the operator, the field and the allowed values if `desc` breaks a rule."""
    try:
        level = FeatureLevel.parse(feature_level)
    except ValidationError as exc:
        raise ValidationError(f"validate: feature_level: {exc}") from None
    spec = spec_of(desc)
    refusal = _first_refusal(spec, desc, level)
    if refusal is not None:
        raise refusal.error()


def _first_refusal(spec: OperatorSpec, desc: object, level: FeatureLevel) -> Refusal | None:
    cls = spec.desc_type.__name__
    op = f"DML_OPERATOR_{spec.name}"

    def refuse(field: str, message: str) -> Refusal:
        return Refusal(op, f"{cls}.{field}" if field else cls, message)

    row = spec.support_row(level)
    if row is None:
        return refuse("", f"the operator does not exist at feature level {level.label}; "
                          f"it exists from {spec.since.label}")

    for name in spec.tensor_fields:
        tensor = getattr(desc, name)
        if not isinstance(tensor, TensorDesc):
            return refuse(name, f"{type(tensor).__name__} is not a TensorDesc")
        is_output = name == spec.output
        problem = _tensor_refusal(tensor, name, row.dimension_counts,
                                  row.output_types if is_output else row.input_types, level, is_output)
        if problem is not None:
            return refuse(*problem)

    first = getattr(desc, spec.tensor_fields[0])
    for name in spec.tensor_fields[1:]:
        tensor = getattr(desc, name)
        if tensor.dimension_count != first.dimension_count:
            return refuse(f"{name}.sizes", f"has {tensor.dimension_count} dimensions; "
                                           f"{spec.tensor_fields[0]} has {first.dimension_count} and they must match")
        if tensor.sizes != first.sizes:
            return refuse(f"{name}.sizes", f"{list(tensor.sizes)} differs from {spec.tensor_fields[0]}.sizes "
                                           f"{list(first.sizes)}; DirectML never broadcasts implicitly "
                                           "(use zero strides)")
    if spec.same_data_type:
        reference = first.data_type
        for name in spec.tensor_fields[1:]:
            data_type = getattr(desc, name).data_type
            if data_type != reference:
                return refuse(f"{name}.data_type", f"{data_type.name} differs from "
                                                   f"{spec.tensor_fields[0]}.data_type {reference.name}; "
                                                   "they must be equal")

    output = getattr(desc, spec.output)
    if not _output_addresses_distinct(output):
        return refuse(f"{spec.output}.strides", f"{list(output.element_strides)} give two output elements of "
                                                f"sizes {list(output.sizes)} the same address; an output must "
                                                "not overlap itself")
    return None


def _tensor_refusal(tensor: TensorDesc, name: str, dimension_counts: tuple[int, ...],
                    types: frozenset[DataType], level: FeatureLevel, is_output: bool) -> tuple[str, str] | None:
    if tensor.data_type not in types:
        allowed = ", ".join(t.name for t in in_listing_order(types))
        return f"{name}.data_type", (f"{tensor.data_type.name} is not supported at feature level {level.label}; "
                                     f"allowed: {allowed}")
    count = tensor.dimension_count
    if count not in dimension_counts:
        allowed = (f"exactly {dimension_counts[0]}" if len(dimension_counts) == 1
                   else f"{dimension_counts[0]} to {dimension_counts[-1]}")
        return f"{name}.sizes", (f"{count} dimensions {list(tensor.sizes)} at feature level {level.label}; "
                                 f"allowed: {allowed}")
    for i, size in enumerate(tensor.sizes):
        if size < 1:
            return f"{name}.sizes[{i}]", f"{size}; every size must be at least 1"
    if tensor.element_count > MAX_ELEMENTS:
        return f"{name}.sizes", f"{list(tensor.sizes)} hold {tensor.element_count} elements; at most 2^32 - 1"
    if tensor.strides is not None:
        if len(tensor.strides) != count:
            return f"{name}.strides", (f"{len(tensor.strides)} strides {list(tensor.strides)} for {count} "
                                       "dimensions; one stride per dimension is required")
        for i, stride in enumerate(tensor.strides):
            if stride < 0:
                return f"{name}.strides[{i}]", f"{stride}; strides are unsigned element counts"
    implied = implied_size_in_bytes(tensor.data_type, tensor.sizes, tensor.strides)
    if tensor.total_tensor_size_in_bytes is None or tensor.total_tensor_size_in_bytes < implied:
        return f"{name}.total_tensor_size_in_bytes", (f"{tensor.total_tensor_size_in_bytes}; the sizes and strides "
                                                      f"need at least {implied} bytes")
    alignment = tensor.guaranteed_base_offset_alignment
    if alignment != 0 and (alignment < tensor.data_type.size or alignment & (alignment - 1)):
        return f"{name}.guaranteed_base_offset_alignment", (f"{alignment}; allowed: 0 or a power of two of at "
                                                            f"least the element size {tensor.data_type.size}")
    if int(tensor.flags) & ~int(TensorFlags.OWNED_BY_DML):
        return f"{name}.flags", f"{int(tensor.flags)}; allowed: NONE (0), OWNED_BY_DML (1)"
    if is_output and tensor.flags & TensorFlags.OWNED_BY_DML:
        return f"{name}.flags", "OWNED_BY_DML; allowed on inputs only, the output must be NONE"
    return None


def _output_addresses_distinct(tensor: TensorDesc) -> bool:
    """True when no two elements of the tensor share an address."""
    dims = sorted((stride, size) for size, stride in zip(tensor.sizes, tensor.element_strides) if size > 1)
    extent = 1  # one past the largest offset reached by the dimensions seen so far
    provable = True
    for stride, size in dims:
        if stride < extent:  # this dimension may land inside the block the smaller strides cover
            provable = False
            break
        extent += (size - 1) * stride
    if provable:
        return True
    # Interleaved layouts can still be distinct: enumerate when that is cheap, refuse otherwise.
    if tensor.element_count > EXACT_OVERLAP_CHECK_LIMIT:
        return False
    # Strides are only checked to be non-negative: offsets past int64 are enumerated as Python ints (slower, but
    # exact) rather than wrapping around.
    last = sum((size - 1) * stride for size, stride in zip(tensor.sizes, tensor.element_strides))
    dtype = np.int64 if last < 2**63 else object
    offsets = np.zeros(1, dtype=dtype)
    for size, stride in zip(tensor.sizes, tensor.element_strides):
        offsets = (offsets[:, None] + np.arange(size).astype(dtype)[None, :] * stride).reshape(-1)
    return len(np.unique(offsets)) == len(offsets)


def validate_bindings(spec: OperatorSpec, desc: object, bindings: object, device: object,
                      element_offsets: bool = False) -> None:
    """Refuse, before any GPU work, bindings DirectML would refuse (DML_BUFFER_BINDING rules) and in-place
    requests the operator does not allow. `device` is the gpuops Device the operator was compiled on.

    `element_offsets` (gpuops' extension, for its NumPy-level calls on views of device arrays): an offset need only
    be a whole number of the tensor's elements (or of its guaranteed_base_offset_alignment), and a tensor's bytes
    are its elements' span, not rounded up to 4 (a view may end in its buffer's last bytes). The planner binds from
    the adapter-aligned offset below and starts the tensor at its element there, as it does for every offset."""
    from .binding import Binding, buffer_destroyed, described
    from .layout import span_in_bytes
    from .tensor import MINIMUM_BUFFER_TENSOR_ALIGNMENT

    op = f"DML_OPERATOR_{spec.name}"

    def refuse(name: str, message: str) -> ValidationError:
        return Refusal(op, f"bindings[{name!r}]", message).error()

    if not isinstance(bindings, Mapping):
        raise Refusal(op, "bindings", f"{type(bindings).__name__} is not a mapping of field name to "
                                      "Binding").error()
    expected = ", ".join(spec.tensor_fields)
    for name in bindings:
        if name not in spec.tensor_fields:
            raise refuse(name, f"unknown binding; expected: {expected}")
    regions = {}
    for name in spec.tensor_fields:
        if name not in bindings:
            raise refuse(name, f"missing; expected: {expected}")
        binding = bindings[name]
        tensor: TensorDesc = getattr(desc, name)
        if not isinstance(binding, Binding) or not isinstance(binding.buffer, device.wgpu.GPUBuffer):
            raise refuse(name, f"{type(binding).__name__} is not a gpuops.Binding on a wgpu.GPUBuffer")
        buffer = binding.buffer
        if getattr(buffer, "_device", device.wgpu_device) is not device.wgpu_device:
            raise refuse(name, "the buffer belongs to another wgpu device than this gpuops.Device")
        if buffer_destroyed(buffer):
            raise refuse(name, f"{described(buffer)} was destroyed (buffer.destroy()); bind a live buffer")
        if not buffer.usage & device.wgpu.BufferUsage.STORAGE:
            raise refuse(name, f"the buffer's usage {int(buffer.usage)} lacks wgpu.BufferUsage.STORAGE")
        if element_offsets:
            alignment = max(tensor.data_type.size, tensor.guaranteed_base_offset_alignment)
            rule = "the tensor's element size, or its guaranteed_base_offset_alignment when larger"
            extent = span_in_bytes(tensor.sizes, tensor.element_strides, tensor.data_type.size)
            extent_name = f"the {extent} bytes of {name}'s elements"
        else:
            alignment = max(MINIMUM_BUFFER_TENSOR_ALIGNMENT, tensor.guaranteed_base_offset_alignment)
            rule = "16, or the tensor's guaranteed_base_offset_alignment when larger"
            extent = tensor.total_tensor_size_in_bytes
            extent_name = f"{name}.total_tensor_size_in_bytes {extent}"
        if not isinstance(binding.offset, int) or binding.offset < 0 or binding.offset % alignment:
            raise refuse(name, f"offset {binding.offset!r} is not a multiple of {alignment} ({rule})")
        if binding.offset > buffer.size:
            raise refuse(name, f"offset {binding.offset} is past the end of the {buffer.size}-byte buffer")
        size = binding.resolved_size
        if size < 0 or binding.offset + size > buffer.size:
            raise refuse(name, f"size {size} at offset {binding.offset} runs past the end of the "
                               f"{buffer.size}-byte buffer")
        if size < extent:
            raise refuse(name, f"size {size} is smaller than {extent_name}")
        regions[name] = (buffer, binding.offset, binding.offset + extent, tensor)

    out_buffer, out_start, out_end, out_tensor = regions[spec.output]
    for name in spec.inputs:
        buffer, start, end, tensor = regions[name]
        if buffer is not out_buffer or end <= out_start or out_end <= start:
            continue
        if not spec.in_place:
            raise refuse(spec.output, f"bytes [{out_start}, {out_end}) overlap {name}'s [{start}, {end}); "
                                      f"{spec.name} does not support in-place execution")
        same_region = (start == out_start and tensor.data_type == out_tensor.data_type
                       and tensor.element_strides == out_tensor.element_strides)
        if not same_region:
            raise refuse(spec.output, f"bytes [{out_start}, {out_end}) partially overlap {name}'s "
                                      f"[{start}, {end}); an output may only alias an input exactly (in place)")
