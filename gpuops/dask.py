"""gpuops on Dask: Dask arrays whose chunks are gpuops device arrays, and one dask.distributed worker per GPU.

Needs the `dask` extra (dask[array] and distributed: `pip install '.[dask]'` in the gpuops checkout, or
`pip install 'WHEEL.whl[dask]'` with the built wheel); `import gpuops` never imports this module. Importing it
registers gpuops.DeviceArray as a Dask chunk type, so that:
- `x.map_blocks(gpuops.asarray)` uploads each chunk of a Dask array to the default device of the worker that holds
  it, and `np.sign`, `np.isnan`, `np.isinf`, `np.remainder` (`%`) and `np.fmod` on the result run chunk by chunk on
  the workers' GPUs (DeviceArray.__array_ufunc__), beside NumPy arrays, Python scalars, other Dask arrays and
  device arrays; `to_host(x)` reads the chunks back into NumPy chunks.
- The array's meta, Dask's zero-size stand-in for a chunk, is a zero-size device array on the default device of
  the process that builds the graph (Dask runs the functions on it to learn the result's type; gpuops does no GPU
  work for zero-size arrays, only the device is opened).
- A chunk that Dask moves between workers travels as its values: pickling reads a device array back, and
  unpickling uploads it to the receiving process's default device. Dask counts a device chunk as its nbytes (as it
  counts CuPy's arrays), so it runs a task where its device chunks are rather than move them.

Dask gathers chunks into one array for `compute()` (and for `rechunk`); gpuops does not copy on the GPU, so
gathering device arrays is refused: `to_host(x).compute()` reads the chunks back first.

One GPU per worker: `LocalGPUCluster` starts a dask.distributed LocalCluster whose worker processes each get an
adapter's index in GPUOPS_ADAPTER; workers started by hand take `GPUOPS_ADAPTER=<index> dask worker ...
--preload gpuops.dask`. `worker_adapters(client)` tells which adapter each worker runs on.
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import dataclass

import numpy as np

try:
    import dask.array as da
    import distributed
    from dask.array.dispatch import concatenate_lookup
    from dask.sizeof import sizeof
    from distributed.worker_memory import parse_memory_limit
except ImportError as exc:  # the extra is missing
    raise ImportError(f"gpuops.dask needs dask[array] and distributed (pip install '.[dask]' in the gpuops "
                      f"checkout, or pip install 'WHEEL.whl[dask]' with the built wheel): {exc}") from exc

from .adapter_choice import ADAPTER_ENV, adapters, pick_adapter, wanted_adapter
from .api import default_device
from .arrays import DeviceArray
from .backends import BACKEND_ENV, load_backend
from .enums import integer_value
from .errors import GpuOpsError, ValidationError, shown

__all__ = ["LocalGPUCluster", "WorkerAdapter", "default_adapters", "to_host", "worker_adapters"]

_logger = logging.getLogger(__name__)


def _refuse_gathering(arrays, axis=0):
    raise ValidationError("gpuops.dask: Dask gathers the chunks of a Dask array into one array here (compute, "
                          "rechunk), and gpuops does not copy between device arrays on the GPU: read the chunks "
                          "back first, gpuops.dask.to_host(x).compute()")


def _size_of(array: DeviceArray) -> int:
    return array.nbytes


da.register_chunk_type(DeviceArray)
concatenate_lookup.register(DeviceArray, _refuse_gathering)
# Dask places tasks where their input bytes are, and moving a device chunk costs its bytes (as for CuPy's arrays).
sizeof.register(DeviceArray, _size_of)


def _read_back(chunk: DeviceArray) -> np.ndarray:
    return chunk.numpy()


def to_host(x: da.Array) -> da.Array:
    """The Dask array `x` of device-array chunks with each chunk read back (DeviceArray.numpy) on the worker that
    holds it: NumPy chunks of the same dtype, shape and chunks."""
    if not isinstance(x, da.Array):
        raise TypeError(f"gpuops.dask.to_host: x {shown(x)} is a {type(x).__name__}, not a dask.array.Array")
    if not isinstance(x._meta, DeviceArray):
        raise ValidationError(f"gpuops.dask.to_host: x's chunks are {type(x._meta).__module__}."
                              f"{type(x._meta).__name__}, not gpuops.DeviceArray (make them with "
                              "x.map_blocks(gpuops.asarray))")
    return x.map_blocks(_read_back, dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))


@dataclass(frozen=True)
class WorkerAdapter:
    """The adapter a worker's default device runs on: `setting`, the worker's GPUOPS_ADAPTER (an index, or part
    of a name; None where it is unset and gpuops chose), and `name`, the device's adapter as Device.adapter_name
    gives it. Identical GPUs have the same name: the setting tells them apart."""

    setting: str | None
    name: str

    def __str__(self) -> str:
        return f"{ADAPTER_ENV}={self.setting} {self.name}" if self.setting is not None else f"{self.name} (chosen)"


def _this_workers_adapter() -> WorkerAdapter:
    return WorkerAdapter(os.environ.get(ADAPTER_ENV) or None, default_device().adapter_name)


def worker_adapters(client: distributed.Client) -> dict[str, WorkerAdapter]:
    """Each worker's address and the adapter its default device runs on (opened now where it is not yet)."""
    return client.run(_this_workers_adapter)


