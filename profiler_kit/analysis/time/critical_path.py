"""The critical path of a step: the longest chain of dependent work, in Holistic Trace
Analysis' model.

The graph has a start and an end node per CPU op, runtime call and GPU activity
(kernel, memcpy, memset). Edges, as in HTA's ``CPGraph``:

- CPU: on each thread, ops and runtime calls nest; walking the nesting depth-first, each
  node is joined to the next (``operator``, weight = the time between them); consecutive
  top-level ops are joined end to start with weight 0 (``dependency``). A blocking call
  (``cudaDeviceSynchronize``, ``cudaStreamSynchronize``, ``cudaMemcpy[Async]``, event
  waits) gets weight 0 for its own span: what it waited for is on the GPU.
- GPU: each activity's span (``operator``). It follows the runtime call that launched it
  (``launch``, weight = launch to start) when the stream's queue was empty and the previous
  activity on the stream had ended before the launch; else the previous activity on its
  stream (``kernel_gap``, weight = the gap).
- Synchronization: a ``Context Sync`` (``cudaDeviceSynchronize``) joins the last
  activity of every stream, a ``Stream Sync`` (``cudaStreamSynchronize``) that of its
  stream, and an ``Event Sync`` (``cudaEventSynchronize``, and a ``cudaEventQuery`` that
  found the event complete) the activity launched last on the recorded stream before its
  ``cudaEventRecord``, to the end of the runtime call that waited (weight 0).
- Between streams: a ``Stream Wait Event`` (``cudaStreamWaitEvent``) joins the activity
  launched last on the recorded stream before its ``cudaEventRecord`` (its args
  ``wait_on_stream`` and ``wait_on_cuda_event_record_corr_id``) to the next activity that
  the waiting thread launches on the waiting stream (``sync``, weight 0); that activity
  then follows its launch or its stream's previous activity only when the one it waited
  for ended before them.

The critical path is the longest path through this DAG (ties broken as networkx's
``dag_longest_path`` does on HTA's graph). Each edge's time is attributed to one event
(HTA's rules), so the path splits into CPU work, GPU compute, communication, launch
delays and gaps between kernels, and lists the ops and kernels on it.

"""

from __future__ import annotations

from typing import NamedTuple

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids, distinct
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import parents
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.trace.table import Cat, EventTable

BLOCKING_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize",
    "cudaMemcpy", "cudaMemcpyAsync",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventQuery", "hipEventSynchronize",
    "hipMemcpy", "hipMemcpyAsync", "hipMemcpyWithStream",
})
# Runtime calls that enqueue an activity on a stream (the stream's queue grows by one).
LAUNCH_CALLS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
    "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync",
    "hipMemcpyAsync", "hipMemcpyWithStream",
})
CONTEXT_SYNC = "Context Sync"
# A window with more events is left out of ``analyze`` (about 10 s per million events on
# one loaded core, see benchmarks/critical_path_speed.py; ``build_path`` takes any window).
MAX_EVENTS = 500_000
STREAM_SYNC = "Stream Sync"
STREAM_WAIT_EVENT = "Stream Wait Event"
EVENT_SYNC = "Event Sync"
EVENT_RECORDS = frozenset({"cudaEventRecord", "hipEventRecord"})

# edge kinds
OPERATOR, DEPENDENCY, LAUNCH, KERNEL_GAP, SYNC = range(5)
EDGE_KINDS = ("operator", "dependency", "launch", "kernel_gap", "sync")


class PathEntry(msgspec.Struct, frozen=True):
    """An op, runtime call or GPU activity name on the path and the time it contributes."""

    name: str
    category: str  # cpu_op / runtime / kernel / memcpy / memset
    klass: str = msgspec.field(name="class")
    count: int  # events of this name whose own time is on the path
    ns: int


class CriticalPath(msgspec.Struct, frozen=True):
    """The longest path through one step (``window`` ``"step"``) or the whole trace.

    ``length_ns == cpu_ns + gpu_compute_ns + communication_ns + launch_ns +
    kernel_gap_ns`` (the other edges weigh nothing).
    """

    window: str  # "step" or "trace"
    step: int | None  # the ProfilerStep number (the median step)
    start_ns: int
    end_ns: int
    length_ns: int
    cpu_ns: int  # CPU ops and runtime calls
    gpu_compute_ns: int
    communication_ns: int  # communication kernels
    launch_ns: int  # from a launch to its kernel's start, the GPU being idle
    kernel_gap_ns: int  # between consecutive activities of a stream
    syncs: int  # GPU -> CPU synchronizations the path goes through
    events: int  # events on the path
    entries: tuple[PathEntry, ...]  # largest contribution first


