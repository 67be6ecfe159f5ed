"""docs/architecture.md's recipe for adding an operator, followed to the letter: a throwaway NEGATE on int32 is added
to a copy of the repository through the recipe's steps alone, in the files the recipe names and no other, and the
operator-generic tests of that copy pick it up and pass (the DML level, the NumPy level, validation and the
descriptions)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gpuops
from gpuops import shaders

ROOT = Path(__file__).resolve().parents[1]

# The recipe's steps for NEGATE, as (file, anchor, text): the text goes in before the anchor (None: a new file).
NEGATE = [
    ("gpuops/operators.py", "\n\ndef _modulus_policies(", '''

@operator_description
class NegateDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
'''),
    ("gpuops/operators.py", "\n)\n\n_BY_DESC_TYPE", '''
    OperatorSpec("ELEMENT_WISE_NEGATE", 1000, NegateDesc,
                 support=(SupportRow(FeatureLevel.LEVEL_3_0, ONE_TO_EIGHT, frozenset({DataType.INT32})),),
                 same_data_type=True, in_place=True, shader="negate.wgsl", numpy_ufunc=np.negative,
                 numpy_reference=lambda inputs, attributes, out_type: np.negative(*inputs)),'''),
    ("wgsl/ops/negate.wgsl", None, '''// A throwaway operator (tests/test_recipe.py): -x in every int32 lane, wrapping.
fn op(x: InElem) -> OutElem {
    return 0u - x;
}
'''),
    ("gpuops/api.py", "\n\n\ndef sign(", '''
_NEGATE = _Function(spec_by_name("ELEMENT_WISE_NEGATE"), ("x",))'''),
    ("gpuops/api.py", "\n\ndef gathers(", '''


def negate(x, *, out=None, where=True, casting="same_kind", order="K", dtype=None, subok=True, signature=None,
           device: Device | None = None, feature_level=None) -> Result:
    return _run(_NEGATE, (x,), (), out, device, feature_level,
                _options(_NEGATE, where, casting, order, dtype, subok, signature))'''),
    ("gpuops/__init__.py", "\nfrom . import backends", '''
from .api import negate
from .operators import NegateDesc'''),
    ("docs/semantics.md", "\n\n**SIGN.**", '''
| `ELEMENT_WISE_NEGATE` | 1000 | 3_0 | input, output | -x |'''),
    ("docs/semantics.md", '\n\nAn output type "the input\'s"', '''
| `ELEMENT_WISE_NEGATE` | 3_0 | 1 to 8 | INT32 | the input's |'''),
]
# Operator-generic test files that must run the new operator; -k selects its tests (ids name it).
GENERIC_TESTS = ["tests/test_validation.py", "tests/test_descriptions.py", "tests/test_arguments.py",
                 "tests/test_semantics.py", "tests/test_layouts.py"]


def recipe() -> tuple[int, list[str]]:
    """The count of files docs/architecture.md says an operator touches, and the files its steps name."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Adding an operator"):]
    section = section[:section.index("\n## ", 3)] if "\n## " in section[3:] else section
    count = re.search(r"touches (\w+) files", section).group(1)
    numbers = {"four": 4, "five": 5, "six": 6, "seven": 7}
    steps = re.findall(r"^\d+\. \*\*[^*]+\*\* in `([^`]+)`", section, flags=re.M)
    return numbers[count], steps


def test_a_new_operator_takes_the_recipe_alone(tmp_path):
    count, steps = recipe()
    edited = list(dict.fromkeys(path for path, _, _ in NEGATE))
    assert [path.replace("negate", "<name>") for path in edited] == steps and len(steps) == count
    copy = tmp_path / "repository"
    # The gpuops that was imported (in CI the installed wheel, whose wgsl/ lies inside the package) and this
    # checkout's tests and docs.
    package = Path(gpuops.__file__).resolve().parent
    wgsl_inside = shaders.WGSL_DIR.parent == package
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(package, copy / "gpuops", ignore=ignore)
    if not wgsl_inside:
        shutil.copytree(shaders.WGSL_DIR, copy / "wgsl", ignore=ignore)
    for part in ("tests", "docs"):
        shutil.copytree(ROOT / part, copy / part, ignore=ignore)
    for path, anchor, text in NEGATE:
        target = copy / ("gpuops/" + path if wgsl_inside and path.startswith("wgsl/") else path)
        if anchor is None:
            target.write_text(text)
            continue
        original = target.read_text()
        assert original.count(anchor) == 1, (path, anchor)
        target.write_text(original.replace(anchor, text + anchor))
    # the copy first; the caller's path after it (where wgpu and pytest may be installed)
    path = os.pathsep.join(p for p in (str(copy), os.environ.get("PYTHONPATH", "")) if p)
    environment = {**os.environ, "PYTHONPATH": path}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "negate", *GENERIC_TESTS]
    collected = subprocess.run(command + ["--collect-only"], cwd=copy, env=environment, capture_output=True,
                               text=True)
    for name in GENERIC_TESTS:
        assert f"{name}::" in collected.stdout, f"{name} runs no test of the new operator\n{collected.stdout[-2000:]}"
    ran = subprocess.run(command, cwd=copy, env=environment, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
