"""Running gpuops-bench in-process for the CLI tests: its exit status, stdout and stderr."""

from __future__ import annotations

from gpuops.bench.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_error_line(err: str) -> str:
    """A refusal is exactly one line on stderr, with the tool's prefix and no traceback; its text after the prefix.
    The notices of steps that ran slow ("running: ...", a loaded machine's) are not part of it."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("running: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith("gpuops-bench: error: "), err
    assert "Traceback" not in err
    return lines[0].removeprefix("gpuops-bench: error: ")
