"""One representative step as intervals on lanes: the data of a mini trace view.

The representative step is the ``ProfilerStep#`` span whose duration is nearest the
median (the earliest of equals); without steps it is the whole trace window. Its
intervals are the CPU ops and ``record_function`` ranges that start in the step
(one lane per thread, nested ranges one row deeper) and the GPU activities they
launched (one lane per device and stream; an activity linked to no op belongs to
the step when it starts in it). Every interval carries its hotspot class. A step
with more than ``max_intervals`` intervals keeps the longest ones and says how
many there were: the short ones are the ones a chart could not show anyway.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids, distinct
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.trace.table import EventTable

MAX_INTERVALS = 50_000


class TimelineLane(msgspec.Struct, frozen=True):
    """A CPU thread (``kind`` "cpu", with ``rows`` nesting levels) or a GPU stream ("gpu")."""

    label: str
    kind: str
    device: int  # -1 for a CPU lane
    stream: int  # -1 for a CPU lane
    tid: int  # -1 for a GPU lane
    rows: int  # nesting depth used on this lane (1 for GPU lanes)


class StepTimeline(msgspec.Struct, frozen=True):
    """Column ``i`` of the interval columns is one interval; ``offset_ns`` is from ``start_ns``."""

    source: str  # "ProfilerStep" or "window" (no steps: the whole trace)
    step: int | None  # the step number shown
    step_dur_ns: int  # its CPU-side duration
    start_ns: int  # the step's start, in the trace's clock
    window_ns: int  # from the start to the end of the last interval shown
    intervals_total: int  # intervals the step has
    max_intervals: int
    classes: tuple[str, ...]  # what ``klass`` indexes
    names: tuple[str, ...]  # what ``name`` indexes
    lanes: tuple[TimelineLane, ...]  # what ``lane`` indexes: CPU lanes first, then GPU
    lane: tuple[int, ...]
    depth: tuple[int, ...]  # nesting level within a CPU lane (0 outermost); 0 on GPU lanes
    offset_ns: tuple[int, ...]
    dur_ns: tuple[int, ...]
    name: tuple[int, ...]
    klass: tuple[int, ...] = msgspec.field(name="class")

    @property
    def downsampled(self) -> bool:
        return self.intervals_total > len(self.lane)


def representative_step(steps: Steps) -> tuple[int | None, int, int]:
    """(number, start, duration) of the step nearest the median, or the whole window."""
    if not steps.steps:
        return None, steps.start_ns, steps.end_ns - steps.start_ns
    best = min(steps.steps, key=lambda s: (abs(s.dur_ns - steps.median_ns), s.start_ns))
    return best.number, best.start_ns, best.dur_ns


def step_timeline(table: EventTable, tree: OpTree, gpu: GpuActivity, steps: Steps,
                  max_intervals: int = MAX_INTERVALS) -> StepTimeline:
    number, start, dur = representative_step(steps)
    end = start + dur
    # CPU: ranges starting in the step
    cpu_nodes = np.flatnonzero((tree.start_ns >= start) & (tree.start_ns < end)) if len(
        tree) else np.zeros(0, dtype=np.int64)
    depth_all = _depths(tree.parent)
    cpu_depth = depth_all[cpu_nodes]
    # GPU: activities launched by an op of the step, or unlinked and starting in it
    g_start = table.ts_ns[gpu.row]
    launched_in = np.zeros(len(gpu), dtype=bool)
    linked = gpu.node >= 0
    if linked.any():
        launch_start = tree.start_ns[gpu.node[linked]]
        launched_in[linked] = (launch_start >= start) & (launch_start < end)
    launched_in[~linked] = (g_start[~linked] >= start) & (g_start[~linked] < end)
    g_idx = np.flatnonzero(launched_in)
    g_rows = gpu.row[g_idx]

    # lanes: one per CPU thread (in thread order), then one per (device, stream)
    cpu_threads = distinct(tree.thread[cpu_nodes]) if len(cpu_nodes) else np.zeros(0, np.int64)
    lanes: list[TimelineLane] = []
    thread_lane = {}
    for t in cpu_threads.tolist():
        pid, tid = tree.threads[t]
        rows = int(cpu_depth[tree.thread[cpu_nodes] == t].max()) + 1
        label = table.thread_names.get((pid, tid)) or f"thread {tid}"
        thread_lane[t] = len(lanes)
        lanes.append(TimelineLane(f"CPU {label}", "cpu", -1, -1, int(tid), rows))
    dev, strm = table.device[g_rows], table.stream[g_rows]
    stream_lane = {}
    for d, s in sorted({(int(a), int(b)) for a, b in zip(dev.tolist(), strm.tolist(),
                                                          strict=True)}):
        stream_lane[(d, s)] = len(lanes)
        lanes.append(TimelineLane(f"GPU {d} stream {s}", "gpu", d, s, -1, 1))

    c_rows = tree.row[cpu_nodes]
    lane = np.concatenate([
        np.array([thread_lane[t] for t in tree.thread[cpu_nodes].tolist()], dtype=np.int64),
        np.array([stream_lane[(int(d), int(s))] for d, s in zip(dev.tolist(), strm.tolist(),
                                                                strict=True)], dtype=np.int64),
    ])
    depth = np.concatenate([cpu_depth, np.zeros(len(g_rows), dtype=np.int64)])
    rows = np.concatenate([c_rows, g_rows]).astype(np.int64)
    klass = np.concatenate([tree.klass[cpu_nodes].astype(np.int64),
                            gpu.klass[g_idx].astype(np.int64)])
    starts = table.ts_ns[rows]
    durs = table.dur_ns[rows]
    total = len(rows)
    keep = np.arange(total)
    if total > max_intervals:
        keep = np.sort(np.argsort(-durs, kind="stable")[:max_intervals])
    name_ids, name_index = dense_ids(table.name[rows[keep]])
    window = int((starts[keep] + durs[keep]).max()) - start if len(keep) else dur
    return StepTimeline(
        source=steps.source,
        step=number,
        step_dur_ns=dur,
        start_ns=start,
        window_ns=max(window, dur),
        intervals_total=total,
        max_intervals=max_intervals,
        classes=classify.CLASSES,
        names=tuple(table.names[int(i)] for i in name_ids.tolist()),
        lanes=tuple(lanes),
        lane=tuple(lane[keep].tolist()),
        depth=tuple(depth[keep].tolist()),
        offset_ns=tuple((starts[keep] - start).tolist()),
        dur_ns=tuple(durs[keep].tolist()),
        name=tuple(name_index.reshape(-1).tolist()),
        klass=tuple(klass[keep].tolist()),
    )


def _depths(parent: np.ndarray) -> np.ndarray:
    """Nesting level of every node (0 for roots), one vectorized hop per level."""
    depth = np.zeros(len(parent), dtype=np.int64)
    up = parent.copy()
    while (up >= 0).any():
        has = up >= 0
        depth[has] += 1
        up[has] = parent[up[has]]
    return depth
