"""Finding a WebGPU adapter to run on (by index in wgpu's enumeration, or by part of its name), listing the ones gpuops
can run on, and checking the wgpu objects a caller hands in."""

from __future__ import annotations

import os
import re
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass

from .backends import BACKENDS, backend_name, load_backend
from .enums import integer_value
from .errors import DeviceError, ValidationError, cause_of, shown
from .wgpu_internals import released

# WebGPU compute on OpenGL needs compute shaders and storage buffers in the GL context: OpenGL ES 3.1 or
# OpenGL 4.3. wgpu lists older contexts too (NVIDIA's EGL gives a 3.3 one), whose device request then fails.
GLES_COMPUTE_VERSION = (3, 1)
GL_COMPUTE_VERSION = (4, 3)
# The GL_VERSION string wgpu reports as the adapter's description: "4.5 (Core Profile) Mesa 22.3.6",
# "3.3.0 NVIDIA 550.54", "OpenGL ES 3.2 Mesa 23.0".
_GL_VERSION = re.compile(r"\s*(OpenGL ES(?:-[A-Z]+)?\s+)?(\d+)\.(\d+)")
# Limits that are 0 on an adapter without compute shaders or storage buffers.
_COMPUTE_LIMITS = ("max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x",
                   "max-compute-workgroups-per-dimension", "max-storage-buffer-binding-size")


def wgpu_module_of(obj: object, class_name: str) -> types.ModuleType | None:
    """The wgpu-py module (wgpu or wgpudawn) whose `class_name` (GPUBuffer, GPUDevice, ...) `obj` is an instance
    of, or None. Only modules already imported are asked: an object of one that is not cannot exist."""
    for package in BACKENDS.values():
        module = sys.modules.get(package)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type) and isinstance(obj, cls):
            return module
    return None


def adapter_label(adapter) -> str:
    info = adapter.info
    return f"{info['device']} ({info['backend_type']}, {info['adapter_type']})"


def compute_shader_problem(info: Mapping, limits: Mapping) -> str | None:
    """Why an adapter with this info and these limits cannot run gpuops' compute shaders, or None when it can.
    Pure (mappings in, text out) so that adapters no machine here has can be tested."""
    if info.get("backend_type") == "OpenGL":
        match = _GL_VERSION.match(str(info.get("description", "")))
        if match:
            es, version = bool(match[1]), (int(match[2]), int(match[3]))
            needed = GLES_COMPUTE_VERSION if es else GL_COMPUTE_VERSION
            if version < needed:
                return (f"{'OpenGL ES' if es else 'OpenGL'} {version[0]}.{version[1]}; WebGPU compute needs "
                        f"OpenGL ES {GLES_COMPUTE_VERSION[0]}.{GLES_COMPUTE_VERSION[1]} or OpenGL "
                        f"{GL_COMPUTE_VERSION[0]}.{GL_COMPUTE_VERSION[1]}")
    missing = [name for name in _COMPUTE_LIMITS if name in limits and not limits[name]]
    if missing:
        return f"its limits {', '.join(missing)} are 0"
    return None


def _problem_of(adapter) -> str | None:
    return compute_shader_problem(adapter.info, adapter.limits)


def _refusal(adapter, problem: str) -> DeviceError:
    return DeviceError(f"adapter {adapter_label(adapter)} cannot run compute shaders ({problem})")


def _preference(adapter) -> tuple[bool, int]:
    # Native backends before OpenGL, real GPUs before software ones.
    rank = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
    return adapter.info["backend_type"] == "OpenGL", rank.get(adapter.info["adapter_type"], 4)


ADAPTER_ENV = "GPUOPS_ADAPTER"


@dataclass(frozen=True)
class Adapter:
    """An adapter gpuops can run on: its `index` in wgpu's enumeration (what Device(adapter=index) and
    GPUOPS_ADAPTER=index pick), its `name`, `backend` (Vulkan, Metal, D3D12, OpenGL), `type` (DiscreteGPU,
    IntegratedGPU, VirtualGPU, CPU) and vendor. Identical GPUs differ by index only."""

    index: int
    name: str
    backend: str
    type: str
    vendor: str

    def __str__(self) -> str:
        return f"[{self.index}] {self.name} ({self.backend}, {self.type})"


def adapters(backend: str | None = None) -> list[Adapter]:
    """The adapters gpuops can run on with `backend` ('wgpu-native' or 'dawn'; default $GPUOPS_BACKEND, else
    wgpu-native), in wgpu's enumeration order, each with the index that picks it. An adapter that cannot run
    compute shaders is left out (its index is skipped)."""
    module = load_backend(backend)
    return [_described(index, adapter) for index, adapter in enumerate(module.gpu.enumerate_adapters_sync())
            if _problem_of(adapter) is None]


def _described(index: int, adapter) -> Adapter:
    info = adapter.info
    return Adapter(index, str(info.get("device", "")), str(info.get("backend_type", "")),
                   str(info.get("adapter_type", "")), str(info.get("vendor", "")))


def _listed(enumerated: list) -> str:
    return "; ".join(f"[{index}] {adapter_label(adapter)}" + ("" if _problem_of(adapter) is None else
                                                            " (cannot run compute shaders)")
                     for index, adapter in enumerate(enumerated)) or "none"


