"""Binding-time behaviour for embedding: offsets, in-place, strided sub-word outputs with canaries, splitting
over the binding-size limit, more than 65535 workgroups, caller encoders, batches, caches, threads, refusals."""

import concurrent.futures
import dataclasses

import numpy as np
import pytest
import wgpu
from hypothesis import assume, given
from hypothesis import strategies as st

import gpuops
from gpuops import Binding, DataType, SignDesc, TensorDesc
from gpuops.kernel import Operand, OutputBinding, OutputStore, Placement
from gpuops.plan import flat_grid, rows_grid
from gpuops.operators import spec_of
from gpuops import shaders

from .dml import made_plans, USAGE, device_with, kernel_keys, make_desc, run_and_check
from .reference import BINARY, assert_same_bits, op_cases, random_values

PACKED = [DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.FLOAT16]
ALL_TYPES = PACKED + [DataType.FLOAT32, DataType.INT32, DataType.UINT32, DataType.INT64, DataType.UINT64]
SIGN, MOD_FLOOR, MOD_TRUNC = "ELEMENT_WISE_SIGN", "ELEMENT_WISE_MODULUS_FLOOR", "ELEMENT_WISE_MODULUS_TRUNCATE"


def _values(rng):
    return lambda t, n: random_values(t, n, rng)


@pytest.mark.parametrize("data_type", [DataType.INT8, DataType.FLOAT16, DataType.FLOAT32, DataType.INT64],
                         ids=lambda t: t.name.lower())
@pytest.mark.parametrize("offset", range(0, 257, 16))
def test_offsets_every_multiple_of_16(device, data_type, offset):
    rng = np.random.default_rng(offset)
    desc = make_desc(MOD_FLOOR, None, data_type, data_type, (37,))
    offsets = {"a_tensor": offset, "b_tensor": (offset * 3) % 272, "output_tensor": offset}
    run_and_check(device, desc, rng, _values(rng), offsets=offsets)


@pytest.mark.parametrize("alignment", [32, 64, 256])
def test_guaranteed_alignment(device, alignment):
    rng = np.random.default_rng(alignment)
    tensor = {"guaranteed_base_offset_alignment": alignment}
    desc = make_desc(SIGN, None, DataType.INT16, DataType.INT16, (9,), None,
                     input_tensor=tensor, output_tensor=tensor)
    run_and_check(device, desc, rng, _values(rng), offsets={"input_tensor": alignment, "output_tensor": 2 * alignment})
    with pytest.raises(gpuops.ValidationError, match=rf"offset 16 is not a multiple of {alignment}"):
        run_and_check(device, desc, rng, _values(rng), offsets={"input_tensor": 16})


OUTPUT_LAYOUTS = {  # sizes, output strides: the elements of one word are not neighbours in iteration order
    "stride-2": ((40,), (2,)),  # one dimension: each word belongs to one unit, plain stores
    "stride-3": ((33,), (3,)),
    "permuted": ((5, 6), (1, 5)),  # a packed layout in another order: one linear run
    "padded-permuted": ((3, 4, 5), (1, 21, 4)),  # a word holds elements of several units: atomics
}


@pytest.mark.parametrize("layout", list(OUTPUT_LAYOUTS))
@pytest.mark.parametrize("data_type", PACKED, ids=lambda t: t.name.lower())
@pytest.mark.parametrize("operator", [SIGN, MOD_TRUNC])
def test_strided_packed_outputs_touch_only_their_elements(device, operator, data_type, layout):
    sizes, out_strides = OUTPUT_LAYOUTS[layout]
    rng = np.random.default_rng(7)
    desc = make_desc(operator, None, data_type, data_type, sizes, {"output_tensor": out_strides})
    for offset in (0, 16, 48):
        run_and_check(device, desc, rng, _values(rng), offsets={"output_tensor": offset})
    if data_type.size < 4:  # both store kinds are exercised
        keys = [key for key in device._pipelines if key.operation.op_file == spec_of(desc).shader
                and key.operation.input_type == data_type and not key.linear(Operand.OUT)]
        assert not any(key.atomic_output for key in keys if key.loop.rank == 1)  # one dimension: plain stores
        if layout == "stride-2":  # a unit's elements fill its two chunks' every other element: chunk stores
            assert any(key.loop.output_store in (OutputStore.STEPPED, OutputStore.SCATTER_CHUNKS) for key in keys)
        if layout == "padded-permuted":  # three dimensions stay, with words shared between units: atomics
            assert any(key.atomic_output for key in keys if key.loop.rank == 3)
        if layout.startswith("stride"):
            assert any(key.loop.rank == 1 for key in keys)


