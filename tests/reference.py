"""NumPy as the oracle: reference results, interesting values per dtype, and bit-for-bit comparison."""

from __future__ import annotations

import numpy as np

import gpuops
from gpuops import DataType
from gpuops.bench.reference import compare, expected
from gpuops.operators import OPERATORS, spec_by_name

# (operator name, mode) for every operator and every value of its attribute (IS_INFINITY's three modes); mode is
# None for an operator without one.
CASES = [(spec.name, None if spec.mode_attribute is None else mode[spec.mode_attribute.name])
         for spec in OPERATORS for mode in spec.modes()]
BINARY = {spec.name for spec in OPERATORS if len(spec.inputs) == 2}


def supported_pairs(operator: str) -> list[tuple[DataType, DataType]]:
    """(input type, output type) pairs the newest support row allows."""
    row = spec_by_name(operator).support[-1]
    outs = row.output_types
    pairs = []
    for t in sorted(row.input_types):
        if t in outs:
            pairs.append((t, t))
        else:
            pairs += [(t, o) for o in sorted(outs)]
    return pairs


def valid_tensors(spec, sizes: tuple[int, ...] = (2, 3)) -> dict:
    """A valid TensorDesc for each of the operator's tensor fields: FLOAT32 inputs where the operator takes them
    (else its first input type), the output of the type DirectML gives."""
    types = spec.support[-1].input_types
    in_type = DataType.FLOAT32 if DataType.FLOAT32 in types else min(types)
    return {name: gpuops.TensorDesc(spec.output_type(in_type) if name == spec.output else in_type, sizes)
            for name in spec.tensor_fields}


def op_cases():
    """Every operator (mode) x supported (input, output) type pair, as pytest ids."""
    for operator, mode in CASES:
        for in_type, out_type in supported_pairs(operator):
            label = spec_by_name(operator).numpy_name
            if mode is not None:
                label += f"-{mode.name.lower()}"
            yield (operator, mode, in_type, out_type), f"{label}-{in_type.name.lower()}-{out_type.name.lower()}"


def reference(operator: str, mode, out_type: DataType, *inputs: np.ndarray) -> np.ndarray:
    """NumPy on the same dtype (NaN and -0 give +0 for SIGN): the benchmark's check before timing is the same."""
    return expected(operator, mode, out_type, *inputs)


def run_numpy_api(operator: str, mode, out_type: DataType, *inputs, **kwargs) -> np.ndarray:
    """The operator through its NumPy-level function (gpuops.<numpy_name>), the mode passed as its keyword."""
    spec = spec_by_name(operator)
    function = getattr(gpuops, spec.numpy_name)
    if mode is not None:
        kwargs["mode"] = mode
    with np.errstate(all="ignore"):  # values, not errors: those are tests/test_ufunc_contract.py's
        result = function(*inputs, **kwargs)
    if result.dtype == np.bool_:
        # The NumPy-level predicates return bool (0/1 bytes), compared here as the DML level's UINT8; other output
        # types are DML-level only.
        if out_type != DataType.UINT8:
            raise ValueError(f"gpuops.{spec.numpy_name} returns bool, compared as uint8, not {out_type.name}")
        return result.view(np.uint8)
    return result


def assert_same_bits(got: np.ndarray, expected: np.ndarray, *inputs: np.ndarray) -> None:
    """Every bit equal (the sign of zero too); two NaNs match whatever their payloads."""
    mismatch = compare(got, expected, inputs, limit=8)
    assert mismatch is None, mismatch.describe()


def special_values(data_type: DataType) -> np.ndarray:
    """Values where kernels go wrong: signed zeros, subnormals, limits, infinities, NaNs, rounding edges."""
    dtype = data_type.numpy_dtype
    if dtype.kind == "f":
        info = np.finfo(dtype)
        tiny_sub = info.smallest_subnormal
        base = [0.0, 1.0, 1.5, 2.0, 2.5, 3.0, 7.0, 0.1, 0.3, 1e-3, 100.0, 1000.0, 65504.0,
                float(tiny_sub), float(tiny_sub) * 3, float(info.smallest_normal) - float(tiny_sub),
                float(info.smallest_normal), float(info.max), float(info.max) / 3, float(info.eps),
                1 - float(info.epsneg), 1 + float(info.eps), np.inf, np.nan]
        if dtype == np.float32:
            base += [3e38, 1e-38, 16777216.0, 16777217.0, 8388608.5, 1e-30, 123456.789, 1e10]
        values = np.array(base, dtype=np.float64)
        with np.errstate(over="ignore"):
            values = np.concatenate([values, -values]).astype(dtype)
        nan_payload = np.array([0x7f800001 if dtype == np.float32 else 0x7c01,
                                0xffc00000 if dtype == np.float32 else 0xfe00], dtype=f"u{dtype.itemsize}")
        return np.concatenate([values, nan_payload.view(dtype)])
    info = np.iinfo(dtype)
    candidates = [0, 1, 2, 3, 5, 7, 10, 100, 127, 128, 255, 256, 32767, 32768, 65535, 2**31 - 1, 2**31,
                  2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, info.max, info.max - 1, info.max // 2]
    candidates += [-c for c in candidates] + [info.min, info.min + 1, info.min // 2]
    return np.array(sorted({c for c in candidates if info.min <= c <= info.max}), dtype=dtype)


def random_values(data_type: DataType, count: int, rng: np.random.Generator) -> np.ndarray:
    """Random bit patterns (every exponent, NaN payloads, ...) mixed with the special values."""
    dtype = data_type.numpy_dtype
    bits = rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8).view(dtype).copy()
    specials = special_values(data_type)
    pick = rng.random(count) < 0.3
    bits[pick] = rng.choice(specials, size=int(pick.sum()))
    if dtype.kind == "f":  # also plenty of ordinary magnitudes, where quotients are small
        ordinary = rng.random(count) < 0.3
        bits[ordinary] = (rng.standard_normal(int(ordinary.sum())) * 10).astype(dtype)
    return bits