class PathGraph(msgspec.Struct):
    """The graph and its longest path, as arrays (for tests and tools; not encoded)."""

    node_row: np.ndarray  # table row of each node's event
    node_ts: np.ndarray
    node_start: np.ndarray  # bool: a start node
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_weight: np.ndarray
    edge_kind: np.ndarray
    edge_event: np.ndarray  # table row the edge's time is attributed to (-1: none)
    node_dist: np.ndarray  # length of the longest path ending at each node
    path: np.ndarray  # node ids, first to last
    path_edges: np.ndarray  # edge ids along the path

    @property
    def rows(self) -> set[int]:
        """Table rows of the events on the path."""
        return set(self.node_row[self.path].tolist())


def critical_path(table: EventTable, gpu: GpuActivity, steps: Steps,
                  top: int = 20) -> CriticalPath | None:
    """The critical path of the median step (the step whose time is nearest the median;
    the whole trace when there are no ``ProfilerStep#`` spans), summarized; None when
    that window holds more than :data:`MAX_EVENTS` events."""
    if steps.steps:
        step = min(steps.steps, key=lambda s: (abs(s.dur_ns - steps.median_ns), s.start_ns))
        lo, hi, number, window = step.start_ns, step.start_ns + step.dur_ns, step.number, "step"
    else:
        lo, hi, number, window = steps.start_ns, steps.end_ns, None, "trace"
    first, last = np.searchsorted(table.ts_ns, [lo, hi], side="left")
    if last - first > MAX_EVENTS:
        return None
    return summarize(table, gpu, build_path(table, gpu, lo, hi), window, number, lo, hi, top)


def summarize(table: EventTable, gpu: GpuActivity, g: PathGraph, window: str,
              step: int | None, start_ns: int, end_ns: int, top: int = 20) -> CriticalPath:
    """Split the path's length by what bounds it and list its ops and kernels."""
    e = g.path_edges
    weight, kind, event = g.edge_weight[e], g.edge_kind[e], g.edge_event[e]
    work = (kind == OPERATOR) & (event >= 0)
    rows = event[work]
    w = weight[work]
    on_gpu = np.isin(table.cat[rows], [int(Cat.KERNEL), int(Cat.MEMCPY), int(Cat.MEMSET)])
    klass = np.full(len(rows), classify.CLASS_INDEX[classify.OTHER], dtype=np.int64)
    if len(gpu) and on_gpu.any():
        pos = np.searchsorted(gpu.row, rows[on_gpu])
        klass[on_gpu] = gpu.klass[pos]
    comm = on_gpu & (klass == classify.CLASS_INDEX[classify.COMMUNICATION])
    path_rows = distinct(g.node_row[g.path]) if len(g.path) else np.zeros(0, np.int64)
    return CriticalPath(
        window=window,
        step=step,
        start_ns=start_ns,
        end_ns=end_ns,
        length_ns=int(weight.sum()),
        cpu_ns=int(w[~on_gpu].sum()),
        gpu_compute_ns=int(w[on_gpu & ~comm].sum()),
        communication_ns=int(w[comm].sum()),
        launch_ns=int(weight[kind == LAUNCH].sum()),
        kernel_gap_ns=int(weight[kind == KERNEL_GAP].sum()),
        syncs=int((kind == SYNC).sum()),
        events=len(path_rows),
        entries=_entries(table, rows, w, klass, on_gpu, top),
    )


_CATEGORY = {int(Cat.CPU_OP): "cpu_op", int(Cat.RUNTIME): "runtime", int(Cat.KERNEL): "kernel",
             int(Cat.MEMCPY): "memcpy", int(Cat.MEMSET): "memset"}


