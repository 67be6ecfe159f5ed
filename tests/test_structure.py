"""The package's structure as installed: its modules import one another without a loop, the imports made only for
annotations (under TYPE_CHECKING) included, so that each module can be read, and replaced, above the ones it
uses."""

from __future__ import annotations

import ast
from pathlib import Path

import gpuops

PACKAGE = Path(gpuops.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `path` imports: `import gpuops.x`, `from .x import y`, `from . import x` (a
    module, where x is one; else the package itself), wherever the statement stands."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            if base not in modules:
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    found.discard(name)
    return found


def test_no_module_of_the_package_imports_itself_through_others():
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    assert {"gpuops.device", "gpuops.pool", "gpuops.api", "gpuops.bench.targets"} <= modules
    graph = {module_name(path): imported_modules(path, modules) for path in paths}
    assert "gpuops.pool" in graph["gpuops.device"]  # the walk sees relative imports
    state: dict[str, str] = {}  # "open" while on the path, "done" after

    def loop_from(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return path[path.index(target):] + [node, target]  # (an open module is on the path)
            if target not in state:
                found = loop_from(target, path + [node])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            loop = loop_from(start, [])
            assert loop is None, "an import loop: " + " -> ".join(loop)
