"""The layers of docs/architecture.md, enforced on the source: which package may import which,
and no import cycles (imports inside functions count; ``if TYPE_CHECKING:`` blocks do not).

The graph is read from the source with ``ast``, so nothing is imported and every module is
covered, including the ones a test run never loads.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "profiler_kit"
TORCH = ("torch", "torchvision")

ARCHITECTURE = ROOT / "docs" / "architecture.md"
EVERYTHING = "everything"  # a row whose "may import" says so is not held to a list


def _ticked(text: str) -> list[str]:
    """The layer of each `name` in a cell of the table: ``trace/`` and ``trace.loader``
    are ``trace``, ``api.py`` is ``api``."""
    names = re.findall(r"`([^`]+)`", text)
    return [n.removesuffix(".py").rstrip("/").split(".")[0].split("/")[0] for n in names]


def _layer_table() -> dict[str, tuple[set[str] | None, set[str]]]:
    """The table "Layers" of docs/architecture.md, the one statement of the layers: each
    layer -> (what it may import, itself included; None: anything), what it never imports.
    A row naming several layers ("top level: ...") whose "may import" says "each other"
    lets them import one another."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("## Layers", 1)[1].split("\n#", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    found: dict[str, tuple[set[str] | None, set[str]]] = {}
    for row in rows[1:]:  # the header first
        package, _job, may, never = (c.strip() for c in row.strip("|").split(" | "))
        names = _ticked(package.split(" (")[0])
        allowed = None if EVERYTHING in may else set(_ticked(may))
        if allowed is not None and "each other" in may:
            allowed |= set(names)
        for name in names:
            found[name] = (None if allowed is None else allowed | {name}, set(_ticked(never)))
    return found


LAYERS = _layer_table()
# layer -> layers (or top-level modules) it may import from profiler_kit; third-party
# imports are free except torch, which only the measuring side and the scenarios load.
MAY_IMPORT: dict[str, set[str]] = {k: may for k, (may, _) in LAYERS.items() if may is not None}
NEVER_TORCH = {"trace", "analysis", "sources", "ddp_benchmark", "render", "results", "noise",
               "contention", "scenario", "util",
               "errors", "scenario_info", "cli", "api", "commands"}
# what workloads import from the launcher stays light: torch is imported by the workload
TORCH_FREE_MODULES = {"profiler_kit.measure.distributed"}
# profkit record's parent side and the bootstrap that starts the script: torch is imported by
# the script (the hooks in record.hooks go in when it does)
TORCH_FREE_MODULES |= {"profiler_kit.record", "profiler_kit.record.command_line",
                       "profiler_kit.record.launch", "profiler_kit.record.bootstrap"}
NEVER_RENDER = {"trace", "analysis", "sources", "ddp_benchmark", "measure", "results", "noise",
                "contention", "scenario", "record", "util",
                "errors", "scenario_info"}


def _modules() -> dict[str, Path]:
    """Every module of the package, scenarios included (installed as profiler_kit.scenarios)."""
    found: dict[str, Path] = {}
    for base, prefix in ((ROOT / PACKAGE, PACKAGE), (ROOT / "scenarios", f"{PACKAGE}.scenarios")):
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Import statements anywhere in the tree except under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str) -> str:
    """The longest known module that ``name`` names or lies in (a package's attribute)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str) -> set[str]:
    """Fully qualified names that ``module`` imports (modules of ours resolved to modules)."""
    path = MODULES[module]
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = module.split(".")
            anchor = anchor if is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base]) if base else ".".join(anchor)
        for alias in node.names:
            full = f"{base}.{alias.name}"
            names.add(full if full in MODULES else base)
    return {(_resolve(n) or n) if n.startswith(PACKAGE) else n for n in names}


GRAPH = {m: {i for i in imports_of(m) if i in MODULES and i != m} for m in MODULES}


def layer(module: str) -> str:
    """The layer a module belongs to: the first name below ``profiler_kit``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_source_is_found():
    assert f"{PACKAGE}.trace.loader" in MODULES
    assert f"{PACKAGE}.scenarios.concurrent" in MODULES
    assert any(layer(m) == "measure" for m in MODULES)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) in NEVER_TORCH
                                          or m in TORCH_FREE_MODULES))
def test_torch_free_layers_never_import_torch(module):
    bad = sorted(i for i in imports_of(module) if i.split(".")[0] in TORCH)
    assert not bad, f"{module} ({layer(module)} layer) imports {bad}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) in NEVER_RENDER))
def test_only_commands_and_api_import_render(module):
    bad = sorted(i for i in GRAPH[module] if layer(i) == "render")
    assert not bad, f"{module} ({layer(module)} layer) imports the renderers {bad}"


def test_every_layer_has_its_row_in_the_architecture_table():
    assert {layer(m) for m in MODULES} - {"__init__"} <= set(LAYERS) | {"__main__"}, \
        sorted({layer(m) for m in MODULES} - set(LAYERS))
    assert set(LAYERS) <= {layer(m) for m in MODULES}, "a row names no module"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if LAYERS.get(layer(m), (0, ()))[1]))