def wanted_adapter(adapter) -> tuple[int | str | None, str]:
    """What picks the adapter, and where it was given (for errors): `adapter` as given (an index or part of a name),
    else $GPUOPS_ADAPTER (digits are an index), else None (gpuops chooses)."""
    if adapter is not None:
        return adapter, "Device.adapter"
    text = os.environ.get(ADAPTER_ENV) or None
    where = f"{ADAPTER_ENV}={text!r}"
    if text is not None and text.strip().isdigit():
        return int(text), where
    return text, where


def pick_adapter(backend, wanted: int | str | None, where: str = "Device.adapter"):
    """The adapter to run on: the one at index `wanted` of wgpu's enumeration (an int), or the best one whose name,
    vendor, backend or type contains `wanted` (a str), or with `wanted` None the one the backend recommends unless it
    is OpenGL or cannot run compute shaders (then the best other one). An adapter that cannot run compute shaders is
    never picked: DeviceError says why; so does an index past the end, with the adapters that exist. `where` names
    what gave `wanted` in errors."""
    if wanted is not None and not isinstance(wanted, str):
        index = integer_value(wanted)
        if index is None or index < 0:
            raise ValidationError(f"{where}: {shown(wanted)} ({type(wanted).__name__}); allowed: None "
                                  "(choose), an adapter's index (an int of at least 0, see gpuops.adapters()) or "
                                  "part of its name (str), e.g. 'Vulkan', 'llvmpipe', 'OpenGL'")
        return _adapter_at(backend, index, where)
    name = wanted
    if name is None:
        recommended = backend.gpu.request_adapter_sync(power_preference="high-performance")
        if recommended is not None and recommended.info["backend_type"] != "OpenGL" \
                and _problem_of(recommended) is None:
            return recommended
        # The recommendation may be an OpenGL adapter although a native one exists, or one without compute.
        adapters = backend.gpu.enumerate_adapters_sync()
        if not adapters:
            raise DeviceError(f"no WebGPU adapter found by {backend_name(backend)} (install a Vulkan driver, "
                              "e.g. Debian's mesa-vulkan-drivers)")
        usable = [a for a in adapters if _problem_of(a) is None]
        if not usable:
            reasons = "; ".join(str(_refusal(a, _problem_of(a))) for a in adapters)
            raise DeviceError(f"no WebGPU adapter found by {backend_name(backend)} can run compute shaders: "
                              f"{reasons} (install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers)")
        return min(usable, key=_preference)
    adapters = backend.gpu.enumerate_adapters_sync()
    needle = name.lower()
    matches = [a for a in adapters
               if any(needle in str(a.info.get(k, "")).lower()
                      for k in ("device", "description", "vendor", "backend_type", "adapter_type"))]
    if not matches:
        raise DeviceError(f"{where}: no adapter matches {name!r}; adapters: {_listed(adapters)}")
    usable = [a for a in matches if _problem_of(a) is None]
    if not usable:
        best = min(matches, key=_preference)
        raise _refusal(best, _problem_of(best))
    return min(usable, key=_preference)


def _adapter_at(backend, index: int, where: str):
    enumerated = backend.gpu.enumerate_adapters_sync()
    if index >= len(enumerated):
        allowed = f"0 to {len(enumerated) - 1}" if enumerated else "none: no adapter found"
        raise DeviceError(f"{where}: index {index} is past the adapters {backend_name(backend)} finds "
                          f"(allowed: {allowed}); adapters: {_listed(enumerated)}")
    adapter = enumerated[index]
    problem = _problem_of(adapter)
    if problem is not None:
        raise _refusal(adapter, problem)
    return adapter


def check_wgpu_device(obj: object) -> None:
    """Refuse, before gpuops uses it, what cannot be a caller's WebGPU device: anything but a GPUDevice of wgpu or
    wgpudawn (an adapter, a gpuops.Device, None), one wgpu-py has released, one whose adapter cannot run compute
    shaders, and one that is lost or destroyed where that shows.

    What shows: wgpu-py offers no synchronous "is lost" query (wgpu-native does not implement `lost`), so a
    lost or destroyed device is found by creating a 4-byte buffer on it, which wgpu-native refuses on such a
    device. Dawn may accept that call on a lost device; such a device then fails at its first real use, with
    the WebGPU device's own message."""
    module = wgpu_module_of(obj, "GPUDevice")
    if module is None:
        raise ValidationError(f"Device.wgpu_device: {shown(obj)} ({type(obj).__name__}) is not a GPUDevice of "
                              f"{' or '.join(BACKENDS.values())}"
                              + ("; request one from it with adapter.request_device_sync()"
                                 if wgpu_module_of(obj, "GPUAdapter") else ""))
    if released(obj):
        raise DeviceError(f"Device.wgpu_device: {shown(obj)} has been released; request a new device")
    adapter = getattr(obj, "adapter", None)
    if adapter is not None:
        problem = compute_shader_problem(adapter.info, obj.limits)
        if problem is not None:
            raise _refusal(adapter, problem)
    try:
        probe = obj.create_buffer(label="gpuops device check", size=4, usage=module.BufferUsage.COPY_DST)
    except Exception as exc:  # whatever the backend raises, the device cannot be used
        raise DeviceError(f"Device.wgpu_device: {shown(obj)} cannot create a buffer (lost or destroyed?): "
                          f"{cause_of(exc)}") from exc
    probe.destroy()
