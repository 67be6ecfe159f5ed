"""WebGPU implementations gpuops runs on: wgpu-native (the `wgpu` package, the default) and Google's Dawn (the
optional `wgpudawn` package, the same Python API). Chosen per Device, or for all by GPUOPS_BACKEND."""

from __future__ import annotations

import importlib
import os
import types

from .errors import DeviceError, ValidationError

BACKEND_ENV = "GPUOPS_BACKEND"
# backend name -> Python module that implements the wgpu-py API
BACKENDS = {"wgpu-native": "wgpu", "dawn": "wgpudawn"}


def load_backend(name: str | None = None) -> types.ModuleType:
    """The wgpu-py module of a backend: `name`, else $GPUOPS_BACKEND, else wgpu-native."""
    name = name or os.environ.get(BACKEND_ENV) or "wgpu-native"
    if name not in BACKENDS:
        raise ValidationError(f"backend {name!r} is unknown; allowed: {', '.join(BACKENDS)}")
    try:
        return importlib.import_module(BACKENDS[name])
    except ImportError as exc:
        raise DeviceError(f"backend {name!r} needs the Python package {BACKENDS[name]!r} "
                          f"(for Dawn: pip install 'gpuops[dawn]'): {exc}") from None


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
