"""The replay graph of one trace: the work it recorded and the dependencies between it,
with every wait modeled instead of copied.

Work keeps its recorded duration: CPU events (their spans and the gaps between them on
their thread), kernels, memcpys and memsets. Waits are what the replay recomputes:

- a GPU activity starts at the latest of its launch call's start plus the launch latency,
  the end of the previous activity on its stream plus the inter-kernel gap, and the end
  of the activity it waits for through a recorded ``cudaStreamWaitEvent``;
- a blocking call (``critical_path.BLOCKING_CALLS`` but ``cudaEventQuery``, which polls)
  ends at the later of its start plus its own cost and the end of the GPU work it waits
  for plus the wake-up latency.

Launch latency, gap and wake-up are modeled: each is the median of that kind on its
device (and stream, where it has enough cases) over the cases where that dependency
was the binding one in the recording (Holistic Trace Analysis' rule: the launch binds
when the stream had nothing left to run when it was launched, else the previous
activity does). An activity that starts much later than all its known dependencies
allow waits for something the trace does not show (another rank, a stream dependency
not recorded, a launch not linked): that wait is kept as a fixed delay, and counted and
named in :attr:`Graph.missing`.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids, distinct, median, member, percentile
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.steps import cpu_steps, step_of_activities
from profiler_kit.analysis.time.copies import PAGEABLE
from profiler_kit.analysis.time.critical_path import (
    BLOCKING_CALLS,
    CONTEXT_SYNC,
    EVENT_SYNC,
    STREAM_SYNC,
    _runtime_rows,
    recorded_waits,
)
from profiler_kit.trace.table import Cat, EventTable

# Blocking calls that poll and return at once: never waits.
POLLING = frozenset({"cudaEventQuery", "hipEventQuery"})
DEVICE_SYNCS = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize"})
MEMCPY_CALLS = frozenset({"cudaMemcpy", "cudaMemcpyAsync", "hipMemcpy", "hipMemcpyAsync",
                          "hipMemcpyWithStream"})
ASYNC_MEMCPY_CALLS = frozenset({"cudaMemcpyAsync", "hipMemcpyAsync"})
# CPU-side categories the replay moves (what runs on a host thread; the profiler's own
# events, its overhead and its span over the whole trace, are left out, and of the other
# events only the ProfilerStep spans some traces file there)
CPU_CATS = (Cat.CPU_OP, Cat.RUNTIME, Cat.USER_ANNOTATION, Cat.PYTHON_FUNCTION)
# A wait is late (a dependency the trace does not show) when it exceeds the modeled one
# by more than this, and by more than LATE_FACTOR times the modeled wait.
LATE_NS = 20_000
LATE_FACTOR = 4
LATE_CAP_NS = 25_000
BURST_GAP_NS = 500_000  # idle time on a thread that ends a burst of its work
JOIN_NS = 2_000_000  # a waker's event ending this soon after the burst waited for it
MAX_BURSTS = 10_000  # a thread with more bursts than this is not followed
LONG_LAUNCH = 10  # a launch call this many times its device's median waited
QUEUE_STEADY = 0.95  # the long calls' queue depths within this of their median
QUEUED_BEFORE = -(1 << 61)  # issue key of work queued before the trace began
MIN_CASES = 5  # binding cases a stream needs for its own median (else its device's)
# a call returning this much before the GPU work it would wait for ends did not wait
RETURN_SLACK_NS = 2_000

# missing dependencies, by what the trace lacks
OTHER_RANKS = "other_ranks"
NO_LAUNCH = "no_launch"
CROSS_STREAM = "cross_stream"
GPU_SHARED = "gpu_shared"
LATE_RETURN = "late_return"
UNEXPLAINED = "unexplained"


class MissingDependency(msgspec.Struct, frozen=True):
    """Waits the graph cannot explain, of one kind: kept in the replay as fixed delays
    (:func:`profiler_kit.render.wording.whatif_notes.lacks` says what each kind is)."""

    kind: str  # other_ranks, no_launch, cross_stream, gpu_shared, late_return, unexplained
    events: int
    wait_ns: int  # summed over the events


class Model(msgspec.Struct, frozen=True):
    """The modeled waits (medians of the binding cases), for the report."""

    launch_latency_ns: int  # median over the devices' launch-bound activities
    gap_ns: int  # median over the stream-bound activities
    wake_ns: int  # median over the blocking calls that waited
    launch_cases: int
    gap_cases: int
    wake_cases: int


class Graph:
    """Arrays of one trace's replay graph. GPU activities are indexed in replay order (the
    order they enter their streams); blocking calls and CPU events have their own index.
    Not encoded: the :class:`~profiler_kit.analysis.whatif.replay.Replay` is."""

    def __init__(self) -> None:
        self.threads: list[tuple[int, int]] = []
        self.streams: list[tuple[int, int]] = []
        self._lists: dict[str, list[Any]] = {}

    @property
    def call_dur(self) -> np.ndarray:
        """Each activity's launch call, from its start to its end (from 0 where none)."""
        return self.call_end - np.where(self.launch_ts >= 0, self.launch_ts, 0)

    def listed(self, name: str) -> list[Any]:
        """The array ``name`` as a Python list, made once: every replay of the graph
        walks it item by item, and ``tolist`` of ten arrays of 10,000 items is not free."""
        found = self._lists.get(name)
        if found is None:
            found = self._lists[name] = getattr(self, name).tolist()
        return found

    # filled by build(); listed for readers
    act: np.ndarray  # index into GpuActivity
    row: np.ndarray  # table row
    start: np.ndarray  # recorded start
    dur: np.ndarray
    stream: np.ndarray  # dense (device, stream) id
    device: np.ndarray
    klass: np.ndarray
    thread: np.ndarray  # dense thread id of the launch call (-1: none)
    launch_ts: np.ndarray  # the launch call's start (-1: none)
    launch_row: np.ndarray  # the launch call's row, or the op's (-1)
    key: np.ndarray  # when it entered its stream (the replay visits activities by it)
    latency: np.ndarray  # modeled launch latency
    gap: np.ndarray  # modeled gap after the stream's previous activity
    wait: np.ndarray  # activity index it waits for across streams (-1)
    delay: np.ndarray  # fixed delay: the recorded late wait (0 unless late)
    sync_row: np.ndarray
    sync_name: list[str]
    sync_thread: np.ndarray
    sync_start: np.ndarray
    sync_end: np.ndarray
    sync_own: np.ndarray  # own cost without waiting
    sync_wake: np.ndarray
    sync_delay: np.ndarray
    sync_streams: list[tuple[int, ...]]  # streams it waits for (when sync_act < 0)
    sync_act: np.ndarray  # the activity it waits for (-1: its streams)
    sync_waits: np.ndarray  # bool: it waits for GPU work at all (else: CPU work only)
    # handoffs between host threads: a burst of work on a thread (events with no idle gap
    # over BURST_GAP_NS) starts when the event running on another thread at that moment
    # says (that thread's clock); an event on another thread that was running then, that
    # the burst fills at least half of and that ends after it, within JOIN_NS or with
    # nothing recorded on its thread in between (it waited: a pool's workers joined), was
    # waiting for it and ends as long after the burst as recorded
    burst_thread: np.ndarray
    burst_start: np.ndarray
    burst_end: np.ndarray
    burst_waker: np.ndarray  # the thread it woke from
    burst_join_end: np.ndarray  # end of the event that waits for it (-1: none)
    burst_join_thread: np.ndarray  # that event's thread (-1: none)
    # the recorded times whose replayed times a burst's start and a joining event's end
    # cannot precede: the thread's previous event end, and the joining event's start or
    # its thread's last event end before it (-1: none), so no thread runs backward
    burst_floor: np.ndarray
    burst_join_floor: np.ndarray
    # the launch queue: on a device whose launch calls blocked with the queue full (CUDA
    # holds about 1024 launches), a launch call returns no earlier than the end of the
    # activity launched queue_depth before it on the device (plus queue_wake)
    queue_depth: dict[int, int]  # device -> launches the queue held
    queue_prev: np.ndarray  # per activity: the activity its launch call waits for (-1)
    queue_wake: np.ndarray  # per activity: from that activity's end to the call's return
    call_end: np.ndarray  # per activity: its launch call's recorded end (-1: no call)
    call_own: np.ndarray  # per activity: its launch call's own cost (not waiting)
    call_blocked: np.ndarray  # bool: its launch call waited for the queue in the recording
    cpu_row: np.ndarray  # the host events the replay moves (table rows, ascending)
    cpu_thread: np.ndarray  # their dense thread ids
    thread_of_row: np.ndarray  # per table row: its host event's thread (-1: not one)
    step_number: np.ndarray
    step_row: np.ndarray
    step_thread: np.ndarray
    act_step: np.ndarray  # step index of each activity (-1)
    headline: str  # "device", "cpu" or "window"
    wake_median: int
    wake_cases: int
    model: Model
    missing: tuple[MissingDependency, ...]
    t0: int  # the recorded window
    t1: int

    def __len__(self) -> int:
        return len(self.act)


