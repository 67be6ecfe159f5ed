"""The planner's layout generator on the GPU (the software adapters in CI): canary bytes around and between every
element, every other byte of every buffer checked unchanged, every output element checked against NumPy; and the
footprint model (tests/footprint.py), on which the planner's CPU properties rest, checked against the kernels on
every kind of kernel.

GPUOPS_CANARY_EXAMPLES raises the count of layouts (a sample in CI)."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

import pytest

import gpuops
from gpuops.kernel import operands_of
from gpuops.operators import spec_by_name

from .dml import make_desc, run_arranged, written_bytes
from .footprint import footprint_of
from .layout_strategies import LayoutCase, arrangement, layout_cases, transposed_cases
from .planning import CASES_BY_KIND, kind_id, kind_of
from .reference import random_values

CANARY_EXAMPLES = int(os.environ.get("GPUOPS_CANARY_EXAMPLES", "100"))
_DEVICES: dict[tuple, gpuops.Device] = {}


def _device_for(device: gpuops.Device, case: LayoutCase) -> gpuops.Device:
    """A Device on the test's WebGPU device with the case's DispatchPolicy (kept: its pipelines are reused)."""
    key = (device.backend, id(device.wgpu_device), case.policy)
    if key not in _DEVICES:
        _DEVICES[key] = gpuops.Device(wgpu_device=device.wgpu_device, policy=case.policy)
    return _DEVICES[key]


@settings(max_examples=CANARY_EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
          deadline=None)
@given(layout_cases() | layout_cases(rows=True) | transposed_cases())
def test_random_layouts_touch_only_their_elements(device, case):
    desc = make_desc(case.operator, case.mode, case.in_type, case.out_type, case.sizes, case.strides)
    try:
        gpuops.validate(desc)
    except gpuops.ValidationError:
        assume(False)
    spec = gpuops.operators.spec_of(desc)
    placed = arrangement(case, {name: getattr(desc, name) for name in spec.tensor_fields})
    rng = np.random.default_rng(abs(hash(repr(case))) % 2**32)
    run_arranged(_device_for(device, case), desc, placed, rng, lambda t, n: random_values(t, n, rng))


def test_broadcast_row_into_a_stepped_output_with_an_unaligned_pitch(device):
    """The planner's regression case on the GPU, with the default policy: one float32 row broadcast over six rows,
    IS_NAN into every second byte of rows 8196 bytes apart."""
    from gpuops import DataType, IsNanDesc, TensorDesc
    from .layout_strategies import Arrangement
    inp = TensorDesc(DataType.FLOAT32, (6, 4096), (0, 1))
    out = TensorDesc(DataType.UINT8, (6, 4096), (8196, 2))
    placed = Arrangement({"input_tensor": 0, "output_tensor": 1}, {"input_tensor": 0, "output_tensor": 0},
                         (inp.total_tensor_size_in_bytes, out.total_tensor_size_in_bytes + 64))
    rng = np.random.default_rng(31)
    run_arranged(device, IsNanDesc(inp, out), placed, rng, lambda t, n: random_values(t, n, rng))


# Every kind, and where its case's operator reports NumPy's floating-point errors, the variant that does.
_VARIANTS = [(kind, False) for kind in CASES_BY_KIND] + [
    (kind, True) for kind, case in CASES_BY_KIND.items() if spec_by_name(case.operator).error_flags]


@pytest.mark.parametrize("kind, error_flags", _VARIANTS,
                         ids=lambda value: kind_id(value) if isinstance(value, tuple) else ["plain", "reporting"][value])
def test_footprint_model_agrees_with_the_kernels(device, kind, error_flags):
    """The footprint model restates the WGSL's addressing by hand: on each kind of kernel (grid, output store,
    storage, workgroup memory), the output bytes it says the device's own plans write are exactly those the
    kernels write, and it finds no access outside a bound view and no lost update. The variant that reports NumPy's
    floating-point errors (`error_flags`: its flag word bound after the loop's views, which the model leaves out)
    writes the same bytes, and nothing of the flag's buffer but its word."""
    case = CASES_BY_KIND[kind]
    desc = make_desc(case.operator, case.mode, case.in_type, case.out_type, case.sizes, case.strides)
    spec = gpuops.operators.spec_of(desc)
    placed = arrangement(case, {name: getattr(desc, name) for name in spec.tensor_fields})
    rng = np.random.default_rng(5)
    values = {data_type: random_values(data_type, 4096, rng) for data_type in {case.in_type}}
    written, plans, sizes = written_bytes(_device_for(device, case), desc, placed,
                                          lambda data_type, n: values[data_type][:n], error_flags)
    assert all(plan.key.operation.error_flags == error_flags for plan in plans)
    assert kind in {kind_of(plan) for plan in plans}
    operands = operands_of(len(spec.inputs))
    modelled = footprint_of(plans, operands, {op: sizes[name] for op, name in zip(operands, spec.tensor_fields)})
    assert not modelled.violations, modelled.violations[:5]
    assert written == set(modelled.values), (sorted(written - set(modelled.values))[:8],
                                             sorted(set(modelled.values) - written)[:8])
