"""Finding a WebGPU adapter to run on."""

from __future__ import annotations

from .backends import backend_name
from .errors import DeviceError


def adapter_label(adapter) -> str:
    info = adapter.info
    return f"{info['device']} ({info['backend_type']}, {info['adapter_type']})"


def pick_adapter(backend, name: str | None):
    if name is None:
        adapter = backend.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise DeviceError(f"no WebGPU adapter found by {backend_name(backend)} (install a Vulkan driver, "
                              "e.g. Debian's mesa-vulkan-drivers)")
        return adapter
    adapters = backend.gpu.enumerate_adapters_sync()
    wanted = name.lower()
    matches = [a for a in adapters
               if any(wanted in str(a.info.get(k, "")).lower()
                      for k in ("device", "description", "vendor", "backend_type", "adapter_type"))]
    if not matches:
        known = "; ".join(adapter_label(a) for a in adapters) or "none"
        raise DeviceError(f"no adapter matches {name!r}; adapters: {known}")
    # Native backends before OpenGL, real GPUs before software ones.
    rank = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
    return min(matches, key=lambda a: (a.info["backend_type"] == "OpenGL", rank.get(a.info["adapter_type"], 4)))
