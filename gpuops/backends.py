"""WebGPU implementations gpuops runs on: wgpu-native (the `wgpu` package, the default) and Google's Dawn (the
optional `wgpudawn` package, the same Python API). Chosen per Device, or for all by GPUOPS_BACKEND."""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
import types

from . import wgpu_internals
from .errors import DeviceError, ValidationError

BACKEND_ENV = "GPUOPS_BACKEND"
# backend name -> Python module that implements the wgpu-py API
BACKENDS = {"wgpu-native": "wgpu", "dawn": "wgpudawn"}
INSTALL_HINT = "pip install '.[dawn]' in the gpuops checkout, or pip install 'WHEEL.whl[dawn]' with the built wheel"


def _quiet_wayland_log() -> None:
    """Drop libwayland's client log messages where no Wayland display can be reached anyway.

    Why: on Linux wgpu-native's OpenGL backend looks for a Wayland display on every adapter enumeration, and without
    XDG_RUNTIME_DIR libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment." on stderr
    each time (headless servers, containers and cron jobs have no such directory), although gpuops never opens a
    window. Without that directory no Wayland client can connect (but through WAYLAND_SOCKET or an absolute
    WAYLAND_DISPLAY), so libwayland's messages can only be about this: its log handler is replaced by one that drops
    them. The environment is left as it is; where XDG_RUNTIME_DIR is a directory, nothing changes."""
    if not sys.platform.startswith("linux") or os.path.isdir(os.environ.get("XDG_RUNTIME_DIR", "")):
        return
    if os.environ.get("WAYLAND_SOCKET") or os.environ.get("WAYLAND_DISPLAY", "").startswith("/"):
        return
    try:
        library = ctypes.CDLL("libwayland-client.so.0")
    except OSError:  # no libwayland: nothing prints the message
        return
    handler = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)(lambda message, arguments: None)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(handler))  # kept for the process's life: libwayland holds it
    library.wl_log_set_handler_client(handler)


_quiet_wayland_log()  # at import: before any Device enumerates adapters


def load_backend(name: str | None = None) -> types.ModuleType:
    """The wgpu-py module of a backend: `name`, else $GPUOPS_BACKEND, else wgpu-native."""
    name = name or os.environ.get(BACKEND_ENV) or "wgpu-native"
    if name not in BACKENDS:
        raise ValidationError(f"backend {name!r} is unknown; allowed: {', '.join(BACKENDS)}")
    try:
        return importlib.import_module(BACKENDS[name])
    except ImportError as exc:
        raise DeviceError(f"backend {name!r} needs the Python package {BACKENDS[name]!r} "
                          f"(for Dawn: {INSTALL_HINT}): {exc}") from None


def backend_name(module: types.ModuleType) -> str:
    return next(name for name, package in BACKENDS.items() if package == module.__name__)


def backend_of(wgpu_object: object) -> types.ModuleType:
    """The backend module a wgpu object (a device you created) comes from."""
    package = type(wgpu_object).__module__.split(".")[0]
    if package not in BACKENDS.values():
        raise ValidationError(f"{type(wgpu_object).__name__} from {package!r} is not a wgpu-py device; "
                              f"known packages: {', '.join(BACKENDS.values())}")
    return importlib.import_module(package)


def installed_backends() -> list[str]:
    """Backends whose package imports here."""
    found = []
    for name, package in BACKENDS.items():
        try:
            importlib.import_module(package)
        except ImportError:
            continue
        found.append(name)
    return found


# Runtime checks: the safety code a WebGPU implementation adds to every shader for untrusted code. wgpu-native
# clamps indices into fixed-size arrays and bounds every loop with a counter; Dawn clamps indices (its robustness
# transform) and zero-fills workgroup memory. gpuops' shaders are its own: they index only within bindings that
# validation has sized and within their own tables, fill their workgroup memory before reading it, and every loop
# ends, so by default they run without that code, as Chrome's Skia and ONNX Runtime run theirs on Dawn; the
# division-heavy kernels gain most from its absence (docs/performance.md).
# `Device(runtime_checks=True)` or GPUOPS_RUNTIME_CHECKS=1 keeps it.
RUNTIME_CHECKS_ENV = "GPUOPS_RUNTIME_CHECKS"
DAWN_UNCHECKED_TOGGLES = ("disable_robustness", "disable_workgroup_init")  # device toggles that leave them out


def resolve_runtime_checks(module: types.ModuleType, requested: bool | None, wgpu_device=None) -> bool:
    """Whether a Device's shaders keep the runtime checks: `requested`, else $GPUOPS_RUNTIME_CHECKS ('1' keeps
    them, '0' leaves them out), else left out where the backend can. A Dawn device made by the caller has them
    as its toggles say (a `requested` that differs is refused; the environment's default does not apply)."""
    if requested is not None and not isinstance(requested, bool):
        raise ValidationError(f"Device: runtime_checks must be True, False or None, not {requested!r}")
    if backend_name(module) == "dawn" and wgpu_device is not None:
        kept = not set(DAWN_UNCHECKED_TOGGLES) <= dawn_toggles(wgpu_device)
        if requested is not None and requested != kept:
            raise ValidationError(f"Device: runtime_checks={requested} asked of a Dawn device made "
                                  f"{'with' if kept else 'without'} them: its toggles decide "
                                  f"({', '.join(DAWN_UNCHECKED_TOGGLES)} leave them out)")
        return kept
    if requested is None:
        value = os.environ.get(RUNTIME_CHECKS_ENV, "")
        if value not in ("", "0", "1"):
            raise ValidationError(f"{RUNTIME_CHECKS_ENV}={value!r}: allowed '0' (leave the checks out) or '1' "
                                  "(keep them)")
        requested = None if value == "" else value == "1"
    possible = backend_name(module) == "dawn" or wgpu_internals.has_trusted_shader_modules()
    if requested is False and not possible:
        raise DeviceError(f"Device: runtime_checks=False needs wgpu-native's trusted shader modules, which this "
                          f"wgpu-py ({module.__version__}) does not reach; pass runtime_checks=True")
    return requested if requested is not None else not possible


def dawn_toggles(wgpu_device) -> set[str]:
    """The toggles a Dawn device was made with (its runtime checks' and timestamps' among them)."""
    from wgpudawn.backends.dawn import extras

    return set(extras.get_toggles(wgpu_device))


def request_device(module: types.ModuleType, adapter, runtime_checks: bool, **descriptor):
    """adapter.request_device_sync(**descriptor), on Dawn with the toggles that leave the runtime checks out
    unless they are kept."""
    if backend_name(module) == "dawn" and not runtime_checks:
        from wgpudawn.backends.dawn import extras

        return extras.request_device_sync(adapter, enable_toggles=DAWN_UNCHECKED_TOGGLES, **descriptor)
    return adapter.request_device_sync(**descriptor)


def create_shader_module(module: types.ModuleType, wgpu_device, label: str, code: str, runtime_checks: bool):
    """A WGSL shader module. Without runtime checks on wgpu-native it is a trusted module (no runtime checks at
    all: resolve_runtime_checks allowed that only where the entry point is found); Dawn leaves them out by its
    device's toggles, so there it is a plain module."""
    if runtime_checks or backend_name(module) == "dawn":
        return wgpu_device.create_shader_module(label=label, code=code)
    shader_module = wgpu_internals.trusted_shader_module(wgpu_device, label, code)
    if shader_module is None:
        raise DeviceError(f"wgpu-native refused the shader module {label}")
    return shader_module
