"""Property-based tests (hypothesis): random descriptions, strides, offsets and values, checked against NumPy.

Example counts are modest by default; GPUOPS_HYPOTHESIS_EXAMPLES raises them (see conftest.py)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuops

from .dml import device_with, make_desc, run_and_check
from .reference import BINARY, assert_same_bits, op_cases, random_values, reference, run_numpy_api

ALL_CASES = [c for c, _ in op_cases()]


ANY_RANK = st.integers(1, 8)
SMALL_SIZES = st.integers(1, 4)


@st.composite
def described_runs(draw, ranks=ANY_RANK, dimension_sizes=SMALL_SIZES):
    case = draw(st.sampled_from(ALL_CASES))
    operator = case[0]
    rank = draw(ranks)
    sizes = tuple(draw(st.lists(dimension_sizes, min_size=rank, max_size=rank)))
    names = ("a_tensor", "b_tensor") if operator in BINARY else ("input_tensor",)
    strides = {}
    for name in (*names, "output_tensor"):
        order = draw(st.permutations(range(rank)))
        pads = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
        layout = [0] * rank
        step = 1
        for d in reversed(order):
            layout[d] = step
            step *= sizes[d] + pads[d]
        if name != "output_tensor":  # inputs may broadcast: zero strides anywhere
            zeros = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
            layout = [0 if z else s for z, s in zip(zeros, layout)]
        strides[name] = tuple(layout) if draw(st.booleans()) or name != "output_tensor" else None
    offsets = {name: 16 * draw(st.integers(0, 6)) for name in (*names, "output_tensor")}
    in_place = None
    if case[2] == case[3] and operator != "ELEMENT_WISE_IS_NAN" and draw(st.booleans()):
        in_place = names[0]
        strides["output_tensor"] = strides[in_place] = strides["output_tensor"]
    seed = draw(st.integers(0, 2**32 - 1))
    return case, sizes, strides, offsets, in_place, seed


@given(described_runs())
def test_random_descriptions(device, run):
    (operator, mode, in_type, out_type), sizes, strides, offsets, in_place, seed = run
    desc = make_desc(operator, mode, in_type, out_type, sizes, strides)
    rng = np.random.default_rng(seed)
    run_and_check(device, desc, rng, lambda t, n: random_values(t, n, rng), offsets=offsets, in_place=in_place)


_SMALL_WORKGROUP_DEVICES: dict[tuple[str, int], gpuops.Device] = {}


def _small_workgroups(device: gpuops.Device, units_per_invocation: int) -> gpuops.Device:
    """Workgroups of one invocation: every strided layout whose rows hold whole units runs on the ROWS grid."""
    key = (device.backend, units_per_invocation)
    if key not in _SMALL_WORKGROUP_DEVICES:
        _SMALL_WORKGROUP_DEVICES[key] = device_with(device, workgroup_size=1, units_per_invocation=units_per_invocation,
                                                    max_workgroups_per_dimension=8)
    return _SMALL_WORKGROUP_DEVICES[key]


# Sizes of 16 and 32 give rows of whole units for every type (a unit is 2 to 16 elements).
@given(described_runs(ranks=st.integers(2, 4), dimension_sizes=st.sampled_from([1, 2, 3, 16, 32])), st.integers(1, 3))
def test_random_descriptions_on_row_grids(device, run, units_per_invocation):
    (operator, mode, in_type, out_type), sizes, strides, offsets, in_place, seed = run
    desc = make_desc(operator, mode, in_type, out_type, sizes, strides)
    rng = np.random.default_rng(seed)
    run_and_check(_small_workgroups(device, units_per_invocation), desc, rng, lambda t, n: random_values(t, n, rng),
                  offsets=offsets, in_place=in_place)


@st.composite
def broadcast_arrays(draw):
    case = draw(st.sampled_from([c for c in ALL_CASES if c[3].name != "UINT32"]))
    rank = draw(st.integers(0, 5))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    arity = 2 if case[0] in BINARY else 1
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arrays = []
    for _ in range(arity):
        # a right-aligned suffix of the shape with some dimensions 1: NumPy broadcasting rules
        keep = draw(st.integers(0, rank))
        own = tuple(1 if draw(st.booleans()) else n for n in shape[rank - keep:])
        array = random_values(case[2], int(np.prod(own)), rng).reshape(own)
        if draw(st.booleans()):
            array = np.asfortranarray(array)  # same values, column-major strides
        arrays.append(array)
    return case, arrays


@given(broadcast_arrays())
def test_numpy_broadcasting(device, drawn):
    (operator, mode, in_type, out_type), arrays = drawn
    got = run_numpy_api(operator, mode, out_type, *arrays, device=device)
    assert_same_bits(got, reference(operator, mode, out_type, *arrays), *arrays)


@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True), min_size=1,
                max_size=64),
       st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True), min_size=1,
                max_size=64))
def test_float32_modulus_values(device, a_values, b_values):
    n = min(len(a_values), len(b_values))
    a = np.array(a_values[:n], np.float32)
    b = np.array(b_values[:n], np.float32)
    for ours, theirs in ((gpuops.modulus_floor, np.remainder), (gpuops.modulus_truncate, np.fmod)):
        with np.errstate(all="ignore"):
            expected = theirs(a, b)
            got = ours(a, b, device=device)
        assert_same_bits(got, expected, a, b)


@st.composite
def output_layouts(draw):
    """A non-overlapping strided layout (padded and permuted) of 1 to 3 dimensions, its element size and base."""
    rank = draw(st.integers(1, 3))
    sizes = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    order = draw(st.permutations(range(rank)))
    strides, step = [0] * rank, draw(st.integers(1, 4))
    for d in reversed(order):  # innermost first: each stride leaves room for the dimensions inside it
        strides[d] = step
        step = step * sizes[d] + draw(st.integers(0, 3))
    base = draw(st.one_of(st.just(0), st.integers(0, 7)))  # 0 often: aligned to any word, chunks included
    return sizes, tuple(strides), draw(st.sampled_from([1, 2])), base, draw(st.sampled_from([4, 8, 16]))


@settings(max_examples=8 * settings.default.max_examples)  # host arithmetic only: cheap
@given(output_layouts(), st.sampled_from([4, 16]))
def test_units_own_their_words_only_when_they_do(layout, word_bytes):
    """Host logic behind plain (non-atomic) stores to strided 8/16-bit outputs, by u32 word or by 16-byte chunk:
    whenever it says every word belongs to one unit, check that against every element's word."""
    from gpuops.layout import coalesce, units_own_their_words

    sizes, strides, element_size, base, unit = layout
    it = coalesce(sizes, [strides])
    if not units_own_their_words(it, 0, base, element_size, unit, word_bytes):
        return
    owner: dict[int, int] = {}
    for k, index in enumerate(np.ndindex(*it.sizes)):
        word = (base + sum(i * s for i, s in zip(index, it.strides[0]))) * element_size // word_bytes
        assert owner.setdefault(word, k // unit) == k // unit, (it, word)
