"""The one error hierarchy of gpuops: every refusal a caller can trigger is a GpuOpsError."""

from __future__ import annotations

import dataclasses


class GpuOpsError(Exception):
    """Base class of every error gpuops raises on purpose."""


class ValidationError(GpuOpsError, ValueError):
    """A description, binding or array that DirectML's contract (or gpuops' own decisions) refuses."""


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Where a description breaks the contract: kept as data so errors and tests can name the field."""

    operator: str
    field: str  # e.g. "ModulusFloorDesc.b_tensor.data_type"
    message: str

    def error(self) -> ValidationError:
        err = ValidationError(f"{self.operator}: {self.field}: {self.message}")
        err.operator, err.field = self.operator, self.field  # type: ignore[attr-defined]
        return err


try:  # NumPy's base class of its ufuncs' type errors, a TypeError (a private module, so looked for where it lies)
    from numpy._core._exceptions import UFuncTypeError as _UFuncTypeError
except ImportError:  # NumPy 1.x
    try:
        from numpy.core._exceptions import UFuncTypeError as _UFuncTypeError
    except ImportError:
        _UFuncTypeError = TypeError


class CastingError(GpuOpsError, _UFuncTypeError):
    """casting= refuses a conversion, as NumPy's ufunc refuses it (an input to the dtype NumPy computes in, or the
    result to out's dtype): NumPy's UFuncTypeError (a TypeError), worded as NumPy words it after the function's name.
    Its attributes are those of NumPy's own casting error: `ufunc` (whose rules refused it), `casting`, `from_` and
    `to` (the dtypes)."""

    def __init__(self, message: str, ufunc=None, casting: str | None = None, from_=None, to=None):
        TypeError.__init__(self, message)  # (UFuncTypeError's own __init__ takes the ufunc alone)
        self.ufunc, self.casting, self.from_, self.to = ufunc, casting, from_, to


class DeviceError(GpuOpsError, RuntimeError):
    """No usable adapter, or the adapter cannot do what was asked (memory, limits)."""


class FrozenDescriptionError(GpuOpsError, dataclasses.FrozenInstanceError):
    """A description was changed after construction: they are immutable (compiled operators are cached by them)."""


def shown(value: object, limit: int = 80) -> str:
    """repr(value) for an error message, cut short: a refused argument may be a huge list or string."""
    try:
        text = repr(value)
    except Exception:  # a caller's object whose repr fails must not replace the error being reported
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def cause_of(exc: BaseException) -> str:
    """wgpu's own words for an error, on one line: its type and every informative line of its message. wgpu's
    first line is only the kind ("Validation Error"); the cause follows ("Caused by:", then e.g. "Buffer with
    'x' label has been destroyed", "Not enough memory left", "Parent device is lost")."""
    lines = [line.strip() for line in str(exc).splitlines()]
    text = ": ".join(line for line in lines if line and line != "Caused by:")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