STEPPED_LAYOUTS = {  # sizes, input strides, output strides, output offsets, stepped
    "one-dimension": ((37,), None, (2,), (0, 16, 48), True),  # (a partial last unit)
    "long": ((300,), None, (2,), (0, 32), True),
    "gathered-input": ((45,), (3,), (2,), (0, 16), True),
    "rows": ((3, 64), None, (144, 2), (0, 16), True),  # rows start on the chunk grid
    "broadcast-rows": ((5, 64), (0, 1), (144, 2), (16,), True),  # replicated rows for one-input operators
    "rows-off-the-grid": ((3, 64), None, (130, 2), (0,), False),  # rows of 130 elements: spans off the grid
}
NARROW_OUTPUT_CASES = [pytest.param(c, id=i) for c, i in op_cases() if c[3].size < 4]


@pytest.mark.parametrize("layout", list(STEPPED_LAYOUTS))
@pytest.mark.parametrize("case", NARROW_OUTPUT_CASES)
def test_stepped_outputs(device, monkeypatch, case, layout):
    """8/16-bit outputs of innermost stride 2 whose units' spans are aligned run stepped (OUT_STEP 2, units of half
    a chunk's elements spread to every second element of one chunk, or two words for float32 -> uint8): bit for
    bit, with the bytes between the elements kept; where a span is off the grid, the kernel is not stepped."""
    operator, mode, in_type, out_type = case
    sizes, in_strides, out_strides, out_offsets, stepped = STEPPED_LAYOUTS[layout]
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    strides = {name: in_strides for name in names} | {"output_tensor": out_strides}
    if layout == "broadcast-rows" and operator in BINARY:
        strides["a_tensor"] = None  # one broadcast operand
    rng = np.random.default_rng(11)
    keys = kernel_keys(device, monkeypatch)
    desc = make_desc(operator, mode, in_type, out_type, sizes, strides)
    for offset in out_offsets:
        run_and_check(device, desc, rng, _values(rng), offsets={"output_tensor": offset})
    assert keys and all((key.loop.output_store is OutputStore.STEPPED) == stepped for key in keys)
    if stepped:
        assert all(key.unit * out_type.size * 2 <= 16 and not key.atomic_output for key in keys)


@pytest.mark.parametrize("strided", [False, True], ids=["packed", "strided"])
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name.lower())
@pytest.mark.parametrize("operator,aliased", [(SIGN, "input_tensor"), (MOD_FLOOR, "a_tensor"),
                                              (MOD_TRUNC, "b_tensor")])
def test_in_place(device, operator, aliased, data_type, strided):
    rng = np.random.default_rng(3)
    sizes = (4, 9)
    strides = {aliased: (20, 2), "output_tensor": (20, 2)} if strided else None
    desc = make_desc(operator, None, data_type, data_type, sizes, strides)
    run_and_check(device, desc, rng, _values(rng), offsets={aliased: 32}, in_place=aliased)


def _buffer(device, size=256, usage=USAGE):
    return device.wgpu_device.create_buffer(size=size, usage=usage)


def _good_bindings(device, spec_inputs=("a_tensor", "b_tensor")):
    bindings = {name: Binding(_buffer(device)) for name in spec_inputs}
    bindings["output_tensor"] = Binding(_buffer(device))
    return bindings


MOD_DESC = make_desc(MOD_FLOOR, None, DataType.FLOAT32, DataType.FLOAT32, (8,))  # 32 bytes each


def _refusals(device):
    shared = _buffer(device)
    other_device = device.wgpu.gpu.request_adapter_sync().request_device_sync()
    yield "offset-8", {"a_tensor": Binding(_buffer(device), 8)}, r"bindings\['a_tensor'\]: offset 8 is not a multiple"
    yield "offset-past-end", {"b_tensor": Binding(_buffer(device), 272)}, r"bindings\['b_tensor'\]: offset 272 is past"
    yield "size-too-small", {"a_tensor": Binding(_buffer(device), 0, 16)}, r"size 16 is smaller than"
    yield "size-past-end", {"a_tensor": Binding(_buffer(device), 32, 240)}, r"runs past the end"
    yield "no-storage-usage", {"b_tensor": Binding(_buffer(device, usage=wgpu.BufferUsage.COPY_DST))}, \
        r"bindings\['b_tensor'\]: the buffer's usage .* lacks wgpu.BufferUsage.STORAGE"
    yield "other-device", {"output_tensor": Binding(other_device.create_buffer(size=256, usage=USAGE))}, \
        r"bindings\['output_tensor'\]: the buffer belongs to another wgpu device"
    yield "not-a-binding", {"a_tensor": _buffer(device)}, r"bindings\['a_tensor'\]: GPUBuffer is not a gpuops.Binding"
    yield "partial-overlap", {"a_tensor": Binding(shared, 0), "output_tensor": Binding(shared, 16)}, \
        r"bindings\['output_tensor'\]: bytes \[16, 48\) partially overlap a_tensor's \[0, 32\)"


