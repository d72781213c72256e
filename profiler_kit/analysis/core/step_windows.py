"""Which step an event belongs to, and each step's window, as :mod:`steps` defines them.

A CPU event belongs to the step whose ``ProfilerStep#`` span holds its start; a GPU
activity to the step its launching call lies in (:func:`steps.step_of_activities`). A
step's window is its device-side span on GPU traces (from where the previous step ended
on the device, or its CPU start, to when the last activity launched in it ends, or its
CPU end) and its CPU span otherwise. Without steps the whole trace is one window.
"""

from __future__ import annotations

import numpy as np

from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.steps import Steps, cpu_steps, step_of_activities
from profiler_kit.trace.table import EventTable


def windows(steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every step's window (device side when the steps have one), in the
    order of ``steps.steps``; the whole trace window when there are no steps."""
    if not steps.steps:
        return (np.array([steps.start_ns], dtype=np.int64),
                np.array([steps.end_ns], dtype=np.int64))
    starts = np.array([s.device_start_ns for s in steps.steps], dtype=np.int64)
    ends = starts + np.array([s.device_dur_ns for s in steps.steps], dtype=np.int64)
    return starts, ends


def cpu_spans(steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every step's CPU span, in the order of ``steps.steps``."""
    if not steps.steps:
        return windows(steps)
    starts = np.array([s.start_ns for s in steps.steps], dtype=np.int64)
    return starts, starts + np.array([s.dur_ns for s in steps.steps], dtype=np.int64)


def activity_steps(table: EventTable, gpu: GpuActivity, steps: Steps) -> np.ndarray:
    """Index into ``steps.steps`` of the step each GPU activity was launched in (-1: none);
    all 0 without steps."""
    if not steps.steps:
        return np.zeros(len(gpu), dtype=np.int64)
    spans = cpu_steps(table)  # the same spans, in the same order, as steps.steps
    return step_of_activities(table, gpu, spans)


def row_steps(table: EventTable, rows: np.ndarray, steps: Steps) -> np.ndarray:
    """Index into ``steps.steps`` of the step whose CPU span holds each row's start (-1:
    none); all 0 without steps."""
    if not steps.steps:
        return np.zeros(len(rows), dtype=np.int64)
    starts, ends = cpu_spans(steps)
    order = np.argsort(starts, kind="stable")
    ts = table.ts_ns[rows]
    i = np.searchsorted(starts[order], ts, side="right") - 1
    inside = i >= 0
    cand = order[np.maximum(i, 0)]
    inside &= ts <= ends[cand]
    return np.where(inside, cand, -1)


def step_count(steps: Steps) -> int:
    """Steps the figures are divided by: 1 for a trace without ``ProfilerStep#`` spans."""
    return max(len(steps.steps), 1)
