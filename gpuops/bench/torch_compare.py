"""The same operation in PyTorch on CUDA, timed with CUDA events: only when torch with CUDA is importable
(torch is never a dependency of gpuops)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..enums import IsInfinityMode
from ..errors import ValidationError
from ..operators import spec_by_name
from .stats import Sampled, StoppingRule, sample, summary as stats_summary


def torch_cuda():
    """The torch module when CUDA works, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def cuda_times(torch, work: Callable[[], Any], iterations: int, warmup: int) -> tuple[list[float], Any]:
    """The CUDA-event time in ns of each of `iterations` calls of `work` after `warmup` untimed ones, and what the
    last call returned."""
    result = None
    for _ in range(warmup):
        result = work()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        result = work()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e6)
    return times, result


COPY = "COPY"  # not an operator: PyTorch's copy, the roof its operators are rated against

# How a comparison lays out the operation's tensors, so that the other library does the same work as gpuops' case:
CONTIGUOUS = "contiguous"  # every tensor packed
BROADCAST = "broadcast"  # the last input one row, expanded over the first's rows (its bytes count once)
STRIDED_OUT = "strided out"  # 1-D; the output every second element of a buffer twice its size (`out[::2]`)
# The inputs stored transposed (every axis reversed, x.T's memory), the output packed row-major: a layout conversion.
ROW_MAJOR_OUT = "row-major out"
# 4-D inputs packed NCHW, the output NHWC (channels-last): a layout conversion.
CHANNELS_LAST_OUT = "channels-last out"
COMPARE_LAYOUTS = (CONTIGUOUS, BROADCAST, STRIDED_OUT, ROW_MAJOR_OUT, CHANNELS_LAST_OUT)
# Where the output's layout is the point: the function must write into the `out` given, not make its own.
OUT_LAYOUTS = (STRIDED_OUT, ROW_MAJOR_OUT, CHANNELS_LAST_OUT)


def check_layout(layout: str, shape: tuple[int, ...]) -> None:
    """Refuse a comparison layout the inputs' shape cannot take."""
    if layout not in COMPARE_LAYOUTS:
        raise ValidationError(f"comparison layout {layout!r}; allowed: {', '.join(COMPARE_LAYOUTS)}")
    needs = {BROADCAST: ("2-D", lambda d: d == 2), STRIDED_OUT: ("1-D", lambda d: d == 1),
             ROW_MAJOR_OUT: ("2-D or more", lambda d: d >= 2),
             CHANNELS_LAST_OUT: ("4-D (N, C, H, W)", lambda d: d == 4)}
    if layout in needs and not needs[layout][1](len(shape)):
        raise ValidationError(f"comparison layout {layout!r} needs {needs[layout][0]} inputs; got shape "
                              f"{tuple(shape)}")


def input_memory(inputs: list[np.ndarray], layout: str) -> list[np.ndarray]:
    """Writable packed arrays holding the inputs' elements as the comparison stores them: the transposed memory
    (x.T packed) for ROW_MAJOR_OUT, one row of the last input for BROADCAST, else the inputs packed. Inputs are the
    case's logical (possibly strided) views."""
    check_layout(layout, inputs[0].shape)
    memory = [np.array(x.T if layout == ROW_MAJOR_OUT else x, order="C") for x in inputs]
    if layout == BROADCAST:
        memory[-1] = np.array(inputs[-1][0], order="C")
    return memory


def _function(torch, operator: str, mode: int | None, out_given: bool = False):
    """f(*tensors, out) computing `operator` (a spec name, or COPY) in PyTorch: the row's torch_reference."""
    if operator == COPY:
        return lambda x, out: out.copy_(x)
    spec = spec_by_name(operator)
    if spec.torch_reference is None:
        raise ValidationError(f"DML_OPERATOR_{spec.name}: OperatorSpec.torch_reference: None; the row gives no "
                              "PyTorch equivalent to time")
    attributes = spec.mode_values(mode)
    if out_given and "infinity_mode" in attributes:
        return _is_infinity_into(torch, attributes["infinity_mode"])
    return spec.torch_reference(torch, attributes, out_given)


def _is_infinity_into(torch, mode: IsInfinityMode):
    """IS_INFINITY writing into the `out` given, where the row's function (torch.isinf) takes no out=: ATen computes
    isinf as abs(x) == inf, which is what runs here, with out=; isposinf and isneginf take a bool out=, as which a
    uint8 out is viewed (the same bytes)."""
    if mode == IsInfinityMode.EITHER:
        return lambda x, out: torch.eq(torch.abs(x), math.inf, out=out)
    test = torch.isposinf if mode == IsInfinityMode.POSITIVE else torch.isneginf
    return lambda x, out: test(x, out=out if out.dtype == torch.bool else out.view(torch.bool))


def time_torch(operator: str, mode: int | None, inputs: list[np.ndarray], out_dtype: np.dtype,
               rule: StoppingRule, warmup: int, layout: str = CONTIGUOUS) -> dict:
    """CUDA-event times of one call, sampled until `rule` stops after `warmup` untimed calls, its bytes and GB/s and
    the `layout` it ran in (see summary), or {'error': ...} when torch cannot run it. `inputs` are the case's
    logical arrays; `layout` is one of COMPARE_LAYOUTS."""
    shape = tuple(inputs[0].shape)
    check_layout(layout, shape)
    torch = torch_cuda()
    if torch is None:
        return {"error": "PyTorch with CUDA is not available"}
    try:
        tensors = [torch.from_numpy(x).cuda() for x in input_memory(inputs, layout)]
        in_bytes = sum(t.numel() * t.element_size() for t in tensors)
        if layout == ROW_MAJOR_OUT:
            tensors = [t.permute(*reversed(range(t.dim()))) for t in tensors]
        elif layout == BROADCAST:
            tensors[-1] = tensors[-1].expand(shape)
        torch_dtype = getattr(torch, np.dtype(out_dtype).name)
        if layout == STRIDED_OUT:
            out = torch.empty(2 * math.prod(shape), dtype=torch_dtype, device="cuda")[::2]
        elif layout == CHANNELS_LAST_OUT:
            out = torch.empty(shape, dtype=torch_dtype, device="cuda", memory_format=torch.channels_last)
        else:  # row-major, whatever the inputs' order
            out = torch.empty(shape, dtype=torch_dtype, device="cuda")
        function = _function(torch, operator, mode, layout in OUT_LAYOUTS)
        call = functools.partial(function, *tensors, out)
        result = None

        def take(count: int) -> tuple[list[float], list[float]]:
            nonlocal result
            times, result = cuda_times(torch, call, count, 0)
            return times, []  # CUDA events: no host times

        cuda_times(torch, call, 0, warmup)
        sampled = sample(take, rule)
        out_bytes = result.numel() * result.element_size()
        del tensors, out, result, call
        torch.cuda.empty_cache()
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    return summary(sampled, in_bytes + out_bytes, layout)


def summary(sampled: Sampled, moved: int, layout: str) -> dict:
    """A comparison's figures from its per-call CUDA-event times in ns and its own byte count: the median, least
    and greatest time, their noise, the samples, and why sampling ended."""
    times = stats_summary(sampled.gpu_ns)
    return {"gpu_median_ns": times["median"], "gpu_min_ns": times["min"], "gpu_max_ns": times["max"],
            "gpu_noise": times["noise"], "iterations": len(sampled.gpu_ns), "stopped_on": sampled.stopped_on,
            "gpu_samples_ns": [float(t) for t in sampled.gpu_ns], "bytes": moved, "gbps": moved / times["median"],
            "layout": layout}