@pytest.mark.parametrize("case", range(8))
def test_binding_refusals(device, case):
    name, change, message = list(_refusals(device))[case]
    bindings = {**_good_bindings(device), **change}
    compiled = device.compile(MOD_DESC)
    with pytest.raises(gpuops.ValidationError, match=message):
        compiled.execute(bindings)
    compiled.execute(_good_bindings(device))  # nothing was submitted; the device is still usable


def test_missing_and_unknown_binding_names(device):
    compiled = device.compile(MOD_DESC)
    bindings = _good_bindings(device)
    del bindings["b_tensor"]
    with pytest.raises(gpuops.ValidationError, match=r"bindings\['b_tensor'\]: missing; expected: a_tensor"):
        compiled.execute(bindings)
    with pytest.raises(gpuops.ValidationError, match=r"bindings\['input_tensor'\]: unknown binding"):
        compiled.execute({**_good_bindings(device), "input_tensor": Binding(_buffer(device))})
    with pytest.raises(gpuops.ValidationError, match="is not a mapping"):
        compiled.execute([Binding(_buffer(device))])


def test_cached_plans_do_not_skip_validation(device):
    """A plan is looked up by each tensor's buffer, offset and size: what differs only in the mapping around them
    (an extra name, a look-alike of a Binding) still goes through validation, in a batch and out of one."""
    compiled = device.compile(MOD_DESC)
    bindings = _good_bindings(device)
    compiled.execute(bindings)  # the plan is cached now
    look_alike = dataclasses.make_dataclass("LookAlike", ["buffer", "offset", "size"], frozen=True)
    a = bindings["a_tensor"]
    for bad, message in (({**bindings, "input_tensor": a}, r"bindings\['input_tensor'\]: unknown binding"),
                         ({**bindings, "a_tensor": look_alike(a.buffer, a.offset, a.size)},
                          r"bindings\['a_tensor'\]: LookAlike is not a gpuops.Binding")):
        with pytest.raises(gpuops.ValidationError, match=message):
            compiled.execute(bad)
        with device.batch() as batch, pytest.raises(gpuops.ValidationError, match=message):
            batch.record(compiled, bad)
    with device.batch() as batch:
        batch.record(compiled, {name: dataclasses.replace(b) for name, b in bindings.items()})  # equal: cached
    assert batch.count == 1


@pytest.mark.parametrize("case", [c for c, _ in op_cases()], ids=[i for _, i in op_cases()])
def test_linear_inputs_are_bound_once_as_chunks(device, monkeypatch, case):
    """A linear input whose window can be whole chunks inside its buffer is bound once, as chunks (one view fewer
    per dispatch); the partial last unit (37 elements) reads its words through that view. float16 -> uint32 units
    read an input's words on their main path and keep both views."""
    operator, mode, in_type, out_type = case
    keys = kernel_keys(device, monkeypatch)
    rng = np.random.default_rng(15)
    desc = make_desc(operator, mode, in_type, out_type, (37,))
    run_and_check(device, desc, rng, lambda t, n: random_values(t, n, rng))
    words_read = in_type == DataType.FLOAT16 and out_type == DataType.UINT32
    assert keys[-1].loop.placements == (Placement.SEPARATE if words_read else Placement.CHUNKS,) * keys[-1].input_count
    layout = shaders.bindings(keys[-1])
    assert len(layout) == keys[-1].input_count * (2 if words_read else 1) + 1


def test_input_ending_its_buffer_off_a_chunk_keeps_its_word_view(device, monkeypatch):
    """No room to round the window up to whole chunks (37 float32 elements in a 148-byte buffer)."""
    keys = kernel_keys(device, monkeypatch)
    x = np.random.default_rng(16).standard_normal(37).astype(np.float32)
    a = device.wgpu_device.create_buffer_with_data(data=x, usage=USAGE)
    out = _buffer(device, 148)
    desc = make_desc(SIGN, None, DataType.FLOAT32, DataType.FLOAT32, (37,))
    device.compile(desc).execute({"input_tensor": Binding(a), "output_tensor": Binding(out)})
    assert keys[-1].loop.placements == (Placement.SEPARATE,)
    assert_same_bits(np.frombuffer(device.wgpu_device.queue.read_buffer(out), np.float32), np.sign(x))


