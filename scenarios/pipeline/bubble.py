"""The pipeline bubble: how much of a step one rank spends idle, from that rank's trace.

Definition (per rank, over the profiled steps, i.e. the ``ProfilerStep#`` spans, or
the whole trace when it has none):

- With GPU activity in the trace: the share of the step time during which the
  rank's GPU runs no kernel, copy or set (the union of those activities, clipped to
  the steps; GPU-side ``record_function`` spans are annotations, not work). Time in
  P2P send/recv kernels (a stage waiting for its neighbour's activations or
  gradients) is busy time, and is also given on its own (``p2p_ns``).
- CPU only: the share of the step time during which the rank has communication
  outstanding (``gloo:recv``/``gloo:send``/``nccl:*`` spans, ``c10d::*`` ops:
  the communication class of the analysis layer) and runs no computation op
  (every other CPU op). That is the time it waits for a neighbour's activations
  or gradients (pipelines) or for the gradient all-reduce (DDP's exposed
  communication); Python overhead between ops is not counted as waiting.

No torch import: it reads the event table (profiler_kit.trace) with the
analysis layer's step, interval and classification helpers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from profiler_kit.analysis.core import intervals
from profiler_kit.analysis.core.classify import COMMUNICATION, classify_op
from profiler_kit.analysis.core.steps import analyze_steps
from profiler_kit.trace.table import Cat, EventTable

CPU_BASIS = "cpu: communication outstanding, no computation"
GPU_BASIS = "gpu: no kernel, copy or set running"
GPU_WORK = (Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET)  # not gpu_user_annotation spans
_P2P = re.compile(r"sendrecv|send_recv|nccl(?:dev)?kernel_(?:send|recv)|rccl.*(?:send|recv)",
                  re.IGNORECASE)


@dataclass(frozen=True)
class RankBubble:
    """One rank's idle share over its profiled steps."""

    path: str
    rank: int | None
    steps: int  # ProfilerStep spans found (0: the whole trace window was used)
    step_ns: int  # wall time of those steps
    busy_ns: int  # computation (CPU ops or GPU activity) within the steps
    idle_ns: int  # time counted as bubble (see the module docstring)
    idle_share: float | None  # idle_ns / step_ns; None for an empty window
    basis: str  # CPU_BASIS or GPU_BASIS
    p2p_ns: int = 0  # GPU time in P2P send/recv kernels within the steps (part of busy_ns)


def _segments(table: EventTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = table.ts_ns[rows]
    return intervals.union(starts, starts + table.dur_ns[rows])


def _clip(seg: tuple[np.ndarray, np.ndarray],
          window: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The part of ``seg`` inside ``window`` (both disjoint unions), as a union."""
    s, e = seg
    ws, we = window
    if not len(s) or not len(ws):
        return s[:0], e[:0]
    starts, ends = [], []
    for a, b in zip(ws.tolist(), we.tolist(), strict=True):
        lo, hi = np.maximum(s, a), np.minimum(e, b)
        keep = hi > lo
        starts.append(lo[keep])
        ends.append(hi[keep])
    return intervals.union(np.concatenate(starts), np.concatenate(ends))


def _length(seg: tuple[np.ndarray, np.ndarray]) -> int:
    return int((seg[1] - seg[0]).sum())


def rank_bubble(table: EventTable) -> RankBubble:
    """The bubble of the rank that wrote ``table``."""
    steps = analyze_steps(table)
    if steps.steps:
        starts = np.array([s.start_ns for s in steps.steps], dtype=np.int64)
        ends = starts + np.array([s.dur_ns for s in steps.steps], dtype=np.int64)
    else:
        starts = np.array([steps.start_ns], dtype=np.int64)
        ends = np.array([steps.end_ns], dtype=np.int64)
    window = intervals.union(starts, ends)
    step_ns = _length(window)
    gpu = np.flatnonzero(np.isin(table.cat, np.array([int(c) for c in GPU_WORK], np.int8)))
    p2p_ns = 0
    if len(gpu):
        busy = _clip(_segments(table, gpu), window)
        busy_ns = _length(busy)
        idle_ns = step_ns - busy_ns
        basis = GPU_BASIS
        p2p_ids = np.array([i for i, n in enumerate(table.names) if _P2P.search(n[:200])],
                           dtype=np.int64)
        p2p = gpu[np.isin(table.name[gpu], p2p_ids)]
        p2p_ns = _length(_clip(_segments(table, p2p), window))
    else:
        comm_names = np.array([classify_op(n) == COMMUNICATION for n in table.names], dtype=bool)
        is_comm = comm_names[table.name] if len(table) else np.zeros(0, dtype=bool)
        cpu_side = np.isin(table.cat, np.array([int(Cat.CPU_OP), int(Cat.USER_ANNOTATION)],
                                               np.int8))
        comm = _clip(_segments(table, np.flatnonzero(cpu_side & is_comm)), window)
        compute = _clip(_segments(table, np.flatnonzero((table.cat == Cat.CPU_OP) & ~is_comm)),
                        window)
        busy_ns = _length(compute)
        idle_ns = _length(comm) - intervals.intersection_length(comm, compute)
        basis = CPU_BASIS
    share = idle_ns / step_ns if step_ns > 0 else None
    return RankBubble(path=table.meta.path, rank=table.meta.rank, steps=len(steps.steps),
                      step_ns=step_ns, busy_ns=busy_ns, idle_ns=idle_ns, idle_share=share,
                      basis=basis, p2p_ns=p2p_ns)


def trace_bubbles(paths: list[str | Path]) -> list[RankBubble]:
    """The bubble of every trace (one per rank), in the order given."""
    from profiler_kit.trace.loader import load

    return [rank_bubble(load(p)) for p in paths]
