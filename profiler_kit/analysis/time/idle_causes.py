"""GPU idle time attributed to what the launching CPU thread was doing while the GPU waited.

HTA-style idle causes (``launches``) say *that* the GPU waited on the host; this says
*on what*. Each idle gap (per device: between its busy periods; per stream: between
consecutive activities) ends with an activity launched by a runtime call on some CPU
thread. While that call had not started yet, the GPU waited on the thread: each instant
of that part of the gap is attributed to the most specific cause open on the thread,
in this order of precedence:

1. ``dataloader``: inside ``enumerate(DataLoader)#...`` (fetching the next batch);
2. ``synchronization``: inside a call that waits for the GPU (``aten::item``,
   ``aten::_local_scalar_dense``, ``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
   ``cudaEventSynchronize``, a synchronous ``cudaMemcpy``, and their HIP names);
3. ``optimizer``: inside ``Optimizer.step#...`` or ``Optimizer.zero_grad#...``;
4. ``cpu_op``: inside a CPU op, by the outermost op's name;
5. ``phase``: inside a ``record_function`` range only (not ``ProfilerStep#``);
6. ``python``: inside no traced range (Python or untraced code).

The rest of the gap, after the launch call started, is ``queued``: the work was already
handed to the runtime (launch latency, or a wait on another stream or an event). A gap
whose closing activity has no launch call is ``unlinked``. So the causes of a device or
stream add up exactly to its idle time.

A gap that began while the launching thread was blocked in a synchronizing call is also
counted as *after a synchronization*: the queue ran dry because the CPU waited for the
GPU, whatever the thread did next.

Of the queued part, the time inside the launch call itself (up to ``LAUNCH_CALL_CAP_NS``
per gap) is the launch cost (the launch-bound rule); the host part spent in model code
(ops, ranges, Python) is also given by the outermost ``record_function`` range open
(the host-bound rule's regions).
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core.arrays import dense_ids, distinct
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree, thread_keys_for
from profiler_kit.analysis.time.launches import activities
from profiler_kit.trace.table import Cat, EventTable

DATALOADER = "dataloader"
SYNCHRONIZATION = "synchronization"
OPTIMIZER = "optimizer"
CPU_OP = "cpu_op"
PHASE = "phase"
PYTHON = "python"
QUEUED = "queued"
UNLINKED = "unlinked"
# host-side kinds, lowest precedence first (the index is the precedence)
HOST_KINDS = (PYTHON, PHASE, CPU_OP, OPTIMIZER, SYNCHRONIZATION, DATALOADER)
KINDS = (*reversed(HOST_KINDS), QUEUED, UNLINKED)
# what the GPU idled on, completing "GPU idle while ..."
KIND_WORDS = {
    DATALOADER: "the CPU was in the DataLoader",
    SYNCHRONIZATION: "the CPU waited in a synchronizing call",
    OPTIMIZER: "the CPU ran the optimizer",
    CPU_OP: "the CPU ran ops",
    PHASE: "the CPU was in record_function ranges outside ops",
    PYTHON: "the CPU ran Python or untraced code",
    QUEUED: "its next work was already queued (launch latency, event or stream waits)",
    UNLINKED: "its next work has no launch call in the trace",
}
# a kind in a few words, where the span's name is not given
KIND_LABELS = {
    DATALOADER: "DataLoader", SYNCHRONIZATION: "synchronization", OPTIMIZER: "optimizer",
    CPU_OP: "CPU ops", PHASE: "ranges", PYTHON: "Python/untraced", QUEUED: "already queued",
    UNLINKED: "unlinked",
}
# the kinds in which the thread was issuing work op by op: a short gap spent in them is
# launch overhead (the launch-bound rule)
LAUNCHING_KINDS = (CPU_OP, PHASE, PYTHON, OPTIMIZER)
LAUNCH_GAP_NS = 1_000_000  # a gap at most this long counts as launch overhead
# the kinds in which the thread ran the model's own code (ops, ranges, Python): the
# host-bound rule (the DataLoader, synchronizations and the optimizer have their own)
HOST_CODE_KINDS = (CPU_OP, PHASE, PYTHON)
# a launch call counts as launch overhead up to this long: a longer one is loading a module
# (a first launch) or blocked on a full queue
LAUNCH_CALL_CAP_NS = 100_000

_DATALOADER = re.compile(r"^enumerate\(DataLoader\)|DataLoader.*__next__")
_OPTIMIZER = re.compile(r"^Optimizer\.(step|zero_grad)#")
_PROFILER_STEP = re.compile(r"^ProfilerStep#")
SYNC_OPS = frozenset({"aten::item", "aten::_local_scalar_dense"})
SYNC_RUNTIME = frozenset({
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
    "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize", "hipMemcpy",
})
# a gap's label when nothing more specific names it
_NO_NAME = ""


class IdleCause(msgspec.Struct, frozen=True):
    """Idle time attributed to one cause: a kind and, where it has one, a span name."""

    kind: str  # one of KINDS
    name: str  # the span's name ("aten::item", "Optimizer.step#SGD.step"); "" for none
    ns: int


class IdleCauses(msgspec.Struct, frozen=True):
    """The idle time of one device (``stream`` None) or one stream, by cause."""

    device: int
    stream: int | None
    idle_ns: int
    gaps: int
    causes: tuple[IdleCause, ...]  # largest first; their ns add up to idle_ns
    # idle in gaps that began while the thread waited in a synchronizing call (the queue
    # ran dry because the CPU waited), less their DataLoader part (the DataLoader's own)
    after_sync_ns: int
    after_sync_gaps: int
    # host-side idle in gaps of at most LAUNCH_GAP_NS spent in LAUNCHING_KINDS
    launch_gap_ns: int
    # of the queued time: the part inside the launch call of the activity that ended the
    # gap, at most LAUNCH_CALL_CAP_NS a gap (the GPU waited for the launch itself)
    in_launch_call_ns: int = 0
    # idle while the thread ran model code (HOST_CODE_KINDS) by the outermost
    # record_function range open (name "": none), largest first
    regions: tuple[IdleCause, ...] = ()

    def kind_ns(self, kind: str) -> int:
        return sum(c.ns for c in self.causes if c.kind == kind)


class IdleAttribution(msgspec.Struct, frozen=True):
    devices: tuple[IdleCauses, ...]
    streams: tuple[IdleCauses, ...]

    def kind_ns(self, kind: str) -> int:
        """Summed over devices."""
        return sum(d.kind_ns(kind) for d in self.devices)


class _Gaps(msgspec.Struct):
    start: np.ndarray  # int64: the GPU went idle
    end: np.ndarray  # int64: the next activity started
    launch_start: np.ndarray  # int64: its launch call started (-1: none)
    launch_end: np.ndarray  # int64: its launch call ended (-1: none)
    thread: np.ndarray  # int64: thread key of that call (-1: none or no CPU ranges)


def attribute_idle(table: EventTable, tree: OpTree, gpu: GpuActivity,
                   mask: np.ndarray | None = None, lead_in_from: int | None = None
                   ) -> IdleAttribution:
    """Idle causes per device and stream of the activities in ``mask`` (all by default).

    With ``lead_in_from`` (the steps' start), a device's idle also counts the lead-in from
    there to its first activity, so it covers the steps' device-side time: the DataLoader
    that opens the first step idles the GPU as much as the ones between steps."""
    acts = activities(table, gpu, mask)
    launch, start, end, device, stream, linked, l_start = (
        acts.launch, acts.start, acts.end, acts.device, acts.stream, acts.linked,
        acts.launch_start)
    l_end = np.where(linked, l_start + table.dur_ns[np.maximum(launch, 0)], -1)
    thread = np.full(len(start), -1, dtype=np.int64)
    if linked.any():
        thread[linked] = thread_keys_for(tree, table.pid[launch[linked]],
                                         table.tid[launch[linked]])
    spans = _ThreadSpans(table, tree)
    devices, streams = [], []
    for dev in distinct(device).tolist():
        on_dev = device == dev
        on = np.flatnonzero(on_dev)
        gaps = _gaps(start[on], end[on], l_start[on], l_end[on], thread[on], union=True,
                     lead_in_from=lead_in_from)
        devices.append(_causes(int(dev), None, gaps, spans))
        for st in distinct(stream[on_dev]).tolist():
            on = np.flatnonzero(on_dev & (stream == st))
            gaps = _gaps(start[on], end[on], l_start[on], l_end[on], thread[on], union=False)
            streams.append(_causes(int(dev), int(st), gaps, spans))
    return IdleAttribution(devices=tuple(devices), streams=tuple(streams))


def _gaps(start: np.ndarray, end: np.ndarray, l_start: np.ndarray, l_end: np.ndarray,
          thread: np.ndarray, union: bool, lead_in_from: int | None = None) -> _Gaps:
    """Positive gaps between activities in start order, as :mod:`launches` finds them:
    with ``union`` from the end of everything before, else from the previous activity;
    and the lead-in from ``lead_in_from`` to the first activity, when given."""
    order = np.argsort(start, kind="stable")
    s, e, ls, le, th = start[order], end[order], l_start[order], l_end[order], thread[order]
    prev_end = np.maximum.accumulate(e)[:-1] if union else e[:-1]
    if lead_in_from is not None and len(s):
        prev_end = np.concatenate([[min(lead_in_from, int(s[0]))], prev_end])
        s, ls, le, th = np.concatenate([[s[0]], s]), np.concatenate([[ls[0]], ls]), \
            np.concatenate([[le[0]], le]), np.concatenate([[th[0]], th])
    keep = np.flatnonzero(s[1:] > prev_end)
    return _Gaps(start=prev_end[keep], end=s[1:][keep], launch_start=ls[1:][keep],
                 launch_end=le[1:][keep], thread=th[1:][keep])


class _Level(msgspec.Struct):
    start: np.ndarray  # int64, sorted, non-overlapping
    end: np.ndarray
    name: np.ndarray  # int64 index into table.names (-1: no name)


class _ThreadSpans:
    """Per thread, the outermost spans of each host kind, built on first use."""

    def __init__(self, table: EventTable, tree: OpTree):
        self.table = table
        self.tree = tree
        self._cache: dict[int, list[_Level]] = {}
        names = table.names
        self._is_loader = np.array([bool(_DATALOADER.search(n)) for n in names], dtype=bool)
        self._is_optim = np.array([bool(_OPTIMIZER.match(n)) for n in names], dtype=bool)
        self._is_step = np.array([bool(_PROFILER_STEP.match(n)) for n in names], dtype=bool)
        self._is_sync_op = np.array([n in SYNC_OPS for n in names], dtype=bool)
        sync_rt = np.array([n in SYNC_RUNTIME for n in names], dtype=bool)
        rt = table.rows(Cat.RUNTIME)
        rt = rt[sync_rt[table.name[rt]]] if len(rt) else rt
        self._sync_rt_rows = rt
        self._sync_rt_thread = thread_keys_for(tree, table.pid[rt], table.tid[rt]) \
            if len(rt) else np.zeros(0, dtype=np.int64)

    def levels(self, key: int) -> list[_Level]:
        """One level per host kind, in HOST_KINDS order (python's is empty)."""
        if key not in self._cache:
            self._cache[key] = self._build(key)
        return self._cache[key]

    def _build(self, key: int) -> list[_Level]:
        table, tree = self.table, self.tree
        lo, hi = int(tree.thread_bounds[key]), int(tree.thread_bounds[key + 1])
        rows = tree.row[lo:hi]
        start, end = tree.start_ns[lo:hi], tree.end_ns[lo:hi]
        name = table.name[rows].astype(np.int64)
        cat = table.cat[rows]
        loader = self._is_loader[name]
        optim = self._is_optim[name] & ~loader
        op = (cat == Cat.CPU_OP) & ~loader & ~optim
        phase = (cat == Cat.USER_ANNOTATION) & ~loader & ~optim & ~self._is_step[name]
        sync = self._is_sync_op[name]
        rt = self._sync_rt_rows[self._sync_rt_thread == key]
        s_start = np.concatenate([start[sync], table.ts_ns[rt]])
        s_end = np.concatenate([end[sync], table.ts_ns[rt] + table.dur_ns[rt]])
        s_name = np.concatenate([name[sync], table.name[rt].astype(np.int64)])
        empty = np.zeros(0, dtype=np.int64)
        by_kind = {
            PYTHON: (empty, empty, empty),
            PHASE: (start[phase], end[phase], name[phase]),
            CPU_OP: (start[op], end[op], name[op]),
            OPTIMIZER: (start[optim], end[optim], name[optim]),
            SYNCHRONIZATION: (s_start, s_end, s_name),
            DATALOADER: (start[loader], end[loader], name[loader]),
        }
        return [_outermost(*by_kind[k]) for k in HOST_KINDS]


def _outermost(start: np.ndarray, end: np.ndarray, name: np.ndarray) -> _Level:
    """The spans not inside another of the same set (spans on one thread nest)."""
    if not len(start):
        return _Level(start, end, name)
    order = np.lexsort((-end, start))
    start, end, name = start[order], end[order], name[order]
    reach = np.maximum.accumulate(end)
    keep = np.ones(len(start), dtype=bool)
    keep[1:] = end[1:] > reach[:-1]
    # a span that starts inside the previous reach and ends after it overlaps without
    # nesting (clock rounding): clip its start so the level stays non-overlapping
    start = start.copy()
    start[1:] = np.where(keep[1:], np.maximum(start[1:], reach[:-1]), start[1:])
    return _Level(start[keep], end[keep], name[keep])


def _inside(level: _Level, points: np.ndarray) -> np.ndarray:
    """Index of the level's span holding each point (-1: none)."""
    if not len(level.start):
        return np.full(len(points), -1, dtype=np.int64)
    i = np.searchsorted(level.start, points, side="right") - 1
    ok = (i >= 0) & (points < level.end[np.maximum(i, 0)])
    return np.where(ok, i, -1)


def _causes(device: int, stream: int | None, gaps: _Gaps, spans: _ThreadSpans
            ) -> IdleCauses:
    totals: dict[tuple[str, int], int] = {}
    regions: dict[int, int] = {}

    def add(kind: str, name: int, ns: int) -> None:
        if ns > 0:
            totals[(kind, name)] = totals.get((kind, name), 0) + ns

    linked = gaps.launch_start >= 0
    host_end = np.where(linked, np.clip(gaps.launch_start, gaps.start, gaps.end), gaps.start)
    add(UNLINKED, -1, int((gaps.end - gaps.start)[~linked].sum()))
    add(QUEUED, -1, int((gaps.end - host_end)[linked].sum()))
    after_sync = np.zeros(len(gaps.start), dtype=bool)
    widths = gaps.end - gaps.start
    host = np.flatnonzero(linked & (host_end > gaps.start))
    unknown = host[gaps.thread[host] < 0]  # launched from a thread with no CPU ranges
    add(PYTHON, -1, int((host_end - gaps.start)[unknown].sum()))
    regions[-1] = int((host_end - gaps.start)[unknown].sum())
    call_start = np.maximum(gaps.launch_start, gaps.start)
    call_end = np.minimum(np.minimum(gaps.launch_end, gaps.end), call_start + LAUNCH_CALL_CAP_NS)
    in_call = int(np.maximum(call_end - call_start, 0)[linked].sum())
    short = widths <= LAUNCH_GAP_NS
    launch_gap_ns = int((host_end - gaps.start)[unknown[short[unknown]]].sum())
    loader_after_sync = 0
    for key in distinct(gaps.thread[host]).tolist():
        if key < 0:
            continue
        mine = host[gaps.thread[host] == key]
        levels = spans.levels(key)
        # the host part of each gap, cut once; the brief gaps and those after a
        # synchronization are subsets of these gaps, so of their segments
        segs = _segments(levels, gaps.start[mine], host_end[mine])
        for (kind, name), ns in _attribute(segs).items():
            add(kind, name, ns)
        if stream is None:
            for name, ns in _regions(levels, segs).items():
                regions[name] = regions.get(name, 0) + ns
        launch_gap_ns += sum(ns for (kind, _), ns in _attribute(segs, short[mine]).items()
                             if kind in LAUNCHING_KINDS)
        sync = levels[HOST_KINDS.index(SYNCHRONIZATION)]
        # the GPU went idle while the thread was blocked in the call (started before it)
        held = _inside(sync, gaps.start[mine] - 1) >= 0
        after_sync[mine[held]] = True
        loader_after_sync += sum(ns for (kind, _), ns in _attribute(segs, held).items()
                                 if kind == DATALOADER)
    names = spans.table.names
    causes = sorted(
        (IdleCause(kind, names[n] if n >= 0 else _NO_NAME, ns)
         for (kind, n), ns in totals.items()),
        key=lambda c: (-c.ns, KINDS.index(c.kind), c.name),
    )
    by_region = sorted((IdleCause(PHASE if n >= 0 else PYTHON, names[n] if n >= 0 else _NO_NAME,
                                  ns) for n, ns in regions.items() if ns > 0),
                       key=lambda c: (-c.ns, c.name))
    return IdleCauses(
        device=device, stream=stream, idle_ns=int(widths.sum()), gaps=int(len(widths)),
        causes=tuple(causes),
        after_sync_ns=int(widths[after_sync].sum()) - loader_after_sync,
        after_sync_gaps=int(after_sync.sum()), launch_gap_ns=launch_gap_ns,
        in_launch_call_ns=in_call, regions=tuple(by_region),
    )


class _Segments(msgspec.Struct):
    """Intervals cut where any level's span starts or ends (see :func:`_segments`)."""

    left: np.ndarray  # int64: each piece's start
    width: np.ndarray  # int64
    kind: np.ndarray  # int64: index into HOST_KINDS of the most specific level open
    name: np.ndarray  # int64: that span's name index (-1: none)
    interval: np.ndarray  # int64: index of the interval the piece is of


def _attribute(segs: _Segments, of: np.ndarray | None = None) -> dict[tuple[str, int], int]:
    """Time of the intervals (``of``: those where it is True; all by default) by the most
    specific level open, keyed by (kind, name index)."""
    width, kind, name = segs.width, segs.kind, segs.name
    if of is not None:
        pick = of[segs.interval]
        width, kind, name = width[pick], kind[pick], name[pick]
    out: dict[tuple[str, int], int] = {}
    if not len(width):
        return out
    key = kind * (int(name.max()) + 2) + (name + 1)
    uniq, inverse = dense_ids(key)
    sums = np.bincount(inverse.reshape(-1), weights=width, minlength=len(uniq))
    base = int(name.max()) + 2
    for u, ns in zip(uniq.tolist(), sums.tolist(), strict=True):
        out[(HOST_KINDS[u // base], u % base - 1)] = int(round(ns))
    return out


def _regions(levels: list[_Level], segs: _Segments) -> dict[int, int]:
    """Time of the intervals spent in HOST_CODE_KINDS, by the outermost ``record_function``
    range open (name index; -1: none)."""
    code = np.isin(segs.kind, [HOST_KINDS.index(k) for k in HOST_CODE_KINDS])
    left, width = segs.left[code], segs.width[code]
    if not len(left):
        return {}
    phase = levels[HOST_KINDS.index(PHASE)]
    i = _inside(phase, left)
    region = np.where(i >= 0, phase.name[np.maximum(i, 0)], -1) if len(phase.name) else i
    uniq, inverse = dense_ids(region)
    sums = np.bincount(inverse.reshape(-1), weights=width, minlength=len(uniq))
    return {int(u): int(round(ns)) for u, ns in zip(uniq.tolist(), sums.tolist(), strict=True)}


def _segments(levels: list[_Level], lo: np.ndarray, hi: np.ndarray) -> _Segments:
    """The intervals [lo, hi) (non-overlapping) cut where any level's span starts or ends:
    each piece's start, width, kind (index into HOST_KINDS of the most specific level
    open), that span's name index (-1: none) and its interval's index in ``lo``. A subset
    of the intervals is cut into the same pieces: the others' ends fall outside it."""
    empty = np.zeros(0, dtype=np.int64)
    if not len(lo):
        return _Segments(empty, empty, empty, empty, empty)
    cuts = [lo, hi]
    for lv in levels:
        cuts += [lv.start, lv.end]
    bounds = distinct(np.concatenate(cuts))
    left, width = bounds[:-1], np.diff(bounds)
    order = np.argsort(lo, kind="stable")
    s_lo, s_hi = lo[order], hi[order]
    g = np.searchsorted(s_lo, left, side="right") - 1
    inside = (g >= 0) & (left < s_hi[np.maximum(g, 0)])
    left, width, interval = left[inside], width[inside], order[g[inside]]
    kind = np.zeros(len(left), dtype=np.int64)  # python
    name = np.full(len(left), -1, dtype=np.int64)
    for k, lv in enumerate(levels):
        i = _inside(lv, left)
        hit = i >= 0
        kind[hit] = k
        name[hit] = lv.name[i[hit]]
    return _Segments(left, width, kind, name, interval)