def _thread_ids(table: EventTable, rows: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    key = table.pid[rows].astype(np.int64) * (1 << 32) + (table.tid[rows] & 0xFFFFFFFF)
    uniq, inverse = dense_ids(key)
    first = np.full(len(uniq), len(rows), dtype=np.int64)
    np.minimum.at(first, inverse.reshape(-1), np.arange(len(rows)))
    threads = [(int(table.pid[rows[i]]), int(table.tid[rows[i]])) for i in first.tolist()]
    return threads, inverse.reshape(-1).astype(np.int64)


def _median(values: np.ndarray, default: int = 0) -> int:
    return int(median(values)) if len(values) else default


def _grouped_median(values: np.ndarray, fine: np.ndarray, coarse: np.ndarray,
                    want_fine: np.ndarray, want_coarse: np.ndarray, default: int) -> np.ndarray:
    """Per wanted item: the median of ``values`` in its fine group when it has MIN_CASES,
    else of its coarse group when that has any, else ``default``."""
    out = np.full(len(want_fine), default, dtype=np.int64)
    for groups, want, least in ((coarse, want_coarse, 1), (fine, want_fine, MIN_CASES)):
        if not len(values):
            break
        order = np.argsort(groups, kind="stable")
        g_sorted, v_sorted = groups[order], values[order]
        uniq, first, counts = np.unique(g_sorted, return_index=True, return_counts=True)
        med = np.array([int(median(v_sorted[f:f + c]))
                        for f, c in zip(first.tolist(), counts.tolist(), strict=True)],
                       dtype=np.int64)
        pos = np.minimum(np.searchsorted(uniq, want), len(uniq) - 1)
        hit = (uniq[pos] == want) & (counts[pos] >= least)
        out[hit] = med[pos[hit]]
    return out


def build(table: EventTable, gpu: GpuActivity) -> Graph:
    """The replay graph of ``table`` (``gpu``: its attributed GPU activities)."""
    g = Graph()
    ts, dur = table.ts_ns, table.dur_ns
    cpu_cats = np.array([int(c) for c in CPU_CATS], dtype=table.cat.dtype)
    step_ids = [i for i, nm in enumerate(table.names) if nm.startswith("ProfilerStep#")]
    cpu_rows = np.flatnonzero(np.isin(table.cat, cpu_cats)
                              | ((table.cat == Cat.OTHER) & np.isin(table.name, step_ids)))
    g.threads, g.cpu_thread = _thread_ids(table, cpu_rows)
    g.cpu_row = cpu_rows
    g.thread_of_row = np.full(len(table), -1, dtype=np.int64)
    g.thread_of_row[cpu_rows] = g.cpu_thread

    # --- GPU activities in replay order
    n = len(gpu)
    launch = np.where(gpu.launch_row >= 0, gpu.launch_row, gpu.op_row)
    linked = launch >= 0
    launch_ts = np.where(linked, ts[np.maximum(launch, 0)], -1)
    rec_start = ts[gpu.row]
    key = _issue_keys(table, gpu, linked, launch_ts, rec_start)
    order = np.lexsort((rec_start, key))
    g.act = order
    g.key = key[order]
    g.row = gpu.row[order]
    g.start = rec_start[order]
    g.dur = dur[g.row].copy()
    g.device = table.device[g.row].astype(np.int64)
    skey = g.device * (1 << 40) + table.stream[g.row]
    s_uniq, s_inv = dense_ids(skey)
    g.stream = s_inv.reshape(-1).astype(np.int64)
    g.streams = [(int(k) >> 40, int(k) & ((1 << 40) - 1)) for k in s_uniq.tolist()]
    g.klass = gpu.klass[order]
    g.launch_row = launch[order]
    g.launch_ts = launch_ts[order]
    g.thread = np.where(g.launch_row >= 0, g.thread_of_row[np.maximum(g.launch_row, 0)],
                        -1).astype(np.int64)
    g.launch_ts = np.where(g.thread >= 0, g.launch_ts, -1)
    linked = g.launch_ts >= 0
    end = g.start + g.dur

    # previous activity on the stream, in replay order
    prev = np.full(n, -1, dtype=np.int64)
    by_stream = np.lexsort((np.arange(n), g.stream))
    same = g.stream[by_stream[1:]] == g.stream[by_stream[:-1]]
    prev[by_stream[1:][same]] = by_stream[:-1][same]
    has_prev = prev >= 0
    prev_end = np.where(has_prev, end[np.maximum(prev, 0)], np.iinfo(np.int64).min)

    # recorded waits across streams
    waits, event_targets = recorded_waits(table, gpu)
    pos_of_act = np.empty(n, dtype=np.int64)
    pos_of_act[order] = np.arange(n)
    g.wait = np.full(n, -1, dtype=np.int64)
    if n:
        w = waits[order]
        has_w = w >= 0
        row_pos = np.searchsorted(gpu.row, w[has_w])  # gpu.row is sorted by row
        g.wait[has_w] = pos_of_act[row_pos]
    has_wait = g.wait >= 0
    wait_end = np.where(has_wait, end[np.maximum(g.wait, 0)], np.iinfo(np.int64).min)

    # binding cases, as HTA's rule reads them
    launch_bound = linked & (~has_prev | (prev_end < g.launch_ts)) \
        & (~has_wait | (wait_end < g.launch_ts))
    stream_bound = has_prev & ~launch_bound & (~has_wait | (wait_end <= prev_end))
    # launch latency by stream and kind: the category, and a memcpy's or memset's own name
    # (a pageable copy waits for its staging, a pinned one does not)
    cat = table.cat[g.row].astype(np.int64)
    kind = np.where(cat == Cat.KERNEL, -1, table.name[g.row].astype(np.int64))
    lat_fine = g.stream * (1 << 32) + kind
    lat_coarse = g.device * (1 << 32) + kind
    lat_values = (g.start - g.launch_ts)[launch_bound]
    g.latency = _grouped_median(lat_values, lat_fine[launch_bound], lat_coarse[launch_bound],
                                lat_fine, lat_coarse, _median(lat_values))
    gap_values = (g.start - prev_end)[stream_bound]
    g.gap = _grouped_median(np.maximum(gap_values, 0), g.stream[stream_bound],
                            g.device[stream_bound], g.stream, g.device,
                            max(_median(gap_values), 0))
    g.latency = np.maximum(g.latency, 0)

    # late activities: a dependency the graph does not hold
    bound = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    bound = np.where(linked, g.launch_ts + g.latency, bound)
    bound = np.maximum(bound, np.where(has_prev, prev_end + g.gap, bound))
    bound = np.maximum(bound, wait_end)
    known = linked | has_prev | has_wait
    excess = np.where(known, g.start - bound, 0)
    modeled = np.maximum(np.where(launch_bound, g.latency, g.gap), 0)
    # an activity with no launch call: whatever held it past its stream is not in the trace
    late = known & ((excess > _late_after(modeled)) | (~linked & (excess > 0)))
    g.delay = np.where(late, excess, 0).astype(np.int64)

    missing: list[MissingDependency] = []
    comm = g.klass == classify.CLASS_INDEX[classify.COMMUNICATION]
    unlinked = ~linked
    cross = late & ~comm & ~unlinked & _another_stream_ended_just_before(g, end)
    shared = late & ~comm & ~unlinked & ~cross & _another_stream_ran_meanwhile(g, end)
    kinds = [
        (OTHER_RANKS, late & comm),  # they wait for other ranks
        (NO_LAUNCH, late & ~comm & unlinked),  # what launched them is not in the trace
        (CROSS_STREAM, cross),  # right after work on another stream ended
        (GPU_SHARED, shared),  # while other streams' work ran
        (UNEXPLAINED, late & ~comm & ~unlinked & ~cross & ~shared),
    ]
    for kind, mask in kinds:
        if mask.any():
            missing.append(MissingDependency(kind, int(mask.sum()), int(g.delay[mask].sum())))

    _blocking_calls(g, table, gpu, end, pos_of_act, event_targets, missing)
    g.missing = tuple(missing)
    _steps(g, table, gpu, pos_of_act)
    _handoffs(g, table)
    _launch_queue(g, table, end)
    starts = [ts[cpu_rows]] if len(cpu_rows) else []
    ends = [ts[cpu_rows] + dur[cpu_rows]] if len(cpu_rows) else []
    if n:
        starts.append(g.start)
        ends.append(end)
    g.t0 = int(min(s.min() for s in starts)) if starts else 0
    g.t1 = int(max(e.max() for e in ends)) if ends else 0
    g.model = Model(_median(lat_values), max(_median(gap_values), 0),
                    g.wake_median, int(launch_bound.sum()), int(stream_bound.sum()),
                    g.wake_cases)
    return g


def _late_after(modeled: np.ndarray) -> np.ndarray:
    """How much later than modeled a wait must be to count as a missing dependency: LATE_NS,
    or LATE_FACTOR times the modeled wait where that is more (the modeled wait counted up
    to LATE_CAP_NS: a latency that holds a clock offset between host and device would hide
    every late start)."""
    return np.maximum(LATE_NS, LATE_FACTOR * np.minimum(modeled, LATE_CAP_NS))


def _issue_keys(table: EventTable, gpu: GpuActivity, linked: np.ndarray, launch_ts: np.ndarray,
                rec_start: np.ndarray) -> np.ndarray:
    """When each activity entered its stream: its launch call's start; for one without a
    launch call, that of the latest launched activity before it on its stream, so the
    stream keeps its recorded order (QUEUED_BEFORE when none: it was queued before the
    trace began)."""
    key = np.where(linked, launch_ts, np.iinfo(np.int64).min)
    if not len(key) or linked.all():
        return np.where(linked, launch_ts, rec_start)
    skey = table.device[gpu.row].astype(np.int64) * (1 << 40) + table.stream[gpu.row]
    order = np.lexsort((rec_start, skey))
    k = key[order]
    s = skey[order]
    first = np.ones(len(k), dtype=bool)
    first[1:] = s[1:] != s[:-1]
    # running maximum within each stream: offset each stream above the previous ones
    group = np.cumsum(first) - 1
    big = np.int64(1 << 62)
    rank = np.argsort(np.argsort(k, kind="stable"), kind="stable").astype(np.int64)
    shifted = np.where(k == np.iinfo(np.int64).min, -1, rank) + group * (len(k) + 1)
    run = np.maximum.accumulate(shifted) - group * (len(k) + 1)
    inherited = np.where(run >= 0, np.sort(k)[np.maximum(run, 0)], big)
    out = np.empty(len(k), dtype=np.int64)
    # before any launched one: queued before the trace began, first on its stream
    out[order] = np.where(k != np.iinfo(np.int64).min, k,
                          np.where(run >= 0, inherited, QUEUED_BEFORE))
    return out


def _another_stream_ended_just_before(g: Graph, end: np.ndarray) -> np.ndarray:
    """Per activity: an activity on another stream of its device ended within twice its
    gap (and a few microseconds) before it started."""
    out = np.zeros(len(g.act), dtype=bool)
    if len(g.streams) < 2:
        return out
    order = np.argsort(end, kind="stable")
    e_sorted = end[order]
    window = 2 * g.gap + 5_000
    for i in np.flatnonzero(g.delay > 0).tolist():
        lo = int(np.searchsorted(e_sorted, g.start[i] - window[i], side="left"))
        hi = int(np.searchsorted(e_sorted, g.start[i], side="right"))
        cand = order[lo:hi]
        out[i] = bool(np.any((g.stream[cand] != g.stream[i]) & (g.device[cand] == g.device[i])))
    return out


def _another_stream_ran_meanwhile(g: Graph, end: np.ndarray) -> np.ndarray:
    """Per late activity: an activity on another stream of its device ran during its late
    wait (the GPU was busy with other streams' work)."""
    out = np.zeros(len(g.act), dtype=bool)
    if len(g.streams) < 2:
        return out
    order = np.argsort(g.start, kind="stable")
    s_sorted = g.start[order]
    longest = int(g.dur.max())
    for i in np.flatnonzero(g.delay > 0).tolist():
        lo_t = g.start[i] - g.delay[i]
        lo = int(np.searchsorted(s_sorted, lo_t - longest, side="left"))
        hi = int(np.searchsorted(s_sorted, g.start[i], side="left"))
        cand = order[lo:hi]
        cand = cand[(end[cand] > lo_t) & (g.stream[cand] != g.stream[i])
                    & (g.device[cand] == g.device[i])]
        out[i] = len(cand) > 0
    return out


def _blocking_calls(g: Graph, table: EventTable, gpu: GpuActivity, end: np.ndarray,
                    pos_of_act: np.ndarray, event_targets: dict[int, int],
                    missing: list[MissingDependency]) -> None:
    """The blocking calls, what GPU work each waits for, their own cost and wake-up."""
    ts, dur = table.ts_ns, table.dur_ns
    names = table.names
    blocking_ids = [i for i, nm in enumerate(names) if nm in BLOCKING_CALLS and nm not in POLLING]
    rows = np.flatnonzero((table.cat == Cat.RUNTIME) & np.isin(table.name, blocking_ids)
                          & (dur > 0))
    # the cuda_sync events that say what each call waits for
    sync_ids = [i for i, nm in enumerate(names) if nm in (CONTEXT_SYNC, STREAM_SYNC, EVENT_SYNC)]
    sync_events = np.flatnonzero((table.cat == Cat.SYNC) & np.isin(table.name, sync_ids))
    said: dict[int, int] = {}
    if len(sync_events):
        calls = _runtime_rows(table, table.correlation[sync_events])
        for ev, call in zip(sync_events.tolist(), calls.tolist(), strict=True):
            if call >= 0:
                said[call] = ev
    n = len(g.act)
    # per (device): its streams; per process: its device
    dev_streams: dict[int, list[int]] = {}
    for s, (d, _) in enumerate(g.streams):
        dev_streams.setdefault(d, []).append(s)
    proc_dev: dict[int, int] = {}
    if n:
        linked = g.launch_row >= 0
        pids = table.pid[g.launch_row[linked]]
        devs = g.device[linked]
        for p in distinct(pids).tolist():
            d = devs[pids == p]
            vals, counts = np.unique(d, return_counts=True)
            proc_dev[int(p)] = int(vals[np.argmax(counts)])
    # activities by stream in replay order, with their launch keys, for "last launched before"
    key = g.key
    per_stream = [np.flatnonzero(g.stream == s) for s in range(len(g.streams))]
    stream_keys = [key[acts].tolist() for acts in per_stream]  # lists: bisect, no numpy call
    ends_of = [end[acts].tolist() for acts in per_stream]
    launched = _launched_activity(g, gpu, rows)
    keep = ~_pinned_async_copies(table, g, rows, launched, said)
    rows = rows[keep]
    # the activity each call launched (a memcpy call's copy)
    own_act = {r: a for r, a in zip(rows.tolist(), launched[keep].tolist(), strict=True)
               if a >= 0}
    out_row, out_streams, out_act, out_target = [], [], [], []
    for r in rows.tolist():
        name = names[int(table.name[r])]
        start, stop = int(ts[r]), int(ts[r] + dur[r])
        ev = said.get(r)
        ev_name = names[int(table.name[ev])] if ev is not None else None
        streams: tuple[int, ...] = ()
        act = -1
        device = proc_dev.get(int(table.pid[r]))
        if ev_name == EVENT_SYNC:
            src = event_targets.get(ev, -1)
            if src >= 0:
                act = int(pos_of_act[int(np.searchsorted(gpu.row, src))])
        elif name in MEMCPY_CALLS and r in own_act:
            # an async copy from or to pinned memory returns at once; a copy through
            # pageable memory, or by a synchronous call, returns when it is done
            act = own_act[r]
            if name in ASYNC_MEMCPY_CALLS and PAGEABLE not in names[int(table.name[g.row[act]])]:
                continue
        elif device is not None:
            cands = dev_streams.get(device, [])
            if ev_name == STREAM_SYNC:
                cands = [s for s in cands if g.streams[s][1] == int(table.tid[ev])]
            elif ev_name is None and name not in DEVICE_SYNCS:
                cands = _inferred_stream(cands, stream_keys, ends_of, start, stop)
            streams = tuple(cands)
        if act < 0 and not streams:
            continue
        target = int(end[act]) if act >= 0 else \
            _last_end(streams, stream_keys, ends_of, start)
        out_row.append(r)
        out_streams.append(streams)
        out_act.append(act)
        out_target.append(target)

    m = len(out_row)
    g.sync_row = np.array(out_row, dtype=np.int64)
    g.sync_name = [names[int(table.name[r])] for r in out_row]
    g.sync_thread = g.thread_of_row[g.sync_row] if m else np.zeros(0, np.int64)
    g.sync_start = ts[g.sync_row]
    g.sync_end = g.sync_start + dur[g.sync_row]
    g.sync_streams = out_streams
    g.sync_act = np.array(out_act, dtype=np.int64)
    target = np.array(out_target, dtype=np.int64)
    none = np.iinfo(np.int64).min
    has_target = target > none
    # it waited when the work ended after the call began and the call did not return
    # before it ended; a call that returned first (an async copy) waits for nothing
    returned_first = has_target & (target > g.sync_end + RETURN_SLACK_NS)
    waited = has_target & ~returned_first & (target > g.sync_start)
    g.sync_waits = has_target & ~returned_first
    d = g.sync_end - g.sync_start
    wake_values = (g.sync_end - target)[waited]
    wake_values = np.maximum(wake_values, 0)
    name_index: dict[str, int] = {}
    name_ids = np.array([name_index.setdefault(nm, len(name_index)) for nm in g.sync_name],
                        dtype=np.int64)
    g.sync_wake = _grouped_median(wake_values, name_ids[waited], np.zeros(int(waited.sum()),
                                  np.int64), name_ids, np.zeros(m, np.int64),
                                  _median(wake_values))
    free = ~waited
    own_med = _grouped_median(d[free], name_ids[free], np.zeros(int(free.sum()), np.int64),
                              name_ids, np.zeros(m, np.int64), _median(d[free]))
    g.sync_own = np.where(waited, np.minimum(own_med, d), d)
    excess = np.where(waited, g.sync_end - np.maximum(target + g.sync_wake,
                                                      g.sync_start + g.sync_own), 0)
    late = waited & (excess > _late_after(g.sync_wake))
    g.sync_delay = np.where(late, excess, 0).astype(np.int64)
    if late.any():
        missing.append(MissingDependency(LATE_RETURN, int(late.sum()), int(g.sync_delay.sum())))
    g.wake_median = _median(wake_values)
    g.wake_cases = int(waited.sum())


def _launched_activity(g: Graph, gpu: GpuActivity, rows: np.ndarray) -> np.ndarray:
    """The activity (the graph's index) each of the runtime ``rows`` launched: the last
    where it launched several; -1 where none."""
    if not len(g.act):
        return np.full(len(rows), -1, dtype=np.int64)
    lr = gpu.launch_row[g.act]
    by_row = np.argsort(lr, kind="stable")
    at = np.maximum(np.searchsorted(lr[by_row], rows, side="right") - 1, 0)
    return np.where(lr[by_row[at]] == rows, by_row[at], -1)


def _pinned_async_copies(table: EventTable, g: Graph, rows: np.ndarray, act: np.ndarray,
                         said: dict[int, int]) -> np.ndarray:
    """Which blocking-call ``rows`` (``act``: the activity each launched) are async copies
    from or to pinned memory that no event sync speaks for: they return at once and wait
    for nothing (most of the calls, often: a DataLoader's pinned batches), found at once
    instead of one by one."""
    names = table.names
    async_ids = [i for i, nm in enumerate(names) if nm in ASYNC_MEMCPY_CALLS]
    out = member(table.name[rows], async_ids) & (act >= 0)
    if not out.any():
        return out
    event_synced = [call for call, ev in said.items() if names[int(table.name[ev])] == EVENT_SYNC]
    out &= ~member(rows, event_synced)
    act_names = table.name[g.row[np.maximum(act, 0)]]
    pageable = [i for i in distinct(act_names[out]).tolist() if PAGEABLE in names[i]]
    return out & ~member(act_names, pageable)


def _last_end(streams: tuple[int, ...], stream_keys: list[list[int]],
              ends_of: list[list[int]], at: int) -> int:
    """The latest end of the last activity launched before ``at`` on each of ``streams``
    (each stream's launch keys and ends, in replay order)."""
    best = np.iinfo(np.int64).min
    for s in streams:
        i = bisect_left(stream_keys[s], at) - 1
        if i >= 0:
            best = max(best, ends_of[s][i])
    return best


def _inferred_stream(cands: list[int], stream_keys: list[list[int]], ends_of: list[list[int]],
                     start: int, stop: int) -> list[int]:
    """A stream or event sync the trace does not say the stream of: the stream whose last
    activity launched before the call ended last, before the call returned."""
    best, pick = np.iinfo(np.int64).min, []
    for s in cands:
        e = _last_end((s,), stream_keys, ends_of, start)
        if best < e <= stop + RETURN_SLACK_NS:
            best, pick = e, [s]
    return pick


def _launch_queue(g: Graph, table: EventTable, end: np.ndarray) -> None:
    """Where the launch queue was full: the launch calls that took over LONG_LAUNCH times
    the median call (and LATE_NS) with nearly the same number of launches outstanding each
    time (the queue's depth); each launch call on such a device waits for the activity
    launched that many launches before it."""
    n = len(g.act)
    g.queue_depth = {}
    g.queue_prev = np.full(n, -1, dtype=np.int64)
    g.queue_wake = np.zeros(n, dtype=np.int64)
    g.call_end = np.full(n, -1, dtype=np.int64)
    g.call_own = np.zeros(n, dtype=np.int64)
    g.call_blocked = np.zeros(n, dtype=bool)
    linked = np.flatnonzero(g.launch_ts >= 0)
    if not len(linked):
        return
    call_dur = table.dur_ns[g.launch_row[linked]]
    g.call_end[linked] = g.launch_ts[linked] + call_dur
    g.call_own[linked] = call_dur
    ends_sorted = np.sort(end)
    for d in distinct(g.device[linked]).tolist():
        mine = linked[g.device[linked] == d]  # in launch order
        dur = table.dur_ns[g.launch_row[mine]]
        typical = int(median(dur))
        long_ = dur > max(LATE_NS, LONG_LAUNCH * typical)
        if long_.sum() < MIN_CASES:
            continue
        # launched before each call, less ended by its return: what the queue held
        held = np.arange(len(mine)) - np.searchsorted(ends_sorted, g.call_end[mine],
                                                      side="right")
        at_long = held[long_]
        depth = int(median(at_long))
        if depth < 2 or percentile(at_long, 25) < QUEUE_STEADY * depth:
            continue  # long calls, but not at one queue depth: something else held them
        g.queue_depth[d] = depth
        pos = np.arange(len(mine)) - depth - 1
        has = pos >= 0
        g.queue_prev[mine[has]] = mine[pos[has]]
        blocked = long_ & has & (held >= QUEUE_STEADY * depth)
        g.call_blocked[mine[blocked]] = True
        g.call_own[mine[blocked]] = typical
        waits = g.call_end[mine[blocked]] - end[g.queue_prev[mine[blocked]]]
        g.queue_wake[mine] = max(_median(waits), 0)


def _handoffs(g: Graph, table: EventTable) -> None:
    """The bursts of work of each host thread and the thread each was woken from (see
    :class:`Graph`). The autograd engine's thread, woken by ``loss.backward()`` on the
    main thread, is the common case."""
    starts = table.ts_ns[g.cpu_row]
    ends = starts + table.dur_ns[g.cpu_row]
    out: list[tuple[int, int, int, int, int, int, int]] = []
    if len(g.threads) > 1:
        # each thread's event ends, sorted: the latest end before a time, on a thread
        on_thread = [g.cpu_thread == th for th in range(len(g.threads))]
        ends_of = [np.sort(ends[on]) for on in on_thread]
        spans_of = [(starts[on], ends[on]) for on in on_thread]
        starts_of = [np.sort(starts[on]) for on in on_thread]
        by_start = np.argsort(starts, kind="stable")
        s_sorted = starts[by_start]
        thread_by_start = g.cpu_thread[by_start]
        longest = int((ends - starts).max())
        for th in range(len(g.threads)):
            # in start order (the order among equal starts moves no burst's bounds)
            order = by_start[thread_by_start == th]
            if not len(order):
                continue
            reach = np.maximum.accumulate(ends[order])
            new = np.ones(len(order), dtype=bool)
            new[1:] = starts[order[1:]] > reach[:-1] + BURST_GAP_NS
            first = np.flatnonzero(new)
            last = np.append(first[1:] - 1, len(order) - 1)
            if len(first) > MAX_BURSTS:
                continue
            for f, la in zip(first.tolist(), last.tolist(), strict=True):
                bs, be = int(starts[order[f]]), int(reach[la])
                lo = int(np.searchsorted(s_sorted, bs - longest, side="left"))
                hi = int(np.searchsorted(s_sorted, bs, side="right"))
                cand = by_start[lo:hi]
                cand = cand[(ends[cand] > bs) & (g.cpu_thread[cand] != th)]
                if not len(cand):
                    continue
                # the innermost event running then (the latest to start, the shortest) woke
                # the burst; of the events running then on its thread, the first to end
                # just after the burst, which the burst fills at least half of, waited for it
                k = cand[np.lexsort((ends[cand], -starts[cand]))[0]]
                waker = int(g.cpu_thread[k])
                waits = cand[(ends[cand] >= be) & (2 * (be - bs) >= ends[cand] - starts[cand])]
                waited = np.array([ends[k] - be <= JOIN_NS or not _starts_between(
                    starts_of[int(g.cpu_thread[k])], be, ends[k]) for k in waits.tolist()],
                    dtype=bool)
                waits = waits[waited] if len(waits) else waits
                join, join_thread, join_floor = -1, -1, -1
                if len(waits):
                    k = waits[np.argmin(ends[waits])]
                    join, join_thread = int(ends[k]), int(g.cpu_thread[k])
                    # the join ends no earlier than any event on that thread that spans it
                    # starts (nested ones end together), nor than its other work before it
                    w_start, w_end = spans_of[join_thread]
                    spanning = w_start[(w_start < join) & (w_end >= join)]
                    join_floor = max(int(spanning.max()) if len(spanning) else -1,
                                     _last_end_before(ends_of[join_thread], join))
                out.append((th, bs, be, waker, join, join_thread,
                            _last_end_before(ends_of[th], bs + 1), join_floor))
    cols = list(zip(*out, strict=True)) if out else [(), (), (), (), (), (), (), ()]
    (g.burst_thread, g.burst_start, g.burst_end, g.burst_waker, g.burst_join_end,
     g.burst_join_thread, g.burst_floor, g.burst_join_floor) = (
        np.array(c, dtype=np.int64) for c in cols)


def _starts_between(sorted_starts: np.ndarray, a: int, b: int) -> bool:
    """Whether an event on the thread starts strictly between ``a`` and ``b``."""
    return bool(np.searchsorted(sorted_starts, b, side="left")
                > np.searchsorted(sorted_starts, a, side="right"))


def _last_end_before(sorted_ends: np.ndarray, t: int) -> int:
    """The latest of ``sorted_ends`` before ``t`` (-1: none)."""
    i = int(np.searchsorted(sorted_ends, t, side="left")) - 1
    return int(sorted_ends[i]) if i >= 0 else -1


def _steps(g: Graph, table: EventTable, gpu: GpuActivity, pos_of_act: np.ndarray) -> None:
    """The ProfilerStep spans, their rows and threads, and the step of each activity."""
    spans = cpu_steps(table)
    g.step_number = np.array([s[0] for s in spans], dtype=np.int64)
    rows = []
    for number, start, d in spans:
        name = f"ProfilerStep#{number}"
        cand = np.flatnonzero((table.ts_ns == start) & (table.dur_ns == d))
        cand = [c for c in cand.tolist() if table.names[int(table.name[c])] == name]
        rows.append(cand[0] if cand else -1)
    g.step_row = np.array(rows, dtype=np.int64)
    g.step_thread = g.thread_of_row[g.step_row] if len(rows) else np.zeros(0, np.int64)
    g.act_step = np.full(len(g.act), -1, dtype=np.int64)
    if spans and len(gpu):
        which = step_of_activities(table, gpu, spans)
        g.act_step = which[g.act]
    if not spans:
        g.headline = "window"
    else:
        g.headline = "device" if (g.act_step >= 0).any() else "cpu"
