"""The same operation in PyTorch on CUDA, timed with CUDA events: only when torch with CUDA is importable
(torch is never a dependency of gpuops)."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..operators import spec_by_name


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


def _function(torch, operator: str, mode: int | None, out_given: bool = False):
    """f(*tensors, out) computing `operator` (a spec name, or COPY) in PyTorch: the row's torch_reference."""
    if operator == COPY:
        return lambda x, out: out.copy_(x)
    spec = spec_by_name(operator)
    if spec.torch_reference is None:
        raise ValidationError(f"DML_OPERATOR_{spec.name}: OperatorSpec.torch_reference: None; the row gives no "
                              "PyTorch equivalent to time")
    return spec.torch_reference(torch, spec.mode_values(mode), out_given)


def time_torch(operator: str, mode: int | None, inputs: list[np.ndarray], out_dtype: np.dtype,
               iterations: int, warmup: int, transpose: bool = False, broadcast: bool = False,
               strided_out: bool = False) -> dict:
    """Median/min/max CUDA-event time of one call, or {'error': ...} when torch cannot run it.

    `transpose`: run on the transposed views of the (2-D) inputs, as torch would be called on `x.t()`.
    `broadcast`: the last input is one row, expanded over the first's rows (its bytes count once).
    `strided_out`: the output is every second element of a buffer twice its size (`out[::2]`)."""
    torch = torch_cuda()
    if torch is None:
        return {"error": "PyTorch with CUDA is not available"}
    try:
        tensors = [torch.from_numpy(np.ascontiguousarray(x)).cuda() for x in inputs]
        in_bytes = sum(t.numel() * t.element_size() for t in tensors)
        if transpose:
            tensors = [t.t() for t in tensors]
        if broadcast:
            tensors[-1] = tensors[-1][0].expand(tensors[0].shape)
            in_bytes -= tensors[-1].element_size() * (tensors[0].numel() - tensors[0].shape[-1])
        torch_dtype = getattr(torch, np.dtype(out_dtype).name)
        if strided_out:
            out = torch.empty(2 * tensors[0].numel(), dtype=torch_dtype, device="cuda")[::2]  # (1-D)
        else:
            out = torch.empty_like(tensors[0], dtype=torch_dtype)
        function = _function(torch, operator, mode, strided_out)
        call = functools.partial(function, *tensors, out)
        times, result = cuda_times(torch, call, iterations, warmup)
        out_bytes = result.numel() * result.element_size()
        del tensors, out, result, call
        torch.cuda.empty_cache()
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    median = statistics.median(times)
    return {"gpu_median_ns": median, "gpu_min_ns": min(times), "gpu_max_ns": max(times),
            "bytes": in_bytes + out_bytes, "gbps": (in_bytes + out_bytes) / median}
