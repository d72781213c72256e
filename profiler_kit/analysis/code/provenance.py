"""Compiled kernels to the user's source lines, from Inductor's own provenance.

When profkit runs a ``torch.compile``'d model it saves, beside the trace, what Inductor
recorded for each graph it compiled (``<worker>.inductor_provenance.json``): the graph's
FX cache key, whether it is a backward graph, and per generated kernel the post-grad FX
nodes it fused and their stack traces (Inductor's provenance tracking). In the trace each
graph's run is a ``## Call CompiledFxGraph <key> ##`` range, and its kernels are Triton
kernels on the GPU (``triton_poi_fused_add_0``) or, on the CPU, ops named
``graph_0_cpp_fused_add_0`` (Inductor's kernel profiling). Kernel names repeat between
graphs (a forward and its backward both have a ``cpp_fused_sum_1``), so each kernel is
looked up in the graph whose range it ran (or was launched) in.

No file is read here: ``sources.inductor_provenance`` reads the file.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.code.frames import Nesting
from profiler_kit.analysis.memory.code_sites import is_library_file
from profiler_kit.trace.table import EventTable

PROVENANCE_SUFFIX = ".inductor_provenance.json"
GRAPH_CALL_PREFIX = "## Call CompiledFxGraph "
_CPU_KERNEL = re.compile(r"^graph_\d+_(cpp_\w+)$")


class Frame(msgspec.Struct, frozen=True, array_like=True):
    file: str  # as the profiler writes it (relative to the sys.path entry it is under)
    line: int
    function: str


class KernelSource(msgspec.Struct, frozen=True):
    """One generated kernel: the post-grad FX nodes it fused and their stacks (outermost
    frame first), in Inductor's order."""

    nodes: tuple[str, ...] = ()
    stacks: tuple[tuple[Frame, ...], ...] = ()


class CompiledGraph(msgspec.Struct, frozen=True):
    key: str | None  # the FX graph cache key of its "## Call CompiledFxGraph" range
    backward: bool
    kernels: dict[str, KernelSource]


class Provenance(msgspec.Struct, frozen=True):
    version: int
    torch: str
    graphs: tuple[CompiledGraph, ...]


def kernel_name(name: str) -> str:
    """The generated kernel's own name: ``graph_0_cpp_fused_add_0`` -> ``cpp_fused_add_0``."""
    m = _CPU_KERNEL.match(name)
    return m.group(1) if m else name.split("(", 1)[0].strip()


def user_site(stack: tuple[Frame, ...]) -> str | None:
    """``file:line (function)`` of the innermost frame outside libraries."""
    for f in reversed(stack):
        if not is_library_file(f.file):
            return f"{f.file}:{f.line} ({f.function})"
    return None


def kernel_sites(k: KernelSource) -> tuple[str, ...]:
    """The user's lines of a kernel's fused nodes, first seen first."""
    out: dict[str, None] = {}
    for stack in k.stacks:
        site = user_site(stack)
        if site is not None:
            out.setdefault(site)
    return tuple(out)


def find_kernel(prov: Provenance, name: str, key: str | None, backward: bool | None
                ) -> KernelSource | None:
    """The kernel of the graph ``key`` (the range it ran in); without that, the first
    graph holding the name, of the same direction where ``backward`` is known."""
    name = kernel_name(name)
    if key is not None:
        for g in prov.graphs:
            if g.key == key and name in g.kernels:
                return g.kernels[name]
    for g in sorted(prov.graphs, key=lambda g: g.backward != backward):
        if name in g.kernels:
            return g.kernels[name]
    return None


def graph_keys(table: EventTable, thread: np.ndarray, ts: np.ndarray) -> list[str | None]:
    """Per anchor (thread id, time): the key of the ``## Call CompiledFxGraph`` range around
    it, None outside any."""
    ids = [i for i, n in enumerate(table.names) if n.startswith(GRAPH_CALL_PREFIX)]
    if not ids or not len(ts):
        return [None] * len(ts)
    rows = np.flatnonzero(np.isin(table.name, ids))
    calls = Nesting(table, rows)
    out: list[str | None] = []
    for i in calls.innermost(thread, ts).tolist():
        if i < 0:
            out.append(None)
            continue
        text = table.names[int(table.name[calls.row[i]])]
        out.append(text.removeprefix(GRAPH_CALL_PREFIX).removesuffix("##").strip())
    return out