def dask_setup(worker) -> None:
    """Run in each worker that preloads this module (`--preload gpuops.dask`; LocalGPUCluster's workers do): opens
    the worker's default device as it starts. Where that fails (a GPUOPS_ADAPTER naming no adapter: gpuops'
    DeviceError lists the adapters), the worker's process ends before it takes any task (Dask logs any other
    preload error and goes on), and with it the `dask worker` command."""
    try:
        default_device()
    except GpuOpsError as exc:
        raise SystemExit(f"gpuops.dask: the worker cannot open its device: {exc}") from exc


class LocalGPUCluster(distributed.LocalCluster):
    """A dask.distributed LocalCluster with one worker process per adapter: each worker's GPUOPS_ADAPTER names its
    adapter by index, so its default device (the one gpuops.asarray and the functions use) is that adapter.

    `adapters`: the adapters' indices (gpuops.adapters() lists them); None takes default_adapters(): every adapter
    of the kind gpuops' default device runs on. `workers_per_adapter`: how many workers may share an adapter (1:
    none share). `n_workers`: how many workers to start (None: all the adapters allow); `scale` adds workers to the
    adapters with the fewest first, and refuses to go past `len(adapters) * workers_per_adapter`.
    `threads_per_worker` (default 2) is how many tasks each worker runs at once: two let one chunk's host copies
    run while another's kernels do (as a large gpuops call keeps two pieces under way). Other keywords go to
    distributed.LocalCluster (`env` to every worker, beside GPUOPS_ADAPTER). `backend` ('wgpu-native' or 'dawn')
    is set in the workers' GPUOPS_BACKEND where given; adapter indices are that backend's.

    Workers are named `adapter-<index>` (`adapter-<index>-<k>` where they share). Nothing is started where an index
    is past the adapters (DeviceError, listing them) or more workers are asked for than the adapters allow
    (ValidationError)."""

    def __init__(self, adapters: list[int] | tuple[int, ...] | None = None, *, n_workers: int | None = None,
                 workers_per_adapter: int = 1, threads_per_worker: int = 2, backend: str | None = None,
                 memory_limit="auto", **kwargs):
        where = "gpuops.dask.LocalGPUCluster"
        sharing = integer_value(workers_per_adapter)
        if sharing is None or sharing < 1 or isinstance(workers_per_adapter, bool):
            raise ValidationError(f"{where}: workers_per_adapter {shown(workers_per_adapter)}; allowed: an integer "
                                  "of at least 1")
        indices = _adapter_indices(where, adapters, backend)
        # Each adapter's first worker before any adapter's second: a cluster smaller than its room spreads out.
        self._slots = [(index, k) for k in range(sharing) for index in indices]
        self._sharing = sharing
        if n_workers is None:
            n_workers = len(self._slots)
        count = integer_value(n_workers)
        if count is None or count < 0 or isinstance(n_workers, bool):
            raise ValidationError(f"{where}: n_workers {shown(n_workers)}; allowed: an integer of at least 0")
        self._refuse_past_room(where, count)
        if kwargs.pop("processes", True) is not True:
            raise ValidationError(f"{where}: processes=False; each worker needs a process of its own (its "
                                  f"{ADAPTER_ENV} picks its default device)")
        worker_class = kwargs.get("worker_class")
        if worker_class is not None and not (isinstance(worker_class, type) and
                                             issubclass(worker_class, distributed.Nanny)):
            raise ValidationError(f"{where}: worker_class {shown(worker_class)}; allowed: distributed.Nanny or a "
                                  f"subclass (each worker needs a process of its own, which a nanny starts with its "
                                  f"{ADAPTER_ENV})")
        self._worker_env = dict(kwargs.pop("env", None) or {})
        if backend is not None:
            self._worker_env[BACKEND_ENV] = backend
        preload = list(kwargs.pop("preload", None) or [])
        super().__init__(n_workers=0, threads_per_worker=threads_per_worker, processes=True,
                         memory_limit=parse_memory_limit(memory_limit, 1, max(count, 1), logger=_logger),
                         preload=[*preload, __name__], **kwargs)
        self.scale(count)
        self.sync(self._correct_state)

    def _refuse_past_room(self, where: str, count: int) -> None:
        if count > len(self._slots):
            indices = sorted({index for index, _ in self._slots})
            raise ValidationError(f"{where}: {count} workers; the adapters {indices} with workers_per_adapter="
                                  f"{self._sharing} have room for {len(self._slots)} (one GPU per worker); pass "
                                  "workers_per_adapter=2 or more for workers that share an adapter")

    def scale(self, n=0, memory=None, cores=None):
        # (With memory= or cores=, Dask works the count out itself, and new_worker_spec refuses past the room.)
        if memory is None and cores is None:
            self._refuse_past_room("gpuops.dask.LocalGPUCluster.scale", integer_value(n) or 0)
        return super().scale(n, memory=memory, cores=cores)

    def new_worker_spec(self):
        """The first free slot's worker: the adapter with the fewest workers, its GPUOPS_ADAPTER in the env."""
        taken = set(self.worker_spec)
        free = [(index, k) for index, k in self._slots if self._worker_name(index, k) not in taken]
        if not free:
            self._refuse_past_room("gpuops.dask.LocalGPUCluster.scale", len(taken) + 1)
        index, k = free[0]
        spec = copy.deepcopy(self.new_spec)
        spec["options"]["env"] = {**self._worker_env, ADAPTER_ENV: str(index)}
        return {self._worker_name(index, k): spec}

    def _worker_name(self, index: int, k: int) -> str:
        return f"adapter-{index}" if self._sharing == 1 else f"adapter-{index}-{k}"


