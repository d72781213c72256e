"""Phases: time per ``record_function`` annotation (forward, backward, optimizer, ...).

A phase's CPU time is the union of its spans (overlapping async spans count once), so it
never exceeds its window. Its GPU time is the GPU busy time (union) of the activities
launched inside it: those whose launching call runs inside one of its spans on the same
thread (linked by correlation id). Both are measured in a window (the steps, or the
whole trace). ``ProfilerStep#N`` spans are steps, not phases (see
:mod:`profiler_kit.analysis.core.steps`).
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core import intervals
from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.trace.table import Cat, EventTable

_STEP = re.compile(r"^ProfilerStep#\d+$")
_THREAD_SHIFT = 42  # ns within one thread's band of the combined time axis (73 minutes)


class Phase(msgspec.Struct, frozen=True):
    name: str
    count: int
    cpu_total_ns: int  # union of the CPU-side spans, inside the window
    gpu_total_ns: int  # GPU busy time of the activities launched inside the spans
    share_of_window: float | None  # cpu_total / the window
    cpu_sum_ns: int = 0  # plain sum of the spans' durations (overlaps counted twice)
    gpu_span_ns: int = 0  # union of Kineto's GPU-side spans of this name, where present
    gpu_share_of_window: float | None = None  # gpu_total / the GPU window


class Phases(msgspec.Struct, frozen=True):
    phases: tuple[Phase, ...]  # largest CPU time first
    window_ns: int = 0  # the CPU-side window the shares are of
    gpu_window_ns: int = 0  # the GPU-side window


def analyze_phases(table: EventTable, tree: OpTree, gpu: GpuActivity,
                   window: tuple[int, int], gpu_window: tuple[int, int] | None = None,
                   gpu_mask: np.ndarray | None = None) -> Phases:
    """Every annotation name's CPU and GPU time inside ``window`` (CPU side) and
    ``gpu_window`` (GPU side), counting the GPU activities in ``gpu_mask`` (all)."""
    lo, hi = window
    g_lo, g_hi = gpu_window if gpu_window is not None else window
    rows = table.rows(Cat.USER_ANNOTATION)
    g_rows = table.rows(Cat.GPU_USER_ANNOTATION)
    names = distinct(np.concatenate([table.name[rows], table.name[g_rows]]))
    sel = np.ones(len(gpu), dtype=bool) if gpu_mask is None else gpu_mask
    point, act_start, act_end = _launch_points(table, tree, gpu, sel)
    span_key = _span_keys(table, tree, rows)
    phases = []
    for name_id in names.tolist():
        name = table.names[name_id]
        if _STEP.match(name):
            continue
        mine = rows[table.name[rows] == name_id]
        s = table.ts_ns[mine]
        e = s + table.dur_ns[mine]
        cpu_u = intervals.clip(intervals.union(s, e), lo, hi)
        gpu_ns = 0
        if len(point) and len(mine):
            keyed = span_key[table.name[rows] == name_id]
            ok = keyed[:, 0] >= 0
            ku = intervals.union(keyed[ok, 0], keyed[ok, 1])
            inside = _inside(ku, point)
            busy = intervals.union(act_start[inside], act_end[inside])
            gpu_ns = intervals.total(intervals.clip(busy, g_lo, g_hi))
        gspans = g_rows[table.name[g_rows] == name_id]
        gs = table.ts_ns[gspans]
        gspan_ns = intervals.total(intervals.clip(
            intervals.union(gs, gs + table.dur_ns[gspans]), g_lo, g_hi))
        cpu_ns = intervals.total(cpu_u)
        phases.append(Phase(
            name=name,
            count=int(len(mine)) or int(len(gspans)),
            cpu_total_ns=cpu_ns,
            gpu_total_ns=gpu_ns,
            share_of_window=cpu_ns / (hi - lo) if hi > lo else None,
            cpu_sum_ns=int(table.dur_ns[mine].sum()),
            gpu_span_ns=gspan_ns,
            gpu_share_of_window=gpu_ns / (g_hi - g_lo) if g_hi > g_lo else None,
        ))
    phases.sort(key=lambda p: (-max(p.cpu_total_ns, p.gpu_total_ns), p.name))
    return Phases(phases=tuple(phases), window_ns=max(hi - lo, 0),
                  gpu_window_ns=max(g_hi - g_lo, 0))


def _launch_points(table: EventTable, tree: OpTree, gpu: GpuActivity, sel: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each selected activity's launch call as a point on the combined (thread, time)
    axis, with the activity's own start and end."""
    ok = sel & (gpu.node >= 0) & (gpu.launch_row >= 0)
    if not ok.any() or not len(tree):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    t0 = int(table.ts_ns.min())
    thread = tree.thread[gpu.node[ok]]
    point = (thread << _THREAD_SHIFT) + (table.ts_ns[gpu.launch_row[ok]] - t0)
    start = table.ts_ns[gpu.row[ok]]
    return point, start, start + table.dur_ns[gpu.row[ok]]


def _span_keys(table: EventTable, tree: OpTree, rows: np.ndarray) -> np.ndarray:
    """Each annotation span on the combined (thread, time) axis ([-1, -1] when its thread
    is unknown or the trace is too long for the axis)."""
    out = np.full((len(rows), 2), -1, dtype=np.int64)
    if not len(rows) or not len(tree):
        return out
    t0 = int(table.ts_ns.min())
    if int(table.ts_ns.max()) - t0 >= 1 << _THREAD_SHIFT:
        return out
    node_of_row = np.full(len(table), -1, dtype=np.int64)
    node_of_row[tree.row] = np.arange(len(tree), dtype=np.int64)
    nodes = node_of_row[rows]
    ok = nodes >= 0
    base = tree.thread[nodes[ok]] << _THREAD_SHIFT
    out[ok, 0] = base + (tree.start_ns[nodes[ok]] - t0)
    out[ok, 1] = base + (tree.end_ns[nodes[ok]] - t0)
    return out


def _inside(u: tuple[np.ndarray, np.ndarray], points: np.ndarray) -> np.ndarray:
    """Which points lie in the union ``u`` (half-open segments)."""
    s, e = u
    if not len(s):
        return np.zeros(len(points), dtype=bool)
    i = np.searchsorted(s, points, side="right") - 1
    return (i >= 0) & (points < e[np.maximum(i, 0)])
