import gc
import os

import pytest
from hypothesis import HealthCheck, settings

import gpuops
from gpuops.backends import installed_backends

# Modest example counts in CI; GPUOPS_HYPOTHESIS_EXAMPLES=1000 for a long run.
settings.register_profile("gpuops", max_examples=int(os.environ.get("GPUOPS_HYPOTHESIS_EXAMPLES", "25")),
                          deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gpuops")


@pytest.fixture(scope="session", params=installed_backends())
def device(request) -> gpuops.Device:
    """One Device per WebGPU implementation installed (wgpu-native always; Dawn with gpuops[dawn]).

    No skip: a machine without an adapter must fail here, loudly (CI has to prove the shaders run)."""
    default = gpuops.default_device()
    return default if default.backend == request.param else gpuops.Device(backend=request.param)


@pytest.fixture
def dropped_devices_released() -> None:
    """For tests that run one device from several threads: every Device an earlier test dropped is released first.
    wgpu-py's GPUDevice refers to itself, so Python's cycle collector frees a WebGPU device at some later
    allocation, on whichever thread makes it. On wgpu-native's OpenGL backend that release
    waits for the adapter's one GL context, and wgpu aborts the process when such a wait passes one second, as it
    can while other threads compile kernels on a busy software adapter."""
    gc.collect()


def pytest_collection_modifyitems(config, items):
    """GPUOPS_DEVICE_TESTS_ONLY=1 keeps only the tests that run on the adapter through the `device` fixture: CI's
    second run (OpenGL) leaves the rest, which ask nothing of an adapter or run on the default one, to the first."""
    if os.environ.get("GPUOPS_DEVICE_TESTS_ONLY") != "1":
        return
    kept = [item for item in items if "device" in getattr(item, "fixturenames", ())]
    kept_ids = {id(item) for item in kept}
    config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept_ids])
    items[:] = kept
