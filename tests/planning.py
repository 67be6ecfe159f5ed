"""Planning as the device plans, without a device: a drawn layout case's dispatches, and the footprint model's
check of them (tests/footprint.py)."""

from __future__ import annotations

from gpuops import DataType, DispatchPolicy
from gpuops.kernel import Grid, OutputStore, operands_of
from gpuops.operators import DeviceFacts, spec_by_name, spec_of
from gpuops.plan import BoundRegion, DispatchPlan, PlanLimits, plan_dispatches

from .dml import make_desc
from .footprint import expected_values, footprint_of
from .layout_strategies import LayoutCase, arrangement


def plan_of(desc, tensors, regions, limits, facts=DeviceFacts(), error_flags: bool = False
            ) -> tuple[DispatchPlan, ...]:
    """The dispatches of `desc`, as the device plans them: the operator part from the row (`error_flags`: the
    variant reporting NumPy's floating-point errors), the loop from the layout."""
    spec = spec_of(desc)
    return plan_dispatches(spec.operation(desc, facts, error_flags), spec.loop_request(tensors[0].data_type),
                           tensors, regions, limits)


def plan_case(case: LayoutCase, alignment: int = 256, error_flags: bool = False
              ) -> tuple[object, tuple[DispatchPlan, ...], dict, dict]:
    """(desc, plans, each operand's binding offset, each operand's buffer size) of a drawn case (`error_flags`: the
    kernels that report NumPy's floating-point errors)."""
    desc = make_desc(case.operator, case.mode, case.in_type, case.out_type, case.sizes, case.strides)
    spec = spec_by_name(case.operator)
    tensors = {name: getattr(desc, name) for name in spec.tensor_fields}
    placed = arrangement(case, tensors)
    regions = tuple(BoundRegion(placed.buffer_of[name], placed.buffer_sizes[placed.buffer_of[name]],
                                placed.offset_of[name]) for name in spec.tensor_fields)
    policy = case.policy
    # (a binding limit leaves room for the alignment slack, as every adapter's does)
    binding_size = (policy.binding_size_limit or 2**27) + alignment + 16
    limits = PlanLimits(binding_size=binding_size, storage_offset_alignment=alignment,
                        workgroups_per_dimension=policy.max_workgroups_per_dimension or 65535,
                        workgroup_size=policy.workgroup_size, units_per_invocation=policy.units_per_invocation)
    plans = plan_of(desc, tuple(tensors.values()), regions, limits,
                    DeviceFacts(pack_rounds_to_nearest=bool(policy.pack_rounds_to_nearest)), error_flags)
    operands = operands_of(len(spec.inputs))
    buffer_sizes = {op: region.buffer_size for op, region in zip(operands, regions)}
    return desc, plans, {op: placed.offset_of[name] for op, name in zip(operands, spec.tensor_fields)}, buffer_sizes


def check_plans(desc, plans, offsets, buffer_sizes) -> None:
    """The footprint model of the plans writes exactly the output's element bytes, each from its own element's
    inputs, inside the bound views and without lost updates."""
    spec = spec_of(desc)
    operands = operands_of(len(spec.inputs))
    tensors = tuple(getattr(desc, name) for name in spec.tensor_fields)
    touched = footprint_of(plans, operands, buffer_sizes)
    assert not touched.violations, touched.violations[:5]
    expected = expected_values(tensors, offsets, operands)
    outside = sorted(set(touched.values) - set(expected))
    assert not outside, f"bytes outside the output's elements written, e.g. {outside[:8]}"
    missing = sorted(set(expected) - set(touched.values))
    assert not missing, f"output bytes never written, e.g. {missing[:8]}"
    wrong = [b for b in expected if touched.values[b] != expected[b]]
    assert not wrong, f"bytes given another element's result, e.g. {[(b, touched.values[b], expected[b]) for b in wrong[:3]]}"


