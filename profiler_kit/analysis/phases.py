"""Phases: time per ``record_function`` annotation (forward, backward, optimizer, ...).

CPU time is the span of the annotation on its thread; GPU time is the span of the
matching ``gpu_user_annotation`` when the trace has one. ``ProfilerStep#N`` spans
are steps, not phases, and are left to :mod:`profiler_kit.analysis.steps`.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.trace.table import Cat, EventTable

_STEP = re.compile(r"^ProfilerStep#\d+$")


class Phase(msgspec.Struct, frozen=True):
    name: str
    count: int
    cpu_total_ns: int
    gpu_total_ns: int  # 0 when the trace has no GPU-side span for it
    share_of_window: float | None  # cpu_total / the steps (or trace) window


class Phases(msgspec.Struct, frozen=True):
    phases: tuple[Phase, ...]  # largest CPU time first


def _totals(table: EventTable, cat: Cat) -> dict[int, tuple[int, int]]:
    rows = table.rows(cat)
    if not len(rows):
        return {}
    uniq, inverse = np.unique(table.name[rows], return_inverse=True)
    inverse = inverse.reshape(-1)
    total = np.rint(np.bincount(inverse, weights=table.dur_ns[rows])).astype(np.int64)
    count = np.bincount(inverse)
    return {int(u): (int(c), int(t)) for u, c, t in zip(uniq, count, total, strict=True)}


def analyze_phases(table: EventTable, window_ns: int) -> Phases:
    """Count and total time of every annotation name, CPU and GPU side."""
    cpu = _totals(table, Cat.USER_ANNOTATION)
    gpu = _totals(table, Cat.GPU_USER_ANNOTATION)
    phases = []
    for name_id in set(cpu) | set(gpu):
        name = table.names[name_id]
        if _STEP.match(name):
            continue
        count, cpu_ns = cpu.get(name_id, (0, 0))
        gcount, gpu_ns = gpu.get(name_id, (0, 0))
        phases.append(
            Phase(
                name=name,
                count=count or gcount,
                cpu_total_ns=cpu_ns,
                gpu_total_ns=gpu_ns,
                share_of_window=cpu_ns / window_ns if window_ns > 0 else None,
            )
        )
    phases.sort(key=lambda p: (-max(p.cpu_total_ns, p.gpu_total_ns), p.name))
    return Phases(phases=tuple(phases))
