"""The README's Python examples run as written, in order, in one namespace (on the default adapter)."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_every_python_example_runs_in_order():
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 4, "the README lost its examples"
    namespace: dict = {"__name__": "readme"}
    shown = 0
    for number, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        except Exception as exc:  # say which block broke
            raise AssertionError(f"README python block {number} failed: {type(exc).__name__}: {exc}\n{block}") \
                from exc
        # `print(expression)  # [printed]...`: the comment starts with what the line prints
        for expression, printed in re.findall(r"^print\((.*)\)\s+# (\[.*?\])", block, flags=re.M):
            assert str(eval(expression, namespace)) == printed, (expression, printed)
            shown += 1
    assert shown >= 3, "the README's examples lost their printed results"


RESULTS = README.parent / "bench" / "results"


def readme_figures():
    """bench/readme_figures.py, which makes the README's performance figures from the records."""
    spec = importlib.util.spec_from_file_location("readme_figures", README.parent / "bench" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def words(text: str) -> str:
    return " ".join(text.split())


def test_performance_figures_are_the_records_they_name():
    """The README's headline on speed and its performance table are what bench/readme_figures.py makes from the
    records in bench/results/ (print them with `python bench/readme_figures.py`), and the performance section quotes
    no other figure."""
    figures = readme_figures()
    text = README.read_text()
    assert words("- " + figures.headline()) in words(text), f"the README's headline should read:\n{figures.headline()}"
    table = figures.performance_table()
    assert table in text, f"the README's performance table should read:\n{table}"
    section = text[text.index("## Performance\n"):]
    section = section[: section.index("\n## ", 1)].replace(table, "")
    # (shares of special values describe the data, not a result)
    assert not re.findall(r"\d[\d.]*\s*(?:%|x\b)(?! (?:inf|NaN|special))", section), "figures outside the table"


def test_every_record_is_referenced_and_every_reference_is_a_record():
    """Each file in bench/results/ is named by the README or a page of docs/, and each bench/results/ file they name
    (pattern cells such as `<gpu>-<implementation>-targets.json` aside) exists."""
    documents = [README, *sorted((README.parent / "docs").glob("*.md"))]
    text = "\n".join(path.read_text() for path in documents)
    records = {path.name for path in RESULTS.iterdir() if path.is_file()}
    assert records, "bench/results/ is empty"
    assert sorted(name for name in records if name not in text) == []
    named = set(re.findall(r"\b(?:h100|h200|llvmpipe)-[\w.-]+\.(?:json|txt|png)\b", text))
    assert sorted(named - records) == []


def test_install_section_is_what_ci_does():
    """The README's Install section builds with `python -m build` and installs the wheel of this version, as
    .ci/setup.sh's install_gpuops does for .ci/run and bench/run."""
    text = README.read_text()
    install = text[text.index("## Install\n"):]
    install = install[: install.index("\n## ")]
    version = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]["version"]
    assert "pip install build && python -m build" in install
    assert f"pip install dist/gpuops_webgpu-{version}-py3-none-any.whl" in install
    setup = (README.parent / ".ci" / "setup.sh").read_text()
    assert "-m build --outdir" in setup and "pip install -e" not in setup and "--editable" not in setup