def default_adapters(backend: str | None = None) -> list[int]:
    """The indices of the adapters a LocalGPUCluster takes by default: every adapter of the kind gpuops' default
    device runs on (GPUOPS_ADAPTER, where set, picks that kind), the same backend and type: every discrete GPU of a
    machine with several, the software adapter of a machine with none."""
    chosen = pick_adapter(load_backend(backend), *wanted_adapter(None))
    kind = (chosen.info["backend_type"], chosen.info["adapter_type"])
    return [a.index for a in adapters(backend) if (a.backend, a.type) == kind]


def _adapter_indices(where: str, given, backend: str | None) -> list[int]:
    """The adapters' indices: each given one checked (DeviceError past the end or for an adapter that cannot run
    compute shaders, as Device(adapter=index) would), or default_adapters()."""
    if given is None:
        return default_adapters(backend)
    if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
        raise ValidationError(f"{where}: adapters {shown(given)}; allowed: None or a sequence of adapter indices "
                              "(see gpuops.adapters())")
    module = load_backend(backend)
    indices = []
    for position, value in enumerate(given):
        index = integer_value(value)
        if index is None or index < 0 or isinstance(value, bool):
            raise ValidationError(f"{where}: adapters[{position}] {shown(value)}; allowed: an adapter's index, an "
                                  "integer of at least 0 (see gpuops.adapters())")
        pick_adapter(module, index, f"{where}: adapters[{position}]")
        if index in indices:
            raise ValidationError(f"{where}: adapters[{position}] {index} is given twice; pass each adapter once "
                                  "(workers_per_adapter sets how many workers share one)")
        indices.append(index)
    if not indices:
        raise ValidationError(f"{where}: adapters is empty; give at least one index (see gpuops.adapters())")
    return indices