def _entries(table: EventTable, rows: np.ndarray, weight: np.ndarray, klass: np.ndarray,
             on_gpu: np.ndarray, top: int) -> tuple[PathEntry, ...]:
    """Time on the path per (name, category), largest first; CPU events classed by name."""
    if not len(rows):
        return ()
    key = table.name[rows].astype(np.int64) * 16 + table.cat[rows].astype(np.int64)
    uniq, inverse = dense_ids(key)
    inverse = inverse.reshape(-1)
    ns = np.rint(np.bincount(inverse, weights=weight, minlength=len(uniq))).astype(np.int64)
    # an event can own several edges (the stretches between its children): count it once
    pair = distinct(inverse.astype(np.int64) * (int(rows.max()) + 1) + rows)
    events = np.bincount(pair // (int(rows.max()) + 1), minlength=len(uniq))
    first = np.full(len(uniq), len(inverse), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(inverse)))
    out = []
    for i in np.argsort(-ns, kind="stable")[:top].tolist():
        name_id, cat = divmod(int(uniq[i]), 16)
        name = table.names[name_id]
        j = int(first[i])
        cls = (classify.CLASSES[int(klass[j])] if on_gpu[j]
               else classify.classify_op(name) if cat == int(Cat.CPU_OP) else classify.OTHER)
        out.append(PathEntry(name, _CATEGORY.get(cat, "other"), cls, int(events[i]), int(ns[i])))
    return tuple(out)


def build_path(table: EventTable, gpu: GpuActivity, start_ns: int | None = None,
               end_ns: int | None = None) -> PathGraph:
    """The graph of the work between ``start_ns`` and ``end_ns`` (default: all of it) and its
    longest path. CPU events count when they start in the window, GPU activities when the
    runtime call that launched them does."""
    lo = np.iinfo(np.int64).min if start_ns is None else start_ns
    hi = np.iinfo(np.int64).max if end_ns is None else end_ns
    b = _Builder(table, gpu, lo, hi)
    b.cpu_edges()
    b.gpu_edges()
    return b.longest_path()


class _Launches(NamedTuple):
    act_row: np.ndarray  # table rows of the launched activities, by launch time
    call_ts: np.ndarray  # their launch calls' starts
    by_stream: dict[tuple[int, int], list[int]]  # (device, stream) -> indices above
    by_thread: dict[tuple[int, int, int], list[int]]  # (pid, tid, stream) of the call
    record_of: dict[int, int]  # correlation -> its cudaEventRecord row