KernelKind = tuple[Grid, OutputStore, bool, bool]  # grid, output store, 64-bit storage, workgroup memory prepared


def kind_id(kind: KernelKind) -> str:
    """'divisor_rows-units-wide': a kind as a test id."""
    return "-".join([kind[0].name.lower(), kind[1].name.lower()] + ["wide"] * kind[2] + ["prepared"] * kind[3])


def kind_of(plan: DispatchPlan) -> KernelKind:
    key = plan.key
    return key.loop.grid, key.loop.output_store, key.wide, key.operation.workgroup_file is not None


_SMALL = DispatchPolicy(workgroup_size=2)  # (every grid on little data)
F32, F16, I8, U8, I64 = DataType.FLOAT32, DataType.FLOAT16, DataType.INT8, DataType.UINT8, DataType.INT64
SIGN, IS_NAN, MOD_FLOOR = "ELEMENT_WISE_SIGN", "ELEMENT_WISE_IS_NAN", "ELEMENT_WISE_MODULUS_FLOOR"


def _case(operator: str, in_type: DataType, sizes: tuple[int, ...], strides: dict | None = None) -> LayoutCase:
    """A case in separate buffers, bound at offset 0 with 32 bytes after each tensor."""
    spec = spec_by_name(operator)
    out_type = spec.output_type(in_type)
    fields = spec.tensor_fields
    return LayoutCase(operator, None, in_type, out_type, sizes, {name: (strides or {}).get(name) for name in fields},
                      {name: 0 for name in fields}, {name: 32 for name in fields}, "separate", _SMALL)


