"""A DML-level harness: real buffers with canary bytes around (and between) tensor elements, one execution,
then every element compared with NumPy and every other byte of the output buffer checked unchanged."""

from __future__ import annotations

import numpy as np
import wgpu

import gpuops
from gpuops import DataType, TensorDesc
from gpuops.operators import spec_by_name, spec_of

from .reference import assert_same_bits, reference

USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def device_with(device: gpuops.Device, **policy) -> gpuops.Device:
    """A second gpuops.Device on `device`'s WebGPU device (own pipeline and plan caches) with some fields of its
    DispatchPolicy changed, e.g. workgroup_size, units_per_invocation, max_workgroups_per_dimension."""
    return gpuops.Device(wgpu_device=device.wgpu_device, policy=gpuops.DispatchPolicy(**policy))


def kernel_keys(device: gpuops.Device, monkeypatch) -> list:
    """The KernelKeys `device` asks pipelines for from now on (cached pipelines included), in order."""
    keys = []
    pipeline = device.pipeline
    monkeypatch.setattr(device, "pipeline", lambda key: keys.append(key) or pipeline(key))
    return keys


def made_plans(monkeypatch) -> list:
    """Every plan (a tuple of dispatches) made from now on, in order: a cached plan lives no longer than its
    buffers, so tests look at the plans made rather than at the device's cache."""
    plans = []
    make = gpuops.device.PreparedOperator._make_plan
    monkeypatch.setattr(gpuops.device.PreparedOperator, "_make_plan",
                        lambda self, *args: plans.append(make(self, *args)) or plans[-1])
    return plans


def make_desc(operator: str, mode, in_type: DataType, out_type: DataType, sizes, strides: dict | None = None,
              **tensor_kwargs):
    spec = spec_by_name(operator)
    strides = strides or {}
    tensors = {}
    for name in spec.tensor_fields:
        data_type = out_type if name == spec.output else in_type
        tensors[name] = TensorDesc(data_type, tuple(sizes), strides.get(name), **tensor_kwargs.get(name, {}))
    extra = {"infinity_mode": mode} if mode is not None else {}
    return spec.desc_type(**tensors, **extra)


def element_view(host: np.ndarray, tensor: TensorDesc, offset: int) -> np.ndarray:
    """The tensor's elements inside a host byte array, as a (writable) strided NumPy view."""
    itemsize = tensor.data_type.size
    return np.ndarray(tensor.sizes, tensor.data_type.numpy_dtype, buffer=host.data, offset=offset,
                      strides=tuple(s * itemsize for s in tensor.element_strides))


def element_byte_mask(length: int, tensor: TensorDesc, offset: int) -> np.ndarray:
    itemsize = tensor.data_type.size
    starts = np.full(1, offset, np.int64)
    for size, stride in zip(tensor.sizes, tensor.element_strides):
        starts = (starts[:, None] + np.arange(size, dtype=np.int64)[None, :] * stride * itemsize).reshape(-1)
    mask = np.zeros(length, bool)
    mask[(starts[:, None] + np.arange(itemsize)[None, :]).reshape(-1)] = True
    return mask


