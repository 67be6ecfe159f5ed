"""Large host copies on several threads: the read-back's one copy from a mapped staging buffer into the result, and
a large upload's copy into its mapped buffer.

A new result array's memory is untouched: the copy into it pays a page fault per page on top of the copy itself,
and on one thread that costs as much as the transfer over the bus (docs/performance.md). wgpu-py's own copy into a
mapped buffer runs on one thread and holds the GIL. NumPy's copyto releases the GIL, so a few threads copying
disjoint parts fault in and copy in parallel. Copies below PARALLEL_COPY_BYTES stay on the calling thread, and no
part is smaller than PART_BYTES: starting a part costs more than it saves below that.

Each Device has its own HostCopier (`Device.host_copies`), so that the copies of devices used side by side (one per
GPU, one thread each) never wait for one another's: COPY_THREADS threads at most (eight, or fewer where the machine
has fewer cores), made on the device's first large copy and ended when the device is collected (idle, they hold no
memory of their own). GPUOPS_COPY_THREADS=1 keeps every copy on the calling thread.
"""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from .errors import ValidationError

PARALLEL_COPY_BYTES = 8 << 20
PART_BYTES = 2 << 20
COPY_THREADS_ENV = "GPUOPS_COPY_THREADS"


def _thread_count() -> int:
    """$GPUOPS_COPY_THREADS, read once at import, else up to eight by the machine's cores."""
    text = os.environ.get(COPY_THREADS_ENV, "")
    if text.strip():
        try:
            count = int(text)
        except ValueError:
            count = 0
        if count < 1:
            raise ValidationError(f"{COPY_THREADS_ENV}={text!r} is not a positive number of threads")
        return count
    return max(1, min(8, os.cpu_count() or 1))


COPY_THREADS = _thread_count()


class HostCopier:
    """One device's host-copy threads (see the module docstring)."""

    def __init__(self):
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _threads(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(COPY_THREADS, thread_name_prefix="gpuops-copy")
                weakref.finalize(self, self._executor.shutdown, wait=False)
            return self._executor

    def copy(self, target: np.ndarray, source: np.ndarray) -> None:
        """np.copyto(target, source) for arrays of one shape, in parts on several threads when it is large.

        The parts are slices of the first axis, or of the flat arrays when both are C-contiguous; each element is
        copied once, by one thread, so the result is exactly copyto's."""
        parts = min(COPY_THREADS, target.nbytes // PART_BYTES) if target.nbytes >= PARALLEL_COPY_BYTES else 1
        if parts >= 2 and target.flags.c_contiguous and source.flags.c_contiguous:
            target, source = target.reshape(-1), source.reshape(-1)
        if parts < 2 or target.ndim == 0 or target.shape[0] < parts:
            np.copyto(target, source)
            return
        bounds = [target.shape[0] * k // parts for k in range(parts + 1)]
        executor = self._threads()
        futures = [executor.submit(np.copyto, target[a:b], source[a:b]) for a, b in zip(bounds, bounds[1:])]
        wait(futures)  # every part ends before any error is raised: the source may be unmapped right after
        for future in futures:
            future.result()
