"""NumPy's floating-point error reporting, for the NumPy-level functions: what a NumPy ufunc does after its loop
raised floating-point flags, as np.errstate / np.seterr and np.seterrcall say, so that a gpuops call reports its
errors exactly as the ufunc it follows.

The flags are NumPy's bits (DIVIDE_BY_ZERO, OVERFLOW, UNDERFLOW, INVALID: the kernels' ERROR_FLAG values too). Where
they come from: the kernels' flag word (wgsl/lib/error_flags.wgsl) and the host's own NumPy conversions, captured
(`captured`). `report` mirrors NumPy's handler (numpy/_core/src/umath/extobj.c, PyUFunc_handlefperr): each raised
category in the order divide, over, under, invalid, by its mode: "ignore"; "warn", a RuntimeWarning "<what>
encountered in <ufunc>" at the caller's line (the first frame outside gpuops: NumPy's ufuncs warn at the line that
called them); "raise", FloatingPointError; "call", the np.seterrcall function called with (what, the raised flags);
"print", "Warning: ..." written to the process's standard error (file descriptor 2, as NumPy's C code writes it);
"log", the same line to the np.seterrcall object's write method.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator

import numpy as np

DIVIDE_BY_ZERO, OVERFLOW, UNDERFLOW, INVALID = 1, 2, 4, 8  # NumPy's NPY_FPE_* values

# (flag, np.geterr() key, NumPy's words), in the order NumPy handles them.
_CATEGORIES = ((DIVIDE_BY_ZERO, "divide", "divide by zero"), (OVERFLOW, "over", "overflow"),
               (UNDERFLOW, "under", "underflow"), (INVALID, "invalid", "invalid value"))
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def report(name: str, flags: int) -> None:
    """Report `flags` as NumPy's ufunc `name` ("remainder", "fmod", "sign", ...) reports the flags its loop raised,
    under the caller's np.errstate."""
    if not flags:
        return
    modes = np.geterr()
    for flag, key, what in _CATEGORIES:
        mode = modes[key] if flags & flag else "ignore"
        if mode == "ignore":
            continue
        message = f"{what} encountered in {name}"
        if mode == "warn":
            warnings.warn(message, RuntimeWarning, stacklevel=_caller_level())
        elif mode == "raise":
            raise FloatingPointError(message)
        elif mode == "print":
            os.write(2, f"Warning: {message}\n".encode())
        else:
            target = np.geterrcall()
            if mode == "call":
                if target is None:
                    raise NameError(f"python callback specified for {what} (in  {name}) but no function found.")
                target(what, flags)
            else:  # "log"
                if target is None:
                    raise NameError(f"log specified for {what} (in {name}) but no object with write method found.")
                target.write(f"Warning: {message}\n")


@contextlib.contextmanager
def captured() -> Iterator[list[int]]:
    """Run the block with NumPy's floating-point errors collected rather than handled: the list yielded holds the
    flags NumPy raised (one entry per category it would have handled), OR them for `report`. The block's NumPy
    calls must run on this thread (np.errstate is the calling context's)."""
    raised: list[int] = []
    with np.errstate(all="call", call=lambda what, status: raised.append(status)):
        yield raised


def _caller_level() -> int:
    """warnings.warn's stacklevel, counted from report(), for the first frame outside the gpuops package."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
