"""The README's Python examples run as written, in order, in one namespace (on the default adapter)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_every_python_example_runs_in_order():
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 4, "the README lost its examples"
    namespace: dict = {"__name__": "readme"}
    for number, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        except Exception as exc:  # say which block broke
            raise AssertionError(f"README python block {number} failed: {type(exc).__name__}: {exc}\n{block}") \
                from exc
