"""The same operation in CuPy on CUDA, timed with CUDA events: only when CuPy with a CUDA device is importable
(CuPy is never a dependency of gpuops). The tensors are laid out as torch_compare lays out PyTorch's."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..enums import IsInfinityMode
from ..operators import spec_by_name
from .stats import StoppingRule, sample
from .torch_compare import (BROADCAST, CHANNELS_LAST_OUT, CONTIGUOUS, COPY, ROW_MAJOR_OUT, STRIDED_OUT, check_layout,
                            input_memory, summary)

UNAVAILABLE = "CuPy with CUDA is not available"

# IS_INFINITY's modes other than EITHER (np.isinf, the row's ufunc), by the NumPy names CuPy shares.
_INFINITY_FUNCTIONS = {IsInfinityMode.POSITIVE: "isposinf", IsInfinityMode.NEGATIVE: "isneginf"}


def cupy_cuda():
    """The cupy module when it can reach a CUDA device, else None."""
    try:
        import cupy
    except ImportError:
        return None
    try:
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # CuPy's CUDARuntimeError and the like: a driver or device it cannot use
        return None


def function_name(operator: str, mode: int | None) -> str:
    """The NumPy (and CuPy) function computing `operator` (a spec name, or COPY): the row's ufunc, or for
    IS_INFINITY's one-sided modes isposinf and isneginf."""
    if operator == COPY:
        return "copyto"
    spec = spec_by_name(operator)
    for value in spec.mode_values(mode).values():
        if value in _INFINITY_FUNCTIONS:
            return _INFINITY_FUNCTIONS[value]
    return spec.numpy_ufunc.__name__


def _function(cupy, operator: str, mode: int | None) -> Callable[..., Any]:
    """f(*arrays, out) writing `operator` into `out`."""
    if operator == COPY:
        return lambda x, out: cupy.copyto(out, x)
    compute = getattr(cupy, function_name(operator, mode))
    return lambda *arrays: compute(*arrays[:-1], out=arrays[-1])


def event_times(cupy, work: Callable[[], Any], iterations: int, warmup: int) -> list[float]:
    """The CUDA-event time in ns of each of `iterations` calls of `work` after `warmup` untimed ones."""
    for _ in range(warmup):
        work()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(iterations):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e6)
    return times


def time_cupy(operator: str, mode: int | None, inputs: list[np.ndarray], out_dtype: np.dtype,
              rule: StoppingRule, warmup: int, layout: str = CONTIGUOUS) -> dict:
    """time_torch's twin: CUDA-event times of one call sampled until `rule` stops, its bytes, GB/s and layout, or
    {'error': ...} when CuPy cannot run it."""
    shape = tuple(inputs[0].shape)
    check_layout(layout, shape)
    cupy = cupy_cuda()
    if cupy is None:
        return {"error": UNAVAILABLE}
    try:
        arrays = [cupy.asarray(x) for x in input_memory(inputs, layout)]
        in_bytes = sum(a.nbytes for a in arrays)
        if layout == ROW_MAJOR_OUT:
            arrays = [a.T for a in arrays]
        elif layout == BROADCAST:
            arrays[-1] = cupy.broadcast_to(arrays[-1], shape)
        dtype = np.dtype(out_dtype)
        if layout == STRIDED_OUT:
            out = cupy.empty(2 * math.prod(shape), dtype)[::2]
        elif layout == CHANNELS_LAST_OUT:
            n, c, h, w = shape
            out = cupy.empty((n, h, w, c), dtype).transpose(0, 3, 1, 2)
        else:  # row-major, whatever the inputs' order
            out = cupy.empty(shape, dtype)
        call = functools.partial(_function(cupy, operator, mode), *arrays, out)
        event_times(cupy, call, 0, warmup)
        sampled = sample(lambda count: (event_times(cupy, call, count, 0), []), rule)  # no host times
        out_bytes = out.size * out.itemsize
        del arrays, out, call
        cupy.get_default_memory_pool().free_all_blocks()
    except Exception as exc:  # CuPy's errors share no base class: a kernel it lacks, a type it refuses
        return {"error": f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"}
    return summary(sampled, in_bytes + out_bytes, layout)
