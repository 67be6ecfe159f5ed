"""Large host copies on several threads: the read-back's one copy from a mapped staging buffer into the result, and
a large upload's copy into its mapped buffer.

A new result array's memory is untouched: the copy into it pays a page fault per page on top of the copy itself,
and on one thread that costs as much as the transfer over the bus (docs/performance.md). wgpu-py's own copy into a
mapped buffer runs on one thread and holds the GIL. NumPy's copyto releases the GIL, so a few threads copying
disjoint parts fault in and copy in parallel. Copies below PARALLEL_COPY_BYTES stay on the calling thread, and no
part is smaller than PART_BYTES: starting a part costs more than it saves below that.

COPY_THREADS threads at most (eight, or fewer where the machine has fewer cores), made on the first large copy
and kept idle in one pool for the process (they hold no memory of their own; `concurrent.futures` ends them at
exit). GPUOPS_COPY_THREADS=1 keeps every copy on the calling thread.
"""

from __future__ import annotations

import os
import threading
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
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(COPY_THREADS, thread_name_prefix="gpuops-copy")
        return _executor


def copy_array(target: np.ndarray, source: np.ndarray) -> None:
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
    executor = _pool()
    futures = [executor.submit(np.copyto, target[a:b], source[a:b]) for a, b in zip(bounds, bounds[1:])]
    wait(futures)  # every part ends before any error is raised: the source may be unmapped right after
    for future in futures:
        future.result()


def write_mapped(buffer, data, size: int) -> None:
    """`buffer.write_mapped(data, 0)` for a buffer mapped for writing and `data` of `size` bytes (C-contiguous),
    through copy_array where it is large and wgpu-py gives a writable view of the mapping. The view is not kept:
    copy_array returns only when every part is copied, before the caller unmaps."""
    mapped_range = getattr(buffer, "_experimental_get_mapped_range", None)  # (wgpu-py 0.32 and wgpudawn)
    if size < PARALLEL_COPY_BYTES or mapped_range is None:
        buffer.write_mapped(data, 0)
        return
    words = -(-size // 4) * 4  # mapped ranges are whole 4-byte words
    target = np.frombuffer(mapped_range(0, words), np.uint8, size)
    copy_array(target, np.frombuffer(memoryview(data).cast("B"), np.uint8, size))
