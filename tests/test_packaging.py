"""The package users install holds every file gpuops reads at run time.

Kernel assembly (gpuops/shaders.py) reads WGSL files from wgsl/ and its subfolders, installed as gpuops/wgsl/. CI
(.ci/run) runs this suite against the installed wheel, from a copy of the checkout without the package: there the
first test reads the installed files, the second checks pyproject.toml's package data against the source tree, and
the third compares the whole installed package with the checkout it was built from. No GPU is needed.
"""

from __future__ import annotations

import dataclasses
import glob
import itertools
import os
import tomllib
from pathlib import Path

import pytest

import gpuops
from gpuops import TensorDesc, shaders
from gpuops.kernel import Grid, KernelKey, OutputBinding, OutputStore
from gpuops.operators import OPERATORS, DeviceFacts
from gpuops.plan import BoundRegion, PlanLimits, plan_dispatches

ROOT = Path(__file__).resolve().parents[1]  # the checkout, or .ci/run's copy of it without gpuops/
CHECKOUT_ENV = "GPUOPS_CHECKOUT"  # set by .ci/run: the checkout the installed wheel was built from
PROBE_FILES = ("probes/pack_rounding.wgsl",)  # what the device runs as it opens (gpuops/device.py), beside kernels


def requested_files() -> set[str]:
    """Every file, relative to wgsl/, that kernel assembly can ask for. For every operator, every attribute value,
    every (input, output) type pair any support row allows and every probed device fact, the operation (with and
    without the error flag word, where the operator has one) and the planner's loop for a small contiguous case,
    then that loop on every grid, output store and output binding: a superset of the keys the planner can plan,
    since every other field shader_files reads (the unit, the input count) follows from the types and the grid;
    and the probes the device runs as it opens."""
    files: set[str] = set()
    facts_variants = [DeviceFacts(**dict(zip(names, values)))
                      for names in [[f.name for f in dataclasses.fields(DeviceFacts)]]
                      for values in itertools.product((False, True), repeat=len(names))]
    for spec in OPERATORS:
        pairs = set()
        for row in spec.support:
            pairs |= {(t, o) for t in row.input_types
                      for o in ([t] if t in row.output_types else row.output_types)}
        flags = (False, True) if spec.error_flags else (False,)  # the NumPy-level path's variant too
        for (in_type, out_type), attributes, facts, error_flags in itertools.product(
                sorted(pairs), spec.modes(), facts_variants, flags):
            tensors = {name: TensorDesc(out_type if name == spec.output else in_type, (4, 64))
                       for name in spec.tensor_fields}
            desc = spec.desc_type(**tensors, **attributes)
            operation = spec.operation(desc, facts, error_flags)
            regions = tuple(BoundRegion(buffer, 1 << 16, 0) for buffer in range(len(tensors)))
            limits = PlanLimits(binding_size=1 << 20, storage_offset_alignment=256, workgroups_per_dimension=65535)
            (plan,) = plan_dispatches(operation, spec.loop_request(in_type), tuple(tensors.values()), regions, limits)
            # 8-byte elements are stored whole: by units or one word pair at a time
            stores = (OutputStore.UNITS, OutputStore.SCATTER_WORDS) if in_type.size == 8 else OutputStore
            for grid, store, binding in itertools.product(Grid, stores, OutputBinding):
                loop = dataclasses.replace(plan.key.loop, grid=grid, output_store=store, output_binding=binding)
                files.update(shaders.shader_files(KernelKey(operation, loop)))
    return files | set(PROBE_FILES)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (compiled Python aside), by its path relative to `folder`."""
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def test_kernel_assembly_asks_for_exactly_the_shader_files_of_the_imported_package():
    """Every file assembly can ask for is in the gpuops that was imported (in CI, the installed wheel), and every
    WGSL file there is one some kernel reads: neither side can be empty or miss a folder."""
    requested = requested_files()
    present = {name for name in tree(shaders.WGSL_DIR) if name.endswith(".wgsl")}
    assert sorted(requested - present) == [], f"kernels read files that {shaders.WGSL_DIR} lacks"
    assert sorted(present - requested) == [], "WGSL files that no kernel reads (or kernels this test misses)"


def test_package_data_covers_every_file_under_wgsl():
    """pyproject.toml's package data, expanded as setuptools expands it (glob, recursive), is every file of the
    source tree's wgsl/, at any depth; and every Python package under gpuops/ is listed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert config["package-dir"] == {"gpuops.wgsl": "wgsl"}
    assert "exclude-package-data" not in config
    source = ROOT / config["package-dir"]["gpuops.wgsl"]
    matched = {Path(found).relative_to(source).as_posix()
               for pattern in config["package-data"]["gpuops.wgsl"]
               for found in glob.glob(os.path.join(glob.escape(str(source)), pattern), recursive=True)
               if os.path.isfile(found)}
    every = set(tree(source))
    assert requested_files() <= every
    assert sorted(every - matched) == [], "files under wgsl/ that pyproject.toml's package data leaves out"
    checkout = Path(os.environ.get(CHECKOUT_ENV) or ROOT)
    packages = {".".join(path.parent.relative_to(checkout).parts) for path in (checkout / "gpuops").rglob("__init__.py")}
    assert packages and packages <= set(config["packages"]), "Python packages missing from pyproject.toml"


def test_the_installed_package_is_the_checkout_it_was_built_from():
    """In CI: gpuops was imported from the installed wheel, not from the checkout, and holds exactly the checkout's
    gpuops/ and wgsl/ (as gpuops/wgsl/), byte for byte."""
    checkout = os.environ.get(CHECKOUT_ENV)
    if not checkout:
        pytest.skip(f"runs against an installed wheel: .ci/run sets {CHECKOUT_ENV}")
    checkout = Path(checkout).resolve()
    package = Path(gpuops.__file__).resolve().parent
    for outside in (checkout, ROOT):
        assert not package.is_relative_to(outside), f"gpuops was imported from {package}, inside {outside}"
    assert shaders.WGSL_DIR == package / "wgsl"
    expected = tree(checkout / "gpuops") | {f"wgsl/{name}": data for name, data in tree(checkout / "wgsl").items()}
    installed = tree(package)
    assert sorted(expected.keys() - installed.keys()) == [], "files of the checkout missing from the installed package"
    assert sorted(installed.keys() - expected.keys()) == [], "installed files the checkout does not have"
    assert sorted(name for name in expected if expected[name] != installed[name]) == [], \
        "installed files that differ from the checkout's (a stale wheel?)"