class _Builder:
    def __init__(self, table: EventTable, gpu: GpuActivity, lo: int, hi: int) -> None:
        self.t = table
        self.gpu = gpu
        ts, dur = table.ts_ns, table.dur_ns
        cpu = np.flatnonzero(((table.cat == Cat.CPU_OP) | (table.cat == Cat.RUNTIME))
                             & (dur > 0) & (ts >= lo) & (ts <= hi))
        launch = gpu.launch_row
        ok = launch >= 0
        ok[ok] = (dur[launch[ok]] > 0) & (ts[launch[ok]] >= lo) & (ts[launch[ok]] <= hi)
        self.act = np.flatnonzero(ok)  # indices into gpu
        gpu_rows = gpu.row[self.act]
        rows = np.concatenate([cpu, gpu_rows]).astype(np.int64)
        self.n_events = len(rows)
        self.event_row = rows
        # the events by table row, for :meth:`_events_of`
        self.by_row = np.argsort(rows, kind="stable")
        self.sorted_rows = rows[self.by_row]
        # node 2k starts event k, node 2k+1 ends it
        starts, ends = ts[rows], ts[rows] + dur[rows]
        self.node_ts = np.empty(2 * len(rows), dtype=np.int64)
        self.node_ts[0::2], self.node_ts[1::2] = starts, ends
        # the edges in the order added (the longest path breaks ties by it): whole arrays,
        # and single edges gathered until the next arrays come
        self.edges: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.single: list[tuple[int, int, int, int]] = []
        self.cpu_rows = cpu
        self.blocking = {i for i, n in enumerate(table.names) if n in BLOCKING_CALLS}
        self.lo, self.hi = lo, hi
        self._launch_index: _Launches | None = None

    def _events_of(self, rows: np.ndarray, missing: int = -1) -> np.ndarray:
        """The event number of each table row in ``rows`` (``missing`` where the graph has
        no event for it)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(self.sorted_rows):
            return np.full(len(rows), missing, dtype=np.int64)
        pos = np.maximum(np.searchsorted(self.sorted_rows, rows, side="right") - 1, 0)
        return np.where(self.sorted_rows[pos] == rows, self.by_row[pos], missing)

    def _edge(self, u: int, v: int, kind: int, event: int) -> None:
        self.single.append((u, v, kind, event))

    def _edges(self, src: np.ndarray, dst: np.ndarray, kind: np.ndarray,
               event: np.ndarray) -> None:
        self._flush()
        self.edges.append((src, dst, kind, event))

    def _flush(self) -> None:
        if self.single:
            cols = np.array(self.single, dtype=np.int64).T
            self.edges.append((cols[0], cols[1], cols[2], cols[3]))
            self.single = []

    def cpu_edges(self) -> None:
        """Each thread's nesting walked depth first, as HTA's call-stack pass: every point
        (an event's start or end) is joined to the next point of its thread."""
        t = self.t
        rows = self.cpu_rows
        if not len(rows):
            return
        _, thread = np.unique(t.pid[rows] * (2**32) + (t.tid[rows] & 0xFFFFFFFF),
                              return_inverse=True)
        thread = thread.reshape(-1)
        order = np.lexsort((-t.dur_ns[rows], t.ts_ns[rows], thread))
        rows, thread = rows[order], thread[order]
        start = t.ts_ns[rows]
        end = start + t.dur_ns[rows]
        parent = parents(thread, start, end)
        depth = _depths(parent)
        k = self._events_of(rows)
        n = len(rows)
        # Depth-first order of the points: by thread and time; at one time, ends before
        # starts, deeper ends first, shallower starts first.
        p_thread = np.concatenate([thread, thread])
        p_time = np.concatenate([start, end])
        p_is_start = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
        p_depth = np.concatenate([depth, -depth])
        p_event = np.concatenate([np.arange(n), np.arange(n)])
        seq = np.lexsort((p_depth, p_is_start, p_time, p_thread))
        a, b = seq[:-1], seq[1:]
        same = p_thread[a] == p_thread[b]
        a, b = a[same], b[same]
        ea, eb = p_event[a], p_event[b]
        a_start, b_start = p_is_start[a], p_is_start[b]
        node_a = 2 * k[ea] + ~a_start
        node_b = 2 * k[eb] + ~b_start
        kind = np.full(len(a), OPERATOR, dtype=np.int64)
        kind[b_start & (depth[eb] == 0)] = DEPENDENCY
        blocking = np.isin(t.name[rows], np.fromiter(self.blocking, dtype=np.int64,
                                                     count=len(self.blocking)))
        kind[~b_start & blocking[eb]] = -1  # a blocking call's own span weighs nothing
        # the time is attributed as HTA does: from a start, to that event; to an end, to
        # that event; from an end to a start, to the parent of the starting event
        event = np.where(a_start, rows[ea], rows[eb])
        between = ~a_start & b_start
        par = parent[eb[between]]
        event[between] = np.where(par >= 0, rows[np.maximum(par, 0)], -1)
        event[kind == DEPENDENCY] = -1
        self._edges(node_a, node_b, kind, event)

    def gpu_edges(self) -> None:
        """HTA's kernel pass: activities in start order (syncs at their end); each follows
        the launch when its stream was idle, else the previous activity of its stream."""
        t, gpu = self.t, self.gpu
        act = self.act
        rows = gpu.row[act]
        launch = gpu.launch_row[act]
        q_launch, q_kernel = _queue_lengths(t, gpu)
        q_launch, q_kernel = q_launch[act], q_kernel[act]
        syncs = self._sync_rows()
        sync_call = _runtime_rows(t, t.correlation[syncs]) if len(syncs) else syncs
        # one processing order for activities and syncs, as HTA sorts them
        keys = np.concatenate([t.ts_ns[rows], t.ts_ns[syncs] + t.dur_ns[syncs]])
        position = np.empty(len(keys), dtype=np.int64)
        position[np.argsort(keys, kind="stable")] = np.arange(len(keys))
        pos_act, pos_sync = position[:len(rows)], position[len(rows):]
        k = self._events_of(rows)
        # each activity's predecessor on its (device, stream), in processing order
        _, group = np.unique(t.device[rows].astype(np.int64) * (2**40) + t.stream[rows],
                             return_inverse=True)
        group = group.reshape(-1)
        order = np.lexsort((pos_act, group))
        prev = np.full(len(rows), -1, dtype=np.int64)
        same = group[order[1:]] == group[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
        has_prev = prev >= 0
        prev_end = np.where(has_prev, self.node_ts[2 * k[np.maximum(prev, 0)] + 1], 0)
        waited = self._waited_for(rows)
        has_wait = waited >= 0
        wait_end = np.where(has_wait, self.node_ts[2 * k[np.maximum(waited, 0)] + 1], 0)
        idle = ((q_launch == 1) & (q_kernel == 0)
                & (~has_prev | (prev_end < t.ts_ns[np.maximum(launch, 0)]))
                & (~has_wait | (wait_end < t.ts_ns[np.maximum(launch, 0)])))
        gap = ~idle & has_prev & (~has_wait | (wait_end < prev_end))
        by_pos = np.argsort(pos_act, kind="stable")  # edges in HTA's order
        follows = np.where(idle, 2 * self._events_of(launch, 0), 2 * k[np.maximum(prev, 0)] + 1)
        src = np.stack([2 * k, 2 * k[np.maximum(waited, 0)] + 1, follows], axis=1)[by_pos]
        dst = np.stack([2 * k + 1, 2 * k, 2 * k], axis=1)[by_pos]
        kind = np.stack([np.full(len(k), OPERATOR), np.full(len(k), SYNC),
                         np.where(idle, LAUNCH, KERNEL_GAP)], axis=1)[by_pos]
        event = np.stack([rows, np.full(len(k), -1),
                          np.where(idle, -1, rows[np.maximum(prev, 0)])], axis=1)[by_pos]
        keep = np.stack([np.ones(len(k), bool), has_wait, idle | gap], axis=1)[by_pos]
        self._edges(src[keep], dst[keep], kind[keep], event[keep])
        self._sync_edges(syncs, sync_call, pos_sync, pos_act, group, order, k)

    def _waited_for(self, rows: np.ndarray) -> np.ndarray:
        """Per activity of the window (``rows``), the index in ``rows`` of the activity on
        another stream that a ``Stream Wait Event`` before it makes it wait for (-1).

        As HTA: the source is the activity launched last on the recorded stream (of the
        device) at or before the ``cudaEventRecord``; the waiter is the first activity the
        thread of the ``cudaStreamWaitEvent`` call launches on the waiting stream at or
        after the call. A later wait on the same activity replaces an earlier one."""
        t = self.t
        out = np.full(len(rows), -1, dtype=np.int64)
        wait_id = [i for i, n in enumerate(t.names) if n == STREAM_WAIT_EVENT]
        waits = np.array(sorted(r for r in t.event_waits if t.name[r] in wait_id),
                         dtype=np.int64)
        if not len(waits) or not len(rows):
            return out
        waits = waits[np.argsort(t.ts_ns[waits] + t.dur_ns[waits], kind="stable")]
        call_of = _runtime_rows(t, t.correlation[waits])
        launches = self._launches()
        act_row, call_ts = launches.act_row, launches.call_ts
        index_of = {r: i for i, r in enumerate(rows.tolist())}
        for w, wait_call in zip(waits.tolist(), call_of.tolist(), strict=True):
            stream = t.event_waits[w][0]
            waiting = int(t.tid[w])
            if wait_call < 0 or stream == waiting:
                continue
            source = self._recorded(w)
            after = launches.by_thread.get((int(t.pid[wait_call]), int(t.tid[wait_call]),
                                            waiting), [])
            j = int(np.searchsorted(call_ts[after], t.ts_ns[wait_call], side="left"))
            if source < 0 or j >= len(after):
                continue
            src = index_of.get(source)
            dst = index_of.get(int(act_row[after[j]]))
            end = t.ts_ns[w] + t.dur_ns[w]
            if src is None or dst is None or end >= t.ts_ns[rows[dst]]:
                continue  # outside the window, or met after the activity (HTA's order)
            out[dst] = src
        return out

    def _launches(self) -> _Launches:
        """The launched activities by launch time, indexed by stream and by thread."""
        if self._launch_index is None:
            t, gpu = self.t, self.gpu
            launched = np.flatnonzero(gpu.launch_row >= 0)
            act_row, call = gpu.row[launched], gpu.launch_row[launched]
            order = np.argsort(t.ts_ns[call], kind="stable")
            act_row, call = act_row[order], call[order]
            by_stream: dict[tuple[int, int], list[int]] = {}  # (device, stream) -> launches
            by_thread: dict[tuple[int, int, int], list[int]] = {}  # (pid, tid, stream)
            for i, (d, s, p, h) in enumerate(zip(t.device[act_row].tolist(),
                                                 t.stream[act_row].tolist(),
                                                 t.pid[call].tolist(), t.tid[call].tolist(),
                                                 strict=True)):
                by_stream.setdefault((d, s), []).append(i)
                by_thread.setdefault((p, h, s), []).append(i)
            records = np.flatnonzero((t.cat == Cat.RUNTIME) & np.isin(
                t.name, [i for i, n in enumerate(t.names) if n in EVENT_RECORDS]))
            record_of = dict(zip(t.correlation[records].tolist(), records.tolist(),
                                 strict=True))
            self._launch_index = _Launches(act_row, t.ts_ns[call], by_stream, by_thread,
                                           record_of)
        return self._launch_index

    def _recorded(self, wait: int) -> int:
        """The table row of the activity a wait (``Stream Wait Event``, ``Event Sync``) waits
        for: launched last on the recorded stream at or before the ``cudaEventRecord``
        (-1 when the record or the activity is not in the trace)."""
        t = self.t
        launches = self._launches()
        stream, record_corr = t.event_waits[wait]
        record = launches.record_of.get(record_corr)
        if record is None:
            return -1
        device = int(t.device[wait]) if t.device[wait] >= 0 else int(t.pid[wait])
        before = launches.by_stream.get((device, stream), [])
        i = int(np.searchsorted(launches.call_ts[before], t.ts_ns[record], side="right")) - 1
        return int(launches.act_row[before[i]]) if i >= 0 else -1

    def _sync_edges(self, syncs: np.ndarray, sync_call: np.ndarray, pos_sync: np.ndarray,
                    pos_act: np.ndarray, group: np.ndarray, order: np.ndarray,
                    k: np.ndarray) -> None:
        """From the last activity of every stream (Context Sync) or of its stream (Stream
        Sync) processed before the sync, or from the activity recorded before the event
        (Event Sync), to the end of the runtime call that waited."""
        t = self.t
        if not len(syncs) or not len(k):
            return
        call_node = self._events_of(sync_call)
        names = [t.names[int(x)] for x in t.name[syncs].tolist()]
        context = np.array([n == CONTEXT_SYNC for n in names])
        event = np.array([n == EVENT_SYNC for n in names])
        sync_stream = t.tid[syncs]
        act_stream = t.stream[self.gpu.row[self.act]]
        grouped_pos = pos_act[order]
        groups = group[order]
        bounds = np.searchsorted(groups, np.arange(group.max() + 2))
        first_seen = np.argsort([pos_act[order[bounds[g]]] for g in range(len(bounds) - 1)],
                                kind="stable")  # streams in the order HTA meets them
        per_sync: list[list[int]] = [[] for _ in range(len(syncs))]
        for g in first_seen.tolist():
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            last = np.searchsorted(grouped_pos[lo:hi], pos_sync) - 1
            stream = act_stream[order[lo]]
            for i in np.flatnonzero((last >= 0) & (call_node >= 0) & ~event
                                    & (context | (sync_stream == stream))).tolist():
                per_sync[i].append(2 * int(k[order[lo + last[i]]]) + 1)
        for i in np.flatnonzero(event & (call_node >= 0)).tolist():
            source = self._recorded(int(syncs[i]))
            node = int(self._events_of(np.array([source]))[0]) if source >= 0 else -1
            if node >= 0:  # HTA: only when the activity waited for is in the window
                per_sync[i].append(2 * node + 1)
        for i in np.argsort(pos_sync, kind="stable").tolist():
            for node in per_sync[i]:
                self._edge(node, 2 * int(call_node[i]) + 1, SYNC, -1)

    def _sync_rows(self) -> np.ndarray:
        t = self.t
        ids = [i for i, n in enumerate(t.names) if n in (CONTEXT_SYNC, STREAM_SYNC)]
        event_ids = [i for i, n in enumerate(t.names) if n == EVENT_SYNC]
        if not ids and not event_ids:
            return np.zeros(0, dtype=np.int64)
        rows = np.flatnonzero((t.cat == Cat.SYNC) & np.isin(t.name, ids))
        if event_ids:  # those that name the event they wait for
            waits = np.array(sorted(t.event_waits), dtype=np.int64)
            waits = waits[(t.cat[waits] == Cat.SYNC) & np.isin(t.name[waits], event_ids)] \
                if len(waits) else waits
            rows = np.sort(np.concatenate([rows, waits])).astype(np.int64)
        # a Context Sync or an Event Sync is a CPU-side event to HTA (no stream): it counts
        # when it starts in the window
        cpu_side = np.isin(t.name[rows], [i for i in ids if t.names[i] == CONTEXT_SYNC]
                           + event_ids)
        inside = (t.dur_ns[rows] > 0) & (t.ts_ns[rows] >= self.lo) & (t.ts_ns[rows] <= self.hi)
        return rows[~cpu_side | inside]

    def longest_path(self) -> PathGraph:
        n_nodes = len(self.node_ts)
        self._flush()
        src, dst, kind, event = (np.concatenate([e[i] for e in self.edges]).astype(t)
                                 if self.edges else np.zeros(0, t)
                                 for i, t in enumerate((np.int64, np.int64, np.int8, np.int64)))
        blocked = kind < 0  # a blocking call's own span: weight 0
        kind[blocked] = OPERATOR
        weight = self.node_ts[dst] - self.node_ts[src] if len(src) else np.zeros(0, np.int64)
        weight[blocked | (kind == DEPENDENCY) | (kind == SYNC)] = 0
        weight = np.maximum(weight, 0)  # a child ending a tick after its parent
        dist, path, path_edges = _longest(n_nodes, src, dst, weight, self.node_ts)
        node_row = np.repeat(self.event_row, 2)
        return PathGraph(node_row=node_row, node_ts=self.node_ts,
                         node_start=np.tile(np.array([True, False]), len(self.event_row)),
                         edge_src=src, edge_dst=dst, edge_weight=weight, edge_kind=kind,
                         edge_event=event, node_dist=dist, path=path, path_edges=path_edges)


def _depths(parent: np.ndarray) -> np.ndarray:
    """Number of ancestors of every node."""
    depth = np.zeros(len(parent), dtype=np.int64)
    ptr = parent.copy()
    live = np.flatnonzero(ptr >= 0)
    while len(live):
        depth[live] += 1
        ptr[live] = parent[ptr[live]]
        live = live[ptr[live] >= 0]
    return depth


def _runtime_rows(table: EventTable, correlation: np.ndarray) -> np.ndarray:
    """The runtime call with each correlation id (-1 when none)."""
    runtime = np.flatnonzero((table.cat == Cat.RUNTIME) & (table.correlation >= 0))
    out = np.full(len(correlation), -1, dtype=np.int64)
    if not len(runtime) or not len(correlation):
        return out
    rc = table.correlation[runtime]
    order = np.argsort(rc, kind="stable")
    pos = np.minimum(np.searchsorted(rc[order], correlation), len(order) - 1)
    hit = rc[order][pos] == correlation
    out[hit] = runtime[order[pos[hit]]]
    return out


def _queue_lengths(table: EventTable, gpu: GpuActivity) -> tuple[np.ndarray, np.ndarray]:
    """Outstanding activities on the stream just after each launch and just after each
    activity starts (HTA's queue length: +1 at a launch call, -1 at the activity's start);
    -1 for activities not launched by a launch call."""
    n = len(gpu)
    q_launch = np.full(n, -1, dtype=np.int64)
    q_kernel = np.full(n, -1, dtype=np.int64)
    launch = gpu.launch_row
    ids = np.array([i for i, name in enumerate(table.names) if name in LAUNCH_CALLS],
                   dtype=np.int64)
    sel = np.flatnonzero((launch >= 0) & np.isin(table.name[np.maximum(launch, 0)], ids))
    if not len(sel):
        return q_launch, q_kernel
    ts = np.concatenate([table.ts_ns[launch[sel]], table.ts_ns[gpu.row[sel]]])
    step = np.concatenate([np.ones(len(sel), np.int64), -np.ones(len(sel), np.int64)])
    rows = gpu.row[sel]
    device = np.concatenate([table.device[rows], table.device[rows]]).astype(np.int64)
    stream = np.concatenate([table.stream[rows], table.stream[rows]])
    who = np.concatenate([sel, sel])
    order = np.lexsort((ts, stream, device))
    level = np.cumsum(step[order])
    # restart the running sum at every (device, stream)
    d, s = device[order], stream[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (d[1:] != d[:-1]) | (s[1:] != s[:-1])
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    before = np.where(group_start > 0, level[group_start - 1], 0)
    level = level - before
    is_launch = step[order] > 0
    q_launch[who[order][is_launch]] = level[is_launch]
    q_kernel[who[order][~is_launch]] = level[~is_launch]
    return q_launch, q_kernel


def _longest(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
             node_ts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Longest path of the DAG, as networkx's ``dag_longest_path`` finds it on HTA's graph.

    Most nodes have one incoming edge, so chains are resolved at once by pointer jumping
    (each node's distance from the nearest node with zero or several incoming edges); only
    those anchors are visited one by one, in topological order. A node with several
    incoming edges takes the first best in the order the edges were added; the path ends
    at the first node of greatest length (the one its equals hang from).
    """
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    m = len(src)
    indeg = np.bincount(dst, minlength=n)
    single = np.flatnonzero(indeg[dst] == 1)  # edges into nodes with one incoming edge
    best = np.full(n, -1, dtype=np.int64)
    best[dst[single]] = single
    ptr = np.arange(n, dtype=np.int64)
    off = np.zeros(n, dtype=np.int64)
    ptr[dst[single]] = src[single]
    off[dst[single]] = weight[single]
    for _ in range(64):  # pointer jumping: chains halve every round
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        off = off + np.where(nxt != ptr, off[ptr], 0)
        ptr = nxt
    else:
        raise ValueError("the critical-path graph has a cycle")
    anchor_dist = np.zeros(n, dtype=np.int64)
    merges = np.flatnonzero(indeg >= 2)
    if len(merges):
        _resolve_merges(merges, src, dst, weight, ptr, off, anchor_dist, best, m)
    dist = anchor_dist[ptr] + off
    top = dist.max()
    tied = np.flatnonzero(dist == top)
    if len(tied) > 1:  # the first in topological order: the one not reached through another
        into = best[tied]
        entry = tied[(into < 0) | (dist[np.where(into >= 0, src[np.maximum(into, 0)], 0)] < top)]
        tied = entry if len(entry) else tied
        end = int(tied[np.argmin(node_ts[tied])])
    else:
        end = int(tied[0])
    path, edges = [end], []
    best_l, src_l = best.tolist(), src.tolist()
    while best_l[path[-1]] >= 0:
        e = best_l[path[-1]]
        edges.append(e)
        path.append(src_l[e])
    return dist, np.array(path[::-1], dtype=np.int64), np.array(edges[::-1], dtype=np.int64)


def _resolve_merges(merges: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
                    ptr: np.ndarray, off: np.ndarray, anchor_dist: np.ndarray,
                    best: np.ndarray, m: int) -> None:
    """Distances of the nodes with several incoming edges, in topological order of the
    graph reduced to anchors (their chains already resolved)."""
    into = np.flatnonzero(np.isin(dst, merges))  # edges into merge nodes, insertion order
    base = ptr[src[into]]  # the anchor each edge's chain starts from
    gain = off[src[into]] + weight[into]
    order = np.lexsort((into, dst[into]))
    into, base, gain = into[order], base[order], gain[order]
    target = dst[into]
    starts = np.searchsorted(target, merges)
    ends = np.searchsorted(target, merges, side="right")
    index = {int(v): i for i, v in enumerate(merges.tolist())}
    waits = [0] * len(merges)  # merge anchors each merge still waits for
    waiting: dict[int, list[int]] = {}
    base_l, into_l, gain_l = base.tolist(), into.tolist(), gain.tolist()
    for i in range(len(merges)):
        for p in range(int(starts[i]), int(ends[i])):
            j = index.get(base_l[p])
            if j is not None:
                waits[i] += 1
                waiting.setdefault(j, []).append(i)
    ready = [i for i in range(len(merges)) if waits[i] == 0]
    dist = anchor_dist.tolist()
    best_l = best.tolist()
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        v = int(merges[i])
        top, arg = -1, -1
        for p in range(int(starts[i]), int(ends[i])):
            d = dist[base_l[p]] + gain_l[p]
            if d > top:  # strictly: the first best edge in insertion order
                top, arg = d, into_l[p]
        dist[v], best_l[v] = top, arg
        for k in waiting.get(i, ()):
            waits[k] -= 1
            if waits[k] == 0:
                ready.append(k)
    if done != len(merges):
        raise ValueError("the critical-path graph has a cycle")
    anchor_dist[:] = dist
    best[:] = best_l


def recorded_waits(table: EventTable, gpu: GpuActivity) -> tuple[np.ndarray, dict[int, int]]:
    """The waits between streams and on events that this graph reads from the trace, for
    the whole trace: per GPU activity (index into ``gpu``), the table row of the activity on
    another stream that a ``Stream Wait Event`` makes it wait for (-1: none); and per
    ``Event Sync`` row, the table row of the activity it waits for (absent: not in the
    trace)."""
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    b = _Builder(table, gpu, lo, hi)
    rows = gpu.row[b.act]
    waited = b._waited_for(rows) if len(rows) else np.zeros(0, dtype=np.int64)
    out = np.full(len(gpu), -1, dtype=np.int64)
    has = waited >= 0
    out[b.act[has]] = rows[waited[has]]
    event_ids = {i for i, n in enumerate(table.names) if n == EVENT_SYNC}
    events: dict[int, int] = {}
    for r in sorted(table.event_waits):
        if int(table.name[r]) in event_ids and table.cat[r] == Cat.SYNC:
            source = b._recorded(r)
            if source >= 0:
                events[r] = source
    return out, events