def test_in_place_refused_where_not_supported(device):
    desc = make_desc("ELEMENT_WISE_IS_NAN", None, DataType.FLOAT32, DataType.UINT32, (8,))
    shared = _buffer(device)
    with pytest.raises(gpuops.ValidationError, match="does not support in-place execution"):
        device.compile(desc).execute({"input_tensor": Binding(shared), "output_tensor": Binding(shared)})
    # The same region with another layout is a partial overlap, even for an in-place operator.
    sign = SignDesc(TensorDesc(DataType.FLOAT32, (4,), (2,)), TensorDesc(DataType.FLOAT32, (4,)))
    with pytest.raises(gpuops.ValidationError, match="partially overlap"):
        device.compile(sign).execute({"input_tensor": Binding(shared), "output_tensor": Binding(shared)})


def test_inputs_may_share_a_buffer_with_the_output_elsewhere(device):
    """One big heap buffer, three disjoint regions: the shared-buffer kernel variant binds inputs read-write."""
    rng = np.random.default_rng(11)
    heap = rng.standard_normal(96).astype(np.float32)
    buffer = device.wgpu_device.create_buffer_with_data(data=heap, usage=USAGE)
    device.compile(MOD_DESC).execute({"a_tensor": Binding(buffer, 0), "b_tensor": Binding(buffer, 128),
                                      "output_tensor": Binding(buffer, 256)})
    got = np.frombuffer(device.wgpu_device.queue.read_buffer(buffer), np.float32)
    assert_same_bits(got[64:72], np.remainder(heap[0:8], heap[32:40]))
    assert_same_bits(got[:64], heap[:64])


@pytest.fixture
def small_limit_device(device):
    """A Device on the same wgpu device whose binding limit is lowered to 256 bytes (test-only setting)."""
    return device_with(device, binding_size_limit=256)


@pytest.mark.parametrize("strided", [False, True], ids=["packed", "strided"])
@pytest.mark.parametrize("case", [c for c, _ in op_cases()], ids=[i for _, i in op_cases()])
def test_split_over_the_binding_limit(small_limit_device, monkeypatch, case, strided):
    operator, mode, in_type, out_type = case
    rng = np.random.default_rng(5)
    sizes = (6, 50)
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    strides = {name: (150, 3) for name in (*names, "output_tensor")} if strided else None
    if strided and operator in BINARY:
        strides["b_tensor"] = (0, 1)  # broadcast along the outer dimension
    desc = make_desc(operator, mode, in_type, out_type, sizes, strides)
    plans = made_plans(monkeypatch)
    run_and_check(small_limit_device, desc, rng, _values(rng), offsets={names[0]: 48})
    assert len(plans[0]) > 1


def test_split_inside_a_row(small_limit_device):
    """A single row larger than the limit is cut along the next dimension."""
    rng = np.random.default_rng(6)
    desc = make_desc(SIGN, None, DataType.INT64, DataType.INT64, (3, 80), {"input_tensor": (1, 3)})
    run_and_check(small_limit_device, desc, rng, _values(rng))


def test_more_than_65535_workgroups(device, monkeypatch):
    """Workgroups of one invocation, so a 1 MiB tensor needs 2^16 + 1 of them: a 2-D grid."""
    small_groups = device_with(device, workgroup_size=1, units_per_invocation=1)
    count = (2**16 + 1) * 4  # float32: 4 elements a unit
    x = np.random.default_rng(8).standard_normal(count).astype(np.float32)
    plans = made_plans(monkeypatch)
    assert_same_bits(gpuops.sign(x, device=small_groups), np.sign(x))
    assert plans[0][0].grid[1] > 1


@given(st.integers(1, 2**32), st.integers(1, 65535))
def test_grid_covers_the_workgroups_with_less_than_a_row_to_spare(groups, per_dimension):
    assume(groups <= per_dimension**2)  # a binding is at most 2^31 bytes: the planner never asks for more
    x, y, z = flat_grid(groups, per_dimension)
    assert max(x, y) <= per_dimension and z == 1
    assert groups <= x * y < groups + y


