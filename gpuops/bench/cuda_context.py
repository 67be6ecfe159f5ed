"""A CUDA context held through a benchmark run, where PyTorch or CuPy reaches CUDA (neither is a dependency).

NVIDIA's driver runs Vulkan compute in a lower performance state while no CUDA context exists on the GPU: a run
that compares gpuops with PyTorch or CuPy opens one with its first CUDA call, so figures timed before that call and
after it would differ for that reason alone. Holding one from the start times every figure in the same state.
"""

from __future__ import annotations

from .cupy_compare import cupy_cuda
from .torch_compare import torch_cuda


def hold_cuda_contexts() -> list:
    """A one-element CUDA array on every CUDA device (the Vulkan adapter a run uses may be any of them:
    GPUOPS_ADAPTER, Device(adapter=...), one Device per GPU), made through PyTorch, else CuPy; keep the list for the
    run (its arrays keep the contexts). Empty where neither reaches CUDA."""
    torch = torch_cuda()
    if torch is not None:
        held = [torch.zeros(1, device=f"cuda:{index}") for index in range(torch.cuda.device_count())]
        torch.cuda.synchronize()
        return held
    cupy = cupy_cuda()
    if cupy is not None:
        held = []
        for index in range(cupy.cuda.runtime.getDeviceCount()):
            with cupy.cuda.Device(index):
                held.append(cupy.zeros(1))
                cupy.cuda.Device(index).synchronize()
        return held
    return []