def run_and_check(device: gpuops.Device, desc, rng: np.random.Generator, value_source,
                  offsets: dict | None = None, in_place: str | None = None, slack: int = 48,
                  feature_level=None) -> None:
    """Execute `desc` on buffers holding `value_source(data_type, count)` values and check it bit for bit.

    `in_place` names the input whose region the output shares."""
    spec = spec_of(desc)
    offsets = dict(offsets or {})
    if in_place:
        offsets[spec.output] = offsets.get(in_place, 0)
    hosts: dict[str, np.ndarray] = {}
    logical = []
    for name in spec.inputs:
        tensor = getattr(desc, name)
        offset = offsets.get(name, 0)
        length = -(-(offset + tensor.total_tensor_size_in_bytes + slack) // 16) * 16
        host = rng.integers(0, 256, length, dtype=np.uint8)  # canary: random bytes everywhere
        view = element_view(host, tensor, offset)
        view[...] = value_source(tensor.data_type, view.size).reshape(view.shape)
        hosts[name] = host
        logical.append(view.copy())
    out_tensor = getattr(desc, spec.output)
    out_offset = offsets.get(spec.output, 0)
    if in_place:
        out_host = hosts[in_place]
    else:
        length = -(-(out_offset + out_tensor.total_tensor_size_in_bytes + slack) // 16) * 16
        out_host = rng.integers(0, 256, length, dtype=np.uint8)
    mode = getattr(desc, "infinity_mode", None)
    expected = reference(spec.name, mode, out_tensor.data_type, *logical)
    before = out_host.copy()

    wgpu_device = device.wgpu_device
    buffers = {name: wgpu_device.create_buffer_with_data(data=host, usage=USAGE) for name, host in hosts.items()}
    out_buffer = buffers[in_place] if in_place else wgpu_device.create_buffer_with_data(data=out_host, usage=USAGE)
    bindings = {name: gpuops.Binding(buffers[name], offsets.get(name, 0)) for name in spec.inputs}
    bindings[spec.output] = gpuops.Binding(out_buffer, out_offset)
    device.compile(desc, feature_level=feature_level).execute(bindings)
    got_host = np.frombuffer(wgpu_device.queue.read_buffer(out_buffer), np.uint8)
    for buffer in {id(b): b for b in [*buffers.values(), out_buffer]}.values():
        buffer.destroy()

    assert_same_bits(element_view(got_host.copy(), out_tensor, out_offset), expected, *logical)
    untouched = ~element_byte_mask(len(got_host), out_tensor, out_offset)
    changed = np.flatnonzero((got_host != before) & untouched)
    assert changed.size == 0, f"bytes outside the output's elements were written, e.g. at {changed[:8]}"


def run_arranged(device: gpuops.Device, desc, arranged, rng: np.random.Generator, value_source,
                 error_flags: bool = False) -> tuple[int | None, list[np.ndarray]]:
    """Execute `desc` with its tensors where `arranged` (tests.layout_strategies.Arrangement) puts them: buffers
    of random canary bytes, each input's elements set from `value_source(data_type, count)`. Then every output
    element must match NumPy bit for bit and every other byte of every buffer must be unchanged.

    `error_flags`: run the kernels that report NumPy's floating-point errors (CompiledOperator.bind_with_error_flags).
    Returns their flag word (None without) and the inputs' elements as the kernels saw them."""
    spec = spec_of(desc)
    hosts = [rng.integers(0, 256, -(-size // 4) * 4, dtype=np.uint8) for size in arranged.buffer_sizes]
    logical = []
    for name in spec.inputs:
        tensor = getattr(desc, name)
        view = element_view(hosts[arranged.buffer_of[name]], tensor, arranged.offset_of[name])
        view[...] = value_source(tensor.data_type, view.size).reshape(view.shape)
        logical.append(view.copy())
    out_tensor = getattr(desc, spec.output)
    mode = getattr(desc, "infinity_mode", None)
    expected = reference(spec.name, mode, out_tensor.data_type, *logical)
    before = [host.copy() for host in hosts]
    wgpu_device = device.wgpu_device
    buffers = [wgpu_device.create_buffer_with_data(data=host, usage=USAGE) for host in hosts]
    bindings = {name: gpuops.Binding(buffers[arranged.buffer_of[name]], arranged.offset_of[name])
                for name in spec.tensor_fields}
    flag_buffer = wgpu_device.create_buffer(size=16, usage=USAGE) if error_flags else None
    try:
        compiled = device.compile(desc)
        if all(offset % 16 == 0 for offset in arranged.offset_of.values()):
            compiled.execute(compiled.bind_with_error_flags(bindings, gpuops.Binding(flag_buffer)) if error_flags
                             else bindings)
        else:  # views of device arrays, as the NumPy-level functions bind them
            compiled.execute(compiled.bind_with_error_flags(bindings, gpuops.Binding(flag_buffer), element_offsets=True)
                             if error_flags else compiled.bind(bindings, element_offsets=True))
        got = [np.frombuffer(wgpu_device.queue.read_buffer(buffer), np.uint8).copy() for buffer in buffers]
        flags = int(np.frombuffer(wgpu_device.queue.read_buffer(flag_buffer), np.uint32)[0]) if error_flags else None
    finally:
        for buffer in buffers + ([flag_buffer] if error_flags else []):
            buffer.destroy()
    out_index = arranged.buffer_of[spec.output]
    assert_same_bits(element_view(got[out_index], out_tensor, arranged.offset_of[spec.output]), expected, *logical)
    for index, (old, new) in enumerate(zip(before, got)):
        untouched = np.ones(len(new), bool)
        if index == out_index:
            untouched = ~element_byte_mask(len(new), out_tensor, arranged.offset_of[spec.output])
        changed = np.flatnonzero((old != new) & untouched)
        assert changed.size == 0, f"buffer {index}: bytes outside the output's elements changed, e.g. at {changed[:8]}"
    return flags, logical


def written_bytes(device: gpuops.Device, desc, arranged, value_source, error_flags: bool = False
                  ) -> tuple[set[int], tuple, dict]:
    """The bytes of the output's buffer that executing `desc` (tensors where `arranged` puts them, separate buffers)
    writes, the dispatch plans that ran, and each buffer's size by tensor field. Executed twice on the same
    inputs, every buffer's other bytes filled first with one byte and then with its complement: a written byte
    differs from at least one of the two. `error_flags`: the kernels that report NumPy's floating-point errors
    (CompiledOperator.bind_with_error_flags), whose flag word is the first of 16 bytes: the other 12 must keep
    their fill."""
    spec = spec_of(desc)
    out_index = arranged.buffer_of[spec.output]
    written: set[int] = set()
    for fill in (0x5A, 0xA5):
        hosts = [np.full(-(-size // 4) * 4, fill, np.uint8) for size in arranged.buffer_sizes]
        for name in spec.inputs:
            view = element_view(hosts[arranged.buffer_of[name]], getattr(desc, name), arranged.offset_of[name])
            view[...] = value_source(getattr(desc, name).data_type, view.size).reshape(view.shape)
        wgpu_device = device.wgpu_device
        buffers = [wgpu_device.create_buffer_with_data(data=host, usage=USAGE) for host in hosts]
        bindings = {name: gpuops.Binding(buffers[arranged.buffer_of[name]], arranged.offset_of[name])
                    for name in spec.tensor_fields}
        flag_buffer = wgpu_device.create_buffer_with_data(data=np.full(16, fill, np.uint8), usage=USAGE) \
            if error_flags else None
        try:
            compiled = device.compile(desc)
            plans = compiled.dispatch_plans(bindings, error_flags=error_flags)
            compiled.execute(compiled.bind_with_error_flags(bindings, gpuops.Binding(flag_buffer)) if error_flags
                             else bindings)
            got = np.frombuffer(wgpu_device.queue.read_buffer(buffers[out_index]), np.uint8)
            if error_flags:
                flag_bytes = np.frombuffer(wgpu_device.queue.read_buffer(flag_buffer), np.uint8)
                assert (flag_bytes[4:] == fill).all(), f"the flag buffer's bytes past its word changed: {flag_bytes}"
        finally:
            for buffer in buffers + ([flag_buffer] if error_flags else []):
                buffer.destroy()
        written |= set(np.flatnonzero(got != fill).tolist())
    sizes = {name: len(hosts[arranged.buffer_of[name]]) for name in spec.tensor_fields}
    return written, plans, sizes
