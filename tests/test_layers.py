"""The package's import graph: no cycles (lazy imports included), and the layer rules.

Reads the source with ``ast`` (nothing is imported): every ``import`` anywhere in a
module counts, except under ``if TYPE_CHECKING:``. Importing ``a.b.c`` counts as an
edge to ``a.b.c`` only, not to the packages above it, whose ``__init__`` Python runs
first but which import nothing back here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"profiler_kit": ROOT / "profiler_kit", "profiler_kit.scenarios": ROOT / "scenarios"}

# layer (a package prefix) -> what it must never import (prefixes), from DESIGN.md "Layout"
NEVER = {
    "profiler_kit.trace": ("torch", "profiler_kit.analysis", "profiler_kit.render",
                           "profiler_kit.measure"),
    "profiler_kit.analysis": ("torch", "profiler_kit.render", "profiler_kit.measure"),
    "profiler_kit.ddp_benchmark": ("torch", "profiler_kit.measure"),
    "profiler_kit.render": ("torch", "profiler_kit.measure"),
    "profiler_kit.measure": ("profiler_kit.render",),
}
# torch-free contracts: what readers of run.json and `profkit list` import
TORCH_FREE = ("profiler_kit.scenario", "profiler_kit.results", "profiler_kit.errors",
              "profiler_kit.artifacts", "profiler_kit.scenario_info",
              "profiler_kit.measure.distributed")


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for prefix, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([prefix, *parts])
            if name == "profiler_kit.scenarios" and path.parent == SOURCES["profiler_kit"]:
                continue
            found[name] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in _imports_in(child))
            continue
        yield from _imports_in(node)


def _imports_in(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules ``name`` imports: known modules, or the top-level name of others."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            package = name if is_package else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            out.add(sub if sub in known else base)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imported(name, path, known) for name, path in found.items()}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), or self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_lazy_imports_and_skips_type_checking_ones(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "if TYPE_CHECKING:\n"
        "    from profiler_kit.results import RunResult\n"
        "else:\n"
        "    import json\n"
        "def f():\n"
        "    from profiler_kit.measure import runner\n"
    )
    known = {"pkg.mod", "pkg.sibling", "profiler_kit.measure.runner"}
    assert imported("pkg.mod", source, known) == {
        "typing", "pkg.sibling", "json", "profiler_kit.measure.runner"}
    edges = graph()
    assert "profiler_kit.measure.runner" in edges["profiler_kit.api"]
    assert "profiler_kit.scenarios.pipeline.workload" in edges["profiler_kit.scenarios.pipeline"]


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_a_cycle_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers_import_only_what_they_may() -> None:
    broken = []
    for module, targets in graph().items():
        for layer, never in NEVER.items():
            if not _within(module, layer):
                continue
            broken += [f"{module} -> {t}" for t in sorted(targets)
                       if any(_within(t, n) for n in never)]
        if any(module == m for m in TORCH_FREE) and "torch" in targets:
            broken.append(f"{module} -> torch")
    assert broken == []


def test_commands_do_not_import_the_cli() -> None:
    edges = graph()
    assert [m for m, targets in edges.items()
            if _within(m, "profiler_kit.commands") and "profiler_kit.cli" in targets] == []