@given(st.integers(1, 5000), st.integers(1, 2**20), st.sampled_from([2, 4, 8, 16]), st.sampled_from([1, 2, 64, 256]),
       st.integers(1, 4), st.integers(1, 65535), st.sampled_from([1, 4]))
def test_rows_grid_covers_every_row_and_unit(rows, row_units, unit, workgroup, units_per_invocation, per_dimension,
                                             row_group):
    """The ROWS grid: x blocks cover a row's units, y * z cover the groups of rows with less than one y-row to
    spare, and no dimension passes the limit; layouts it does not suit get None."""
    row = row_units * unit
    grid = rows_grid((rows, row), unit, row_group, workgroup, units_per_invocation, per_dimension)
    blocks = -(-row_units // (workgroup * units_per_invocation))
    groups = -(-rows // row_group)
    if row_units < workgroup or blocks > per_dimension or groups > per_dimension**2:
        assert grid is None
        return
    x, y, z = grid
    assert x == blocks and max(x, y, z) <= per_dimension
    assert groups <= y * z < groups + y
    # a unit would span two rows; one dimension
    assert rows_grid((rows, row + 1), unit, row_group, workgroup, units_per_invocation, per_dimension) is None
    assert rows_grid((rows * row,), unit, row_group, workgroup, units_per_invocation, per_dimension) is None


def test_lowered_workgroup_limit_uses_the_second_dimension(device):
    lowered = device_with(device, max_workgroups_per_dimension=3)
    x = np.arange(-20000, 20000, dtype=np.int16)
    assert_same_bits(gpuops.sign(x, device=lowered), np.sign(x))


def test_record_into_a_callers_encoder_and_batch_dependent_operations(device):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(100).astype(np.float32) * 10
    w = np.float32(3.0) + np.zeros(100, np.float32)
    bufs = {name: device.wgpu_device.create_buffer_with_data(data=data, usage=USAGE)
            for name, data in (("x", x), ("y", np.zeros(100, np.float32)), ("w", w), ("z", np.zeros(100, np.float32)))}
    f32 = TensorDesc(DataType.FLOAT32, (100,))
    sign = device.compile(SignDesc(f32, f32))
    mod = device.compile(gpuops.ModulusFloorDesc(f32, f32, f32))
    # Caller's encoder: gpuops records, the caller submits.
    encoder = device.wgpu_device.create_command_encoder()
    sign.record(encoder, {"input_tensor": Binding(bufs["x"]), "output_tensor": Binding(bufs["y"])})
    device.wgpu_device.queue.submit([encoder.finish()])
    assert_same_bits(np.frombuffer(device.wgpu_device.queue.read_buffer(bufs["y"]), np.float32), np.sign(x))
    # A batch: z = (x mod w) then z = sign(z) in place, in one submission, in order.
    with device.batch() as batch:
        batch.record(mod, {"a_tensor": Binding(bufs["x"]), "b_tensor": Binding(bufs["w"]),
                           "output_tensor": Binding(bufs["z"])})
        batch.record(sign, {"input_tensor": Binding(bufs["z"]), "output_tensor": Binding(bufs["z"])})
    expected = np.sign(np.remainder(x, w))
    expected[expected == 0] = 0  # -0 -> +0
    assert_same_bits(np.frombuffer(device.wgpu_device.queue.read_buffer(bufs["z"]), np.float32), expected)
    assert batch.count == 2
    with pytest.raises(gpuops.GpuOpsError, match="already submitted"):
        batch.record(sign, {"input_tensor": Binding(bufs["z"]), "output_tensor": Binding(bufs["z"])})


def test_batch_sets_a_pipeline_only_when_it_changes(device):
    """A compute pass keeps its pipeline between dispatches: a batch sets it again only for another operator."""
    rng = np.random.default_rng(10)
    f32 = TensorDesc(DataType.FLOAT32, (64,))
    sign = device.compile(SignDesc(f32, f32))
    mod = device.compile(gpuops.ModulusTruncateDesc(f32, f32, f32))
    xs = [rng.standard_normal(64).astype(np.float32) for _ in range(4)]
    ins = [device.wgpu_device.create_buffer_with_data(data=x, usage=USAGE) for x in xs]
    outs = [device.wgpu_device.create_buffer(size=256, usage=USAGE) for _ in xs]
    with device.batch() as batch:
        pass_ = batch._pass
        calls = []
        original = pass_.set_pipeline
        batch._pass = type("CountingPass", (), {
            "set_pipeline": lambda self, p: calls.append(p) or original(p),
            "set_bind_group": lambda self, *a: pass_.set_bind_group(*a),
            "dispatch_workgroups": lambda self, *a: pass_.dispatch_workgroups(*a),
            "end": lambda self: pass_.end()})()
        for i in (0, 1):
            batch.record(sign, {"input_tensor": Binding(ins[i]), "output_tensor": Binding(outs[i])})
        batch.record(mod, {"a_tensor": Binding(ins[2]), "b_tensor": Binding(ins[0]), "output_tensor": Binding(outs[2])})
        batch.record(sign, {"input_tensor": Binding(ins[3]), "output_tensor": Binding(outs[3])})
    assert len(calls) == 3  # sign, modulus, sign
    got = [np.frombuffer(device.wgpu_device.queue.read_buffer(b), np.float32) for b in outs]
    for i in (0, 1, 3):
        assert_same_bits(got[i], np.sign(xs[i]))
    assert_same_bits(got[2], np.fmod(xs[2], xs[0]), xs[2], xs[0])


def test_binding_table_records_like_its_bindings_without_a_lookup(device, monkeypatch):
    """A BindingTable (DML's binding table) is validated and planned once; recording it through a batch, a caller's
    encoder or execute() gives the same bits as the bindings themselves, looks nothing up and allocates nothing,
    and outlives the device's bounded plan cache."""
    monkeypatch.setattr(gpuops.device, "PLAN_CACHE_SIZE", 2)
    rng = np.random.default_rng(11)
    x, y = (rng.standard_normal(64).astype(np.float32) * 10 for _ in range(2))
    f32 = TensorDesc(DataType.FLOAT32, (64,))
    mod = device.compile(gpuops.ModulusFloorDesc(f32, f32, f32))
    sign = device.compile(SignDesc(f32, f32))
    a, b = (device.wgpu_device.create_buffer_with_data(data=v, usage=USAGE) for v in (x, y))
    outs = [device.wgpu_device.create_buffer(size=256, usage=USAGE) for _ in range(3)]
    tables = [mod.bind({"a_tensor": Binding(a), "b_tensor": Binding(b), "output_tensor": Binding(out)}) for out in outs]
    in_place = sign.bind({"input_tensor": Binding(outs[0]), "output_tensor": Binding(outs[0])})
    assert isinstance(tables[0], gpuops.BindingTable) and tables[0].prepared is mod.prepared
    for n in range(4):  # evict every plan from the device's cache
        sign.execute({"input_tensor": Binding(a), "output_tensor": Binding(outs[n % 3])})
    created = []
    for method in ("create_buffer", "create_buffer_with_data", "create_bind_group"):
        original = getattr(device.wgpu_device, method)
        monkeypatch.setattr(device.wgpu_device, method,
                            lambda *args, _m=method, _o=original, **kw: created.append(_m) or _o(*args, **kw))
    monkeypatch.setattr(gpuops.device.PreparedOperator, "_plan_key", lambda self, bindings: pytest.fail("looked up"))
    with device.batch() as batch:
        batch.record(mod, tables[0])
        batch.record(sign, in_place)  # reads mod's output
    encoder = device.wgpu_device.create_command_encoder()
    mod.record(encoder, tables[1])
    device.wgpu_device.queue.submit([encoder.finish()])
    mod.execute(tables[2])
    assert created == []
    expected = np.remainder(x, y)
    got = [np.frombuffer(device.wgpu_device.queue.read_buffer(out), np.float32) for out in outs]
    signed = np.sign(expected)
    signed[signed == 0] = 0  # -0 -> +0
    assert_same_bits(got[0], signed)
    assert_same_bits(got[1], expected, x, y)
    assert_same_bits(got[2], expected, x, y)


def test_binding_table_refusals(device):
    """bind() validates at once (a refused binding makes no table); a table records only with its own operator."""
    mod = device.compile(MOD_DESC)
    with pytest.raises(gpuops.ValidationError, match=r"bindings\['a_tensor'\]: offset 8 is not a multiple"):
        mod.bind(_good_bindings(device) | {"a_tensor": Binding(_buffer(device), 8)})
    table = mod.bind(_good_bindings(device))
    sign = device.compile(make_desc(SIGN, None, DataType.FLOAT32, DataType.FLOAT32, (8,)))
    for record in (lambda: sign.execute(table), lambda: device.batch().record(sign, table)):
        with pytest.raises(gpuops.ValidationError,
                           match=r"ELEMENT_WISE_SIGN: this binding table was made by another compiled operator "
                                 r"\(ELEMENT_WISE_MODULUS_FLOOR\)"):
            record()


def test_repeated_execution_allocates_nothing(device, monkeypatch):
    compiled = device.compile(MOD_DESC)
    bindings = _good_bindings(device)
    compiled.execute(bindings)
    created = []
    wgpu_device = device.wgpu_device
    for method in ("create_buffer", "create_buffer_with_data", "create_bind_group", "create_compute_pipeline",
                   "create_shader_module"):
        original = getattr(wgpu_device, method)
        monkeypatch.setattr(wgpu_device, method, lambda *a, _m=method, _o=original, **k: created.append(_m) or _o(*a, **k))
    for _ in range(5):
        compiled.execute(bindings)
    assert created == []


def test_caches_are_bounded(device, monkeypatch):
    monkeypatch.setattr(gpuops.device, "PLAN_CACHE_SIZE", 20)
    monkeypatch.setattr(gpuops.device, "COMPILED_CACHE_SIZE", 5)
    fresh = gpuops.Device(wgpu_device=device.wgpu_device)
    compiled = fresh.compile(make_desc(SIGN, None, DataType.UINT8, DataType.UINT8, (5,)))
    buffers = [(_buffer(device, 16), _buffer(device, 16)) for _ in range(30)]
    for a, out in buffers:
        compiled.execute({"input_tensor": Binding(a), "output_tensor": Binding(out)})
    assert len(fresh._plans) == 20
    del a, out, buffers  # a plan lives no longer than its buffers
    assert len(fresh._plans) == 0
    for n in range(1, 10):
        fresh.compile(make_desc(SIGN, None, DataType.UINT8, DataType.UINT8, (n,)))
    assert len(fresh._prepared) == 5


def test_one_device_from_eight_threads(device, dropped_devices_released):
    rng = np.random.default_rng(12)
    jobs = []
    for i in range(8 * 200):
        kind = i % 4
        dtype = [np.float32, np.int8, np.float16, np.int64][i % 4]
        a = rng.standard_normal(64 + i % 50).astype(dtype) if dtype in (np.float32, np.float16) else \
            rng.integers(-100, 100, 64 + i % 50).astype(dtype)
        b = a[::-1].copy()
        b[b == 0] = 3
        jobs.append((kind, a, b))

    def run(job):
        kind, a, b = job
        with np.errstate(all="ignore"):
            if kind == 0:
                return gpuops.sign(a, device=device), np.where(np.isnan(a) | (a == 0), a.dtype.type(0), np.sign(a))
            if kind == 1:
                return gpuops.modulus_floor(a, b, device=device), np.remainder(a, b)
            if kind == 2:
                return gpuops.is_nan(a, device=device), np.isnan(a).astype(np.uint8)
            return gpuops.modulus_truncate(a, b, device=device), np.fmod(a, b)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for got, expected in pool.map(run, jobs):
            assert_same_bits(got, expected.astype(got.dtype))


def test_descriptions_cannot_be_mutated(device):
    desc = make_desc(SIGN, None, DataType.FLOAT32, DataType.FLOAT32, (4,))
    device.compile(desc)
    with pytest.raises(gpuops.FrozenDescriptionError, match="dataclasses.replace"):
        desc.input_tensor = TensorDesc(DataType.INT8, (4,))
    with pytest.raises(gpuops.GpuOpsError):
        desc.input_tensor.sizes = (5,)
    assert isinstance(gpuops.FrozenDescriptionError("x"), dataclasses.FrozenInstanceError)


def test_more_memory_than_the_adapter_has(device):
    """The adapter's largest buffer (lowered here: adapters differ, some allow more than any DirectML tensor): a
    host result larger than it runs in pieces; a device result, one buffer, is refused before any work."""
    small = device_with(device, max_buffer_size=1 << 20)
    huge = np.broadcast_to(np.float32(-1.0), (1 << 19,))  # zero strides: a 4-byte input, a 2 MiB output
    assert np.array_equal(gpuops.sign(huge, device=small), np.full(1 << 19, -1, np.float32))
    row = gpuops.asarray(np.ones((1, 512), np.float32), small)
    column = gpuops.asarray(np.full((1024, 1), 3, np.float32), small)
    with pytest.raises(gpuops.DeviceError, match="a buffer of 2097152 bytes is needed; .* holds at most 1048576 "
                                                 "bytes"):
        gpuops.modulus_floor(row, column)  # a (1024, 512) float32 device result
    assert gpuops.sign(np.float32([-2]), device=small).tolist() == [-1.0]


def test_wgpu_errors_are_explained(device):
    compiled = device.compile(MOD_DESC)
    bindings = _good_bindings(device)
    bindings["a_tensor"].buffer.destroy()
    with pytest.raises(gpuops.DeviceError, match="ELEMENT_WISE_MODULUS_FLOOR: the WebGPU device refused"):
        compiled.execute(bindings)
    compiled.execute(_good_bindings(device))


def test_regions_of_one_buffer_far_apart(small_limit_device):
    """Inputs too far from the output to share its (limited) binding get views of their own."""
    device = small_limit_device
    rng = np.random.default_rng(13)
    heap = rng.standard_normal(1024).astype(np.float32)
    buffer = device.wgpu_device.create_buffer_with_data(data=heap, usage=USAGE)
    desc = make_desc(MOD_TRUNC, None, DataType.FLOAT32, DataType.FLOAT32, (40,))
    device.compile(desc).execute({"a_tensor": Binding(buffer, 0), "b_tensor": Binding(buffer, 1024),
                                  "output_tensor": Binding(buffer, 3072)})
    got = np.frombuffer(device.wgpu_device.queue.read_buffer(buffer), np.float32)
    assert_same_bits(got[768:808], np.fmod(heap[0:40], heap[256:296]))
    assert_same_bits(np.delete(got, np.s_[768:808]), np.delete(heap, np.s_[768:808]))
    keys = [k for k in device._pipelines if k.operation.op_file == "modulus/truncate.wgsl"]
    assert any(Placement.SHARED in k.loop.placements for k in keys)


@pytest.mark.parametrize("data_type,count", [(DataType.FLOAT32, 3), (DataType.INT8, 5), (DataType.INT64, 1),
                                             (DataType.FLOAT16, 5)], ids=lambda v: getattr(v, "name", str(v)))
def test_output_ending_where_the_buffer_ends(device, data_type, count):
    """A buffer that ends inside a 16-byte chunk: the output is bound as words, not chunks."""
    rng = np.random.default_rng(count)
    a = random_values(data_type, count, rng)
    b = random_values(data_type, count, rng)
    total = -(-a.nbytes // 4) * 4

    def exact_buffer(values):
        data = np.zeros(total, np.uint8)
        data[: values.nbytes] = values.view(np.uint8)
        return device.wgpu_device.create_buffer_with_data(data=data, usage=USAGE)

    out = exact_buffer(np.zeros(count, data_type.numpy_dtype))
    desc = make_desc(MOD_FLOOR, None, data_type, data_type, (count,))
    device.compile(desc).execute({"a_tensor": Binding(exact_buffer(a)), "b_tensor": Binding(exact_buffer(b)),
                                  "output_tensor": Binding(out)})
    got = np.frombuffer(device.wgpu_device.queue.read_buffer(out), data_type.numpy_dtype, count)
    with np.errstate(all="ignore"):
        assert_same_bits(got, np.remainder(a, b), a, b)
    assert any(k.loop.output_binding is OutputBinding.WORDS for k in device._pipelines
               if k.operation.input_type == data_type)


@pytest.mark.parametrize("by_reciprocals", [False, True], ids=["magnitudes", "signed-reciprocals"])
def test_int8_remainders_exact_by_either_library(device, monkeypatch, by_reciprocals):
    # Each operator takes its int8 remainders from one of two libraries (its row's TypePolicy, chosen by
    # measurement); both must be exact for both operators on every pair, so that the choice stays a matter of speed.
    from gpuops.operators import DEFAULT_TYPE_POLICY, OperatorSpec
    if not by_reciprocals:
        chosen = OperatorSpec.type_policy
        monkeypatch.setattr(OperatorSpec, "type_policy", lambda spec, data_type: DEFAULT_TYPE_POLICY
                            if data_type == DataType.INT8 else chosen(spec, data_type))
    fresh = device_with(device)  # its own compiled operators, whose operations are derived with the policy above
    keys = kernel_keys(fresh, monkeypatch)
    values = np.arange(-128, 128, dtype=np.int16).astype(np.int8)
    a, b = np.repeat(values, 256), np.tile(values, 256)
    for name, reference in (("modulus_floor", np.remainder), ("modulus_truncate", np.fmod)):
        got = getattr(gpuops, name)(a, b, device=fresh)
        with np.errstate(all="ignore"):
            assert_same_bits(got, reference(a, b), a, b)
    library = "signed_by_reciprocals.wgsl" if by_reciprocals else "signed_by_magnitudes.wgsl"
    assert keys and all(f"lib/{library}" in k.operation.files for k in keys)