def test_layers_never_import_what_the_table_forbids(module):
    never = LAYERS[layer(module)][1]
    bad = sorted(i for i in GRAPH[module] if layer(i) in never)
    assert not bad, f"{module} ({layer(module)} layer) never imports {sorted(never)}: {bad}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) in MAY_IMPORT))
def test_layers_import_only_what_they_may(module):
    allowed = MAY_IMPORT[layer(module)]
    bad = sorted(i for i in GRAPH[module] if layer(i) not in allowed)
    assert not bad, f"{module} ({layer(module)} layer) may import only {sorted(allowed)}: {bad}"


# analysis/ is grouped by question into rooms; a room imports only rooms below it. The
# modules at analysis/'s top bundle the rooms (one trace, one job, traces side by side).
ANALYSIS_ROOM_LEVEL = {"core": 0, "time": 1, "perf": 1, "jobs": 1, "memory": 1,
                       "diffs": 2, "advice": 2, "code": 2, "whatif": 2}
BUNDLE_LEVEL = 3
# what reading or writing files, or starting processes, looks like in the source
IO_MODULES = {"subprocess", "multiprocessing", "concurrent", "pickle", "gzip", "shutil",
              "tempfile", "socket"}
IO_CALLS = {"open", "read_bytes", "read_text", "write_bytes", "write_text", "unlink",
            "mkdir", "rmdir", "fork", "system", "popen"}


def room(module: str) -> str:
    """The room of an analysis module (``time``), or its own name for a bundle at the top."""
    return module.split(".")[2]


def room_level(module: str) -> int:
    return ANALYSIS_ROOM_LEVEL.get(room(module), BUNDLE_LEVEL)


ANALYSIS = sorted(m for m in MODULES if layer(m) == "analysis" and m.count(".") >= 2)


def test_every_analysis_module_is_in_a_room_or_a_bundle():
    for m in ANALYSIS:
        assert m.count(".") == 2 or room(m) in ANALYSIS_ROOM_LEVEL, m


@pytest.mark.parametrize("module", ANALYSIS)
def test_analysis_rooms_import_only_rooms_below(module):
    bad = sorted(i for i in GRAPH[module] if layer(i) == "analysis" and i.count(".") >= 2
                 and room(i) != room(module) and room_level(i) >= room_level(module)
                 and room_level(module) < BUNDLE_LEVEL)
    assert not bad, f"{module} ({room(module)}) imports rooms at or above its own: {bad}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) == "analysis"))
def test_analysis_reads_and_writes_no_files_and_starts_no_processes(module):
    tree = ast.parse(MODULES[module].read_text())
    io_imports = sorted(i for i in imports_of(module) if i.split(".")[0] in IO_MODULES)
    calls = sorted({(n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id)
                    for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, (ast.Attribute, ast.Name))
                    and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id)
                    in IO_CALLS})
    assert not io_imports and not calls, (
        f"{module} does I/O ({io_imports + calls}): that belongs in profiler_kit.sources")


def _top_level_names(module: str) -> set[str]:
    names: set[str] = set()
    nodes = list(ast.parse(MODULES[module].read_text()).body)
    for node in nodes:
        if isinstance(node, ast.If):  # both branches (``if TYPE_CHECKING: ... else: ...``)
            nodes += node.body + node.orelse
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_import_of_ours_names_what_exists(module):
    """Lazy imports included, so a module moved is never left named at its old place."""
    bad = []
    for node in _import_nodes(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names
                    if a.name.startswith(f"{PACKAGE}.") and a.name not in MODULES]
        elif node.module and node.module.startswith(PACKAGE) and not node.level:
            if node.module not in MODULES:
                bad.append(node.module)
                continue
            defined = _top_level_names(node.module)
            bad += [f"{node.module}.{a.name}" for a in node.names
                    if f"{node.module}.{a.name}" not in MODULES and a.name not in defined]
    assert not bad, f"{module} imports what does not exist: {bad}"


def test_commands_are_listed_by_the_cli_and_never_import_it():
    assert not [m for m in MODULES if layer(m) == "commands" and f"{PACKAGE}.cli" in GRAPH[m]]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_imports_in_functions_count_and_type_checking_imports_do_not():
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import torch\n"
        "def f():\n    import numpy\n    from . import sibling\n")
    found = [(type(n).__name__, getattr(n, "module", None), n.names[0].name)
             for n in _import_nodes(tree)]
    assert sorted(found, key=str) == sorted([("ImportFrom", "typing", "TYPE_CHECKING"),
                                             ("Import", None, "numpy"),
                                             ("ImportFrom", None, "sibling")], key=str)


# the formats of render/: rich is the console's alone, and the other formats share words
# (render/wording), never the console's modules
RICH_FREE_RENDER = ("markdown", "html", "json", "wording", "sections")


@pytest.mark.parametrize("module", sorted(
    m for m in MODULES if m.startswith(f"{PACKAGE}.render.")
    and m.split(".")[2] in RICH_FREE_RENDER))
def test_only_the_console_renders_with_rich(module):
    imported = imports_of(module)
    assert not [i for i in imported if i == "rich" or i.startswith("rich.")], module
    console = sorted(i for i in imported if i.startswith(f"{PACKAGE}.render.console"))
    assert not console, f"{module} imports the console's modules: {console}"