# One layout for each kind of kernel the planner makes (grid, output store, 64-bit storage, workgroup memory
# prepared): tests/test_planner.py checks that each plans its kind, tests/test_canaries.py that the footprint model
# and the GPU agree on the bytes it writes.
ROWS_PADDED, ROWS_BROADCAST = (80, 1), (0, 1)
CASES_BY_KIND: dict[KernelKind, LayoutCase] = {
    (Grid.FLAT, OutputStore.UNITS, False, False): _case(SIGN, F32, (61,)),
    (Grid.FLAT, OutputStore.UNITS, False, True): _case(MOD_FLOOR, U8, (61,)),
    (Grid.FLAT, OutputStore.UNITS, True, False): _case(SIGN, I64, (61,)),
    (Grid.FLAT, OutputStore.STEPPED, False, False): _case(IS_NAN, F32, (61,), {"output_tensor": (2,)}),
    (Grid.FLAT, OutputStore.STEPPED, False, True): _case(MOD_FLOOR, U8, (61,), {"output_tensor": (2,)}),
    (Grid.FLAT, OutputStore.SCATTER_WORDS, False, False): _case(SIGN, F32, (61,), {"output_tensor": (3,)}),
    (Grid.FLAT, OutputStore.SCATTER_WORDS, False, True): _case(MOD_FLOOR, U8, (5, 12), {"output_tensor": (52, 4)}),
    (Grid.FLAT, OutputStore.SCATTER_WORDS, True, False): _case(SIGN, I64, (61,), {"output_tensor": (3,)}),
    (Grid.FLAT, OutputStore.SCATTER_CHUNKS, False, False): _case(SIGN, I8, (61,), {"output_tensor": (4,)}),
    (Grid.FLAT, OutputStore.SCATTER_ATOMIC, False, False): _case(SIGN, I8, (3, 4, 5), {"output_tensor": (1, 21, 4)}),
    (Grid.FLAT, OutputStore.SCATTER_ATOMIC, False, True): _case(MOD_FLOOR, U8, (3, 4, 5),
                                                                 {"output_tensor": (1, 21, 4)}),
    (Grid.ROWS, OutputStore.UNITS, False, False): _case(SIGN, F32, (5, 64), {"input_tensor": ROWS_PADDED}),
    (Grid.ROWS, OutputStore.UNITS, False, True): _case(MOD_FLOOR, U8, (5, 64), {"a_tensor": ROWS_PADDED}),
    (Grid.ROWS, OutputStore.UNITS, True, False): _case(SIGN, I64, (5, 64), {"input_tensor": ROWS_PADDED}),
    (Grid.ROWS, OutputStore.STEPPED, False, False): _case(IS_NAN, F32, (3, 64), {"output_tensor": (144, 2)}),
    (Grid.ROWS, OutputStore.SCATTER_WORDS, False, False): _case(SIGN, F32, (5, 64), {"output_tensor": (70, 1)}),
    (Grid.ROWS, OutputStore.SCATTER_WORDS, True, False): _case(SIGN, I64, (5, 64), {"output_tensor": (69, 1)}),
    (Grid.ROWS, OutputStore.SCATTER_ATOMIC, False, False): _case(SIGN, I8, (5, 64), {"output_tensor": (70, 1)}),
    (Grid.REPLICATED_ROWS, OutputStore.UNITS, False, False): _case(IS_NAN, F32, (9, 64),
                                                                   {"input_tensor": ROWS_BROADCAST}),
    (Grid.REPLICATED_ROWS, OutputStore.UNITS, False, True): _case(
        MOD_FLOOR, U8, (9, 64), {"a_tensor": ROWS_BROADCAST, "b_tensor": ROWS_BROADCAST}),
    (Grid.REPLICATED_ROWS, OutputStore.UNITS, True, False): _case(SIGN, I64, (9, 64),
                                                                  {"input_tensor": ROWS_BROADCAST}),
    (Grid.REPLICATED_ROWS, OutputStore.STEPPED, False, False): _case(
        IS_NAN, F32, (5, 64), {"input_tensor": ROWS_BROADCAST, "output_tensor": (144, 2)}),
    (Grid.REPLICATED_ROWS, OutputStore.SCATTER_WORDS, False, False): _case(
        SIGN, F32, (9, 64), {"input_tensor": ROWS_BROADCAST, "output_tensor": (70, 1)}),
    (Grid.REPLICATED_ROWS, OutputStore.SCATTER_WORDS, True, False): _case(
        SIGN, I64, (9, 64), {"input_tensor": ROWS_BROADCAST, "output_tensor": (69, 1)}),
    (Grid.REPLICATED_ROWS, OutputStore.SCATTER_ATOMIC, False, False): _case(
        SIGN, I8, (9, 64), {"input_tensor": ROWS_BROADCAST, "output_tensor": (70, 1)}),
    (Grid.DIVISOR_ROWS, OutputStore.UNITS, False, True): _case(MOD_FLOOR, I8, (9, 64), {"b_tensor": ROWS_BROADCAST}),
    (Grid.DIVISOR_ROWS, OutputStore.UNITS, True, False): _case(MOD_FLOOR, I64, (9, 64), {"b_tensor": ROWS_BROADCAST}),
    (Grid.DIVISOR_ROWS_LOOPED, OutputStore.UNITS, False, False): _case(MOD_FLOOR, F16, (9, 64),
                                                                       {"b_tensor": ROWS_BROADCAST}),
    (Grid.TILES, OutputStore.SCATTER_WORDS, False, False): _case(SIGN, F32, (13, 11), {"input_tensor": (1, 13)}),
    (Grid.TILES, OutputStore.SCATTER_WORDS, False, True): _case(
        MOD_FLOOR, I8, (16, 20), {"a_tensor": (1, 16), "b_tensor": (1, 16)}),
    (Grid.TILES, OutputStore.SCATTER_WORDS, True, False): _case(SIGN, I64, (3, 7, 5), {"input_tensor": (35, 1, 7)}),
    (Grid.TILES, OutputStore.SCATTER_ATOMIC, False, False): _case(SIGN, I8, (13, 11), {"input_tensor": (1, 13)}),
}
