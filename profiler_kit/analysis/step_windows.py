"""Which step an event belongs to: a CPU event by its start, a GPU activity by its launch.

A step is a CPU-side ``ProfilerStep#N`` span; a GPU activity belongs to the step whose
span holds the runtime call that launched it (linked by correlation id), or its own
start when no call is linked. Without steps the whole trace is one window.
"""

from __future__ import annotations

import numpy as np

from profiler_kit.analysis.attribution import GpuActivity
from profiler_kit.analysis.steps import Steps
from profiler_kit.trace.table import EventTable


def bounds(steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every step (the whole window when there are no steps), by start."""
    if steps.steps:
        ordered = sorted(steps.steps, key=lambda s: s.start_ns)
        starts = np.array([s.start_ns for s in ordered], dtype=np.int64)
        ends = np.array([s.start_ns + s.dur_ns for s in ordered], dtype=np.int64)
        return starts, ends
    return (np.array([steps.start_ns], dtype=np.int64),
            np.array([steps.end_ns], dtype=np.int64))


def step_index(ts_ns: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the step whose span ``[start, end]`` holds each time; -1 for none."""
    i = np.searchsorted(starts, ts_ns, side="right") - 1
    inside = i >= 0
    inside[inside] = ts_ns[inside] <= ends[i[inside]]
    return np.where(inside, i, -1)


def launch_ts(table: EventTable, gpu: GpuActivity) -> np.ndarray:
    """When each GPU activity was launched: its runtime call's start, else its own start."""
    own = table.ts_ns[gpu.row]
    linked = gpu.launch_row >= 0
    return np.where(linked, table.ts_ns[np.maximum(gpu.launch_row, 0)], own)


def gpu_steps(table: EventTable, gpu: GpuActivity, steps: Steps) -> np.ndarray:
    """Step index of every GPU activity (by its launch); -1 outside every step."""
    starts, ends = bounds(steps)
    return step_index(launch_ts(table, gpu), starts, ends)


def cpu_steps(table: EventTable, rows: np.ndarray, steps: Steps) -> np.ndarray:
    """Step index of every given CPU-side row (by its start); -1 outside every step."""
    starts, ends = bounds(steps)
    return step_index(table.ts_ns[rows], starts, ends)


def step_count(steps: Steps) -> int:
    """Steps the figures are divided by: 1 for a trace without ``ProfilerStep#`` spans."""
    return max(len(steps.steps), 1)
