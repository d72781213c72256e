"""One rank's communication, summarized small enough to send anywhere: :class:`RankSummary`.

Each collective or point-to-point call the rank ran becomes a :class:`Call`: where it
ran (GPU kernel or the backend's CPU span), its process group and sequence number
there, its start and end, its message size, and the parts of it during which the
rank computed nothing (exposed). The cross-rank analysis (:mod:`.job_view`) reads only
these summaries and the steps, never the traces, so a job of thousands of ranks can
be summarized where its traces live and reduced elsewhere.

Which events are calls, and their type and size, :mod:`.comm_calls` says:

- GPU traces: communication kernels (NCCL/RCCL, symmetric memory, any kernel whose args
  name a collective). Their start is when the rank arrived on the device; they end
  when the collective ended there.
- CPU traces: the backend's spans (``gloo:all_reduce``, ``gloo:send``, ...), which
  run on the backend's threads from the moment the rank's work is picked up.

A call whose trace names no process group belongs to the default group (``"0"``). The
sequence number is the trace's ``Seq`` where recorded, else the call's position among
the group's calls of the same kind class (collectives, or point-to-point), which is
what every backend guarantees to be the same on every rank.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import numpy as np

from profiler_kit.analysis.core import intervals
from profiler_kit.analysis.core.arrays import dense_ids, distinct, member, percentile
from profiler_kit.analysis.core.classify import COMMUNICATION, classify_op
from profiler_kit.analysis.core.collective_kinds import P2P
from profiler_kit.analysis.core.launch_links import GpuActivity, attribute_gpu
from profiler_kit.analysis.core.op_tree import OpTree, build_op_tree
from profiler_kit.analysis.core.steps import Steps, analyze_steps
from profiler_kit.analysis.jobs.bandwidth import algbw_bytes_per_s, busbw_bytes_per_s, message_bytes
from profiler_kit.analysis.jobs.comm_calls import CallSource, cpu_calls, gpu_calls
from profiler_kit.analysis.jobs.comm_context import context_of, kernel_contexts, uses_ddp
from profiler_kit.trace.table import Cat, EventTable

SCHEMA = "profkit.rank-summary/1"
DEFAULT_GROUP = "0"  # torch's name for the default (world) process group
LEAD_IN_PIECES = 16  # pieces kept of each call's lead-in (the latest)


class Call(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One collective or point-to-point call on one rank (times on the rank's clock)."""

    kind: str  # bandwidth.collective_kind
    group: str  # process group name
    seq: int  # sequence number within the group (see the module docstring)
    start_ns: int
    end_ns: int
    size_bytes: int | None  # nccl-tests' message size; None when the trace does not say
    dtype: str | None
    step: int | None  # ProfilerStep number the call started in
    exposed: tuple[int, ...] = ()  # flattened [start, end) pairs with no computation beside
    context: str = ""  # what the call is for (comm_context: "ddp_gradient", "embedding", ...)


class Piece(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """What the rank did shortly before one of its calls (its lead-in), on its clock: a
    stretch of time in one range (the GPU computing work launched in it, or idle while
    the thread that runs the steps was in it), and how much of it the GPU computed."""

    call: int  # index into RankSummary.calls
    start_ns: int
    end_ns: int
    label: int  # index into RankSummary.labels; -1: no range (Python or untraced code)
    gpu_ns: int = 0  # of it, the GPU computing (kernels other than the calls)


class GroupInfo(msgspec.Struct, frozen=True):
    """A process group as the rank's trace describes it."""

    name: str
    ranks: tuple[int, ...] | None  # global ranks in group order; None when not recorded
    description: str | None = None


class RankStep(msgspec.Struct, frozen=True, array_like=True):
    number: int
    start_ns: int
    dur_ns: int  # CPU side: the ProfilerStep span
    device_dur_ns: int | None  # device side (analysis.steps); None without GPU activity
    device_start_ns: int | None = None
    # in the step's window (device side where there is one): computation (union; GPU
    # kernels other than communication, or CPU ops other than communication on the CPU)
    # and point-to-point calls (union)
    busy_ns: int = 0
    p2p_ns: int = 0


class KindTotal(msgspec.Struct, frozen=True):
    """One rank's calls of one collective type, as one trace alone can tell."""

    kind: str
    count: int
    size_bytes: int  # summed (calls of unknown size count 0)
    time_ns: int  # summed call durations (waiting included: one rank cannot tell)
    median_busbw_bytes_per_s: float | None  # over calls, with the call's own duration


class RankSummary(msgspec.Struct, frozen=True):
    """What one rank's trace says about its job's communication (small: no events)."""

    path: str
    label: str
    rank: int | None
    world_size: int | None
    backend: str | None
    host: str | None
    groups: tuple[GroupInfo, ...]
    on_device: bool  # calls are GPU kernels (else the backend's CPU spans)
    steps: tuple[RankStep, ...]
    window_start_ns: int
    window_end_ns: int
    calls: tuple[Call, ...]
    exposed_ns: int  # communication time with no computation beside it (union)
    kinds: tuple[KindTotal, ...] = ()  # per collective type, from this rank alone
    schema: str = SCHEMA
    # the latest LEAD_IN_PIECES pieces of each call's lead-in (from the end of the rank's
    # previous call to its start), named by the outermost range below ProfilerStep# on the
    # thread that runs the steps
    activity: tuple[Piece, ...] = ()
    labels: tuple[str, ...] = ()
    device_name: str | None = None  # the first GPU's name in deviceProperties


def summarize_rank(table: EventTable, label: str | None = None,
                   steps: Steps | None = None, tree: OpTree | None = None,
                   gpu: GpuActivity | None = None) -> RankSummary:
    """The rank summary of one trace (``steps``: its :func:`analyze_steps` with GPU
    attribution, ``tree`` and ``gpu`` its op tree and GPU attribution, if already known)."""
    meta = table.meta
    dist = meta.distributed_info or {}
    world = _int(dist.get("world_size"))
    groups = _groups(dist, world)
    group_ranks = {g.name: g.ranks for g in groups}
    if tree is None:
        tree = build_op_tree(table)
    if gpu is None:
        gpu = attribute_gpu(table, tree)
    sources = gpu_calls(table, tree, gpu)
    on_device = bool(sources)
    if not on_device:
        sources = cpu_calls(table)
    if steps is None:
        steps = analyze_steps(table, gpu)
    step_numbers = [s.number for s in steps.steps]
    step_starts = np.array([s.start_ns for s in steps.steps], dtype=np.int64)
    kernels_run = bool(len(table)) and bool((table.cat == Cat.KERNEL).any())
    compute = _computation(table, on_device or kernels_run,
                           np.array([c.row for c in sources if c.row >= 0], dtype=np.int64))
    calls: list[Call] = []
    counters: dict[tuple[str, bool], int] = {}
    arg_sizes: dict[str, int] = {}  # "Group size" of groups whose ranks are not recorded
    exposed_starts: list[np.ndarray] = []
    exposed_ends: list[np.ndarray] = []
    contexts = _contexts(table, tree, gpu, sources, on_device)
    for ev, context in zip(sources, contexts, strict=True):
        args = ev.group
        kind = ev.kind
        group = args.get("Process Group Name")
        group = str(group) if group is not None else DEFAULT_GROUP
        if group not in group_ranks:
            ranks = _rank_list(args.get("Process Group Ranks"))
            group_ranks[group] = ranks
            groups.append(GroupInfo(group, ranks, _str(args.get("Process Group Description"))))
        size_n = _int(args.get("Group size"))
        if size_n is not None:
            arg_sizes.setdefault(group, size_n)
        if size_n is None and group_ranks.get(group):
            size_n = len(group_ranks[group])  # type: ignore[arg-type]
        size = message_bytes(kind, ev.in_bytes, ev.out_bytes, size_n)
        seq = _int(args.get("Seq"))
        key = (group, kind in P2P)
        order = counters.get(key, 0)
        counters[key] = order + 1
        start, end = ev.start_ns, ev.start_ns + ev.dur_ns
        step = None
        if len(step_starts):
            i = int(np.searchsorted(step_starts, start, side="right")) - 1
            if i >= 0:
                step = step_numbers[i]
        pieces = _minus(start, end, compute)
        exposed_starts.append(pieces[0])
        exposed_ends.append(pieces[1])
        flat = tuple(np.column_stack(pieces).ravel().tolist())  # start, end, start, ...
        calls.append(Call(kind, group, seq if seq is not None else order, start, end, size,
                          ev.dtype, step, flat, context))
    if exposed_starts:
        exposed = intervals.length(np.concatenate(exposed_starts), np.concatenate(exposed_ends))
    else:
        exposed = 0
    if len(table):
        w0, w1 = int(table.ts_ns.min()), int((table.ts_ns + table.dur_ns).max())
    else:
        w0 = w1 = 0
    group_sizes = {**arg_sizes, **{g.name: len(g.ranks) for g in groups if g.ranks}}
    return RankSummary(
        path=str(meta.path),
        label=label or meta.trace_name or str(meta.path),
        rank=meta.rank,
        world_size=world,
        backend=_str(dist.get("backend")),
        host=_str(dist.get("host_name")) or meta.host_name,  # torch writes the top-level one
        groups=tuple(groups),
        on_device=on_device,
        steps=_rank_steps(steps, compute, _p2p_union(calls)),
        window_start_ns=w0,
        window_end_ns=w1,
        calls=tuple(calls),
        exposed_ns=exposed,
        kinds=kind_totals(calls, group_sizes),
        **_lead_ins(table, tree, gpu, calls, on_device,
                    np.array([c.row for c in sources if c.row >= 0], dtype=np.int64)),
        device_name=next((str(p["name"]) for p in meta.device_properties
                          if isinstance(p.get("name"), str)), None),
    )


def _contexts(table: EventTable, tree: OpTree, gpu: GpuActivity, sources: list[CallSource],
              on_device: bool) -> list[str]:
    """What each call is for (:mod:`.comm_context`); backend spans on the CPU run on the
    backend's threads, away from the ranges that called them: their type alone says."""
    if not on_device:
        ddp = uses_ddp(table)
        return [context_of(ev.kind, [], ddp) for ev in sources]
    idx = np.searchsorted(gpu.row, np.array([ev.row for ev in sources], dtype=np.int64))
    return kernel_contexts(table, tree, gpu, idx, [ev.kind for ev in sources])


def _lead_ins(table: EventTable, tree: OpTree, gpu: GpuActivity, calls: list[Call],
              on_device: bool, call_rows: np.ndarray) -> dict[str, Any]:
    """The latest pieces of what the rank did before each call (``activity``, ``labels``
    of RankSummary): from the end of its previous call (or the trace's start) to the
    call's start, the GPU computing (kernels other than the calls, named by the range the
    steps' thread was in when they were launched) or idle (named by the range that thread
    was in then). Ranges are the outermost below ``ProfilerStep#``."""
    if not calls or not len(tree):
        return {}
    level_s, level_e, level_name = _step_thread_level(table, tree)
    # the level's distinct names are the labels; each span's label index
    label_names, level_label = dense_ids(level_name) if len(level_name) else (
        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    level_label = level_label.reshape(-1).astype(np.int64)

    def label_of(at: np.ndarray) -> np.ndarray:
        """The label index of the range open at each time (-1: none)."""
        if not len(level_s):
            return np.full(len(at), -1, dtype=np.int64)
        i = np.searchsorted(level_s, at, side="right") - 1
        ok = (i >= 0) & (at < level_e[np.maximum(i, 0)])
        return np.where(ok, level_label[np.maximum(i, 0)], -1)

    # the lead-in windows: from the end of the rank's previous call to each call's start
    order = np.argsort(np.array([c.start_ns for c in calls], dtype=np.int64), kind="stable")
    starts = np.array([calls[i].start_ns for i in order.tolist()], dtype=np.int64)
    ends = np.array([calls[i].end_ns for i in order.tolist()], dtype=np.int64)
    t0 = int(table.ts_ns.min()) if len(table) else 0
    prev_end = np.maximum.accumulate(np.concatenate([[t0], ends[:-1]]))
    lo, hi = np.minimum(prev_end, starts), starts
    keep = hi > lo
    win_call, lo, hi = order[keep], lo[keep], hi[keep]
    if not len(lo):
        return {}
    # the GPU computing (kernels other than the calls), as disjoint pieces labelled by the
    # range the steps' thread was in when each was launched
    gs = ge = gl = np.zeros(0, dtype=np.int64)
    if on_device:
        kernel = np.flatnonzero(table.cat[gpu.row] == Cat.KERNEL)
        kernel = kernel[~member(gpu.row[kernel], call_rows)]
        k_s = table.ts_ns[gpu.row[kernel]]
        k_e = k_s + table.dur_ns[gpu.row[kernel]]
        launch = gpu.launch_row[kernel]
        launched_at = np.where(launch >= 0, table.ts_ns[np.maximum(launch, 0)], k_s)
        by_start = np.argsort(k_s, kind="stable")
        gs, ge, gl = _coverage(k_s[by_start], k_e[by_start], label_of(launched_at[by_start]))
    # every window cut wherever a GPU piece or a range starts or ends: each piece is the
    # GPU computing (its label) or idle (the range open then)
    cuts = distinct(np.concatenate([lo, hi, gs, ge, level_s, level_e]))
    left, right = cuts[:-1], cuts[1:]
    w = np.searchsorted(lo, left, side="right") - 1
    inside = (w >= 0) & (left < hi[np.maximum(w, 0)])
    left, right, w = left[inside], right[inside], w[inside]
    if not len(left):
        return {}
    g = np.searchsorted(gs, left, side="right") - 1
    computing = (g >= 0) & (left < ge[np.maximum(g, 0)]) if len(gs) else \
        np.zeros(len(left), dtype=bool)
    label = np.where(computing, gl[np.maximum(g, 0)] if len(gl) else -1, label_of(left))
    gpu_ns = np.where(computing, right - left, 0)
    # consecutive pieces of one window with the same label joined; the latest kept
    first = np.flatnonzero(np.concatenate([[True], (w[1:] != w[:-1])
                                           | (label[1:] != label[:-1])]))
    last = np.concatenate([first[1:], [len(left)]]) - 1
    mw, ms, me, ml = w[first], left[first], right[last], label[first]
    mg = np.add.reduceat(gpu_ns, first)
    latest = np.searchsorted(mw, mw, side="right") - np.arange(len(mw)) <= LEAD_IN_PIECES
    pieces = [Piece(int(c), s_, e_, l_, g_) for c, s_, e_, l_, g_ in zip(
        win_call[mw[latest]].tolist(), ms[latest].tolist(), me[latest].tolist(),
        ml[latest].tolist(), mg[latest].tolist(), strict=True)]
    names = table.names
    return {"activity": tuple(pieces), "labels": tuple(names[int(n)] for n in label_names)}


def _step_thread_level(table: EventTable, tree: OpTree
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outermost ranges below ``ProfilerStep#`` (or roots) on the thread that runs the
    steps (else the thread with the most CPU op time): starts, ends, name indices."""
    names = table.names
    step_ids = np.array([i for i, n in enumerate(names) if n.startswith("ProfilerStep#")],
                        dtype=np.int64)
    is_step = np.isin(table.name[tree.row], step_ids)
    if is_step.any():
        key = int(np.bincount(tree.thread[is_step]).argmax())
    else:
        key = int(np.bincount(tree.thread, weights=tree.end_ns - tree.start_ns).argmax())
    lo, hi = int(tree.thread_bounds[key]), int(tree.thread_bounds[key + 1])
    node = np.arange(lo, hi)
    parent = tree.parent[node]
    top = ~is_step[node] & ((parent < 0) | is_step[np.maximum(parent, 0)])
    node = node[top]
    s, e = tree.start_ns[node], tree.end_ns[node]
    name = table.name[tree.row[node]].astype(np.int64)
    if len(s) > 1:  # siblings: clip an overlap left by clock rounding
        s = np.concatenate([s[:1], np.maximum(s[1:], np.maximum.accumulate(e)[:-1])])
        keep = e > s
        s, e, name = s[keep], e[keep], name[keep]
    return s, e, name


def _coverage(s: np.ndarray, e: np.ndarray, label: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals sorted by start, as disjoint pieces: each keeps the part no earlier
    interval covers, with its own label."""
    if not len(s):
        return s, e, label
    reach = np.concatenate([[s[0]], np.maximum.accumulate(e)[:-1]])
    ps = np.maximum(s, reach)
    keep = e > ps
    return ps[keep], e[keep], label[keep]


def kind_totals(calls: list[Call], sizes: dict[str, int]) -> tuple[KindTotal, ...]:
    """Per collective type: count, bytes, time and median bus bandwidth from one rank
    (``sizes``: process group name -> its number of ranks)."""
    by_kind: dict[str, list[Call]] = {}
    for c in calls:
        by_kind.setdefault(c.kind, []).append(c)
    out = []
    for kind, calls in by_kind.items():
        bws = [bw for c in calls
               if (bw := busbw_bytes_per_s(kind, c.size_bytes, c.end_ns - c.start_ns,
                                           sizes.get(c.group))) is not None]
        out.append(KindTotal(kind, len(calls), sum(c.size_bytes or 0 for c in calls),
                             sum(c.end_ns - c.start_ns for c in calls),
                             percentile(np.asarray(bws, dtype=np.float64), 50) if bws else None))
    return tuple(sorted(out, key=lambda k: -k.time_ns))


def call_algbw(call: Call) -> float | None:
    return algbw_bytes_per_s(call.size_bytes, call.end_ns - call.start_ns)


def _computation(table: EventTable, on_device: bool, call_rows: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The union of the rank's computation: kernels other than the calls on the GPU, or
    non-communication CPU ops."""
    if on_device:
        rows = table.rows(Cat.KERNEL)
        rows = rows[~member(rows, call_rows)]
    else:
        rows = table.rows(Cat.CPU_OP)
        names = table.names
        comm = np.array([classify_op(n) == COMMUNICATION for n in names], dtype=bool)
        rows = rows[~comm[table.name[rows]]] if len(names) else rows
    starts = table.ts_ns[rows]
    return intervals.union(starts, starts + table.dur_ns[rows])


def _minus(start: int, end: int, busy: tuple[np.ndarray, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray]:
    """``[start, end)`` minus the disjoint sorted segments ``busy``, as segments."""
    s, e = busy
    lo = int(np.searchsorted(e, start, side="right"))
    hi = int(np.searchsorted(s, end, side="left"))
    cut_s, cut_e = s[lo:hi], e[lo:hi]
    bounds_s = np.concatenate([[start], np.minimum(cut_e, end)])
    bounds_e = np.concatenate([np.maximum(cut_s, start), [end]])
    keep = bounds_e > bounds_s
    return bounds_s[keep].astype(np.int64), bounds_e[keep].astype(np.int64)


def _rank_steps(steps: Steps, compute: tuple[np.ndarray, np.ndarray],
                p2p: tuple[np.ndarray, np.ndarray]) -> tuple[RankStep, ...]:
    """The steps, device side as :func:`analyze_steps` measures it (None on the CPU),
    with the computation and point-to-point time inside each step's window."""
    device = steps.device is not None
    out = []
    for s in steps.steps:
        lo, hi = (s.device_start_ns, s.device_start_ns + s.device_dur_ns) if device else (
            s.start_ns, s.start_ns + s.dur_ns)
        out.append(RankStep(s.number, s.start_ns, s.dur_ns,
                            s.device_dur_ns if device else None,
                            s.device_start_ns if device else None,
                            _clipped(compute, lo, hi), _clipped(p2p, lo, hi)))
    return tuple(out)


def _p2p_union(calls: list[Call]) -> tuple[np.ndarray, np.ndarray]:
    p2p = [c for c in calls if c.kind in P2P]
    return intervals.union(np.array([c.start_ns for c in p2p], dtype=np.int64),
                           np.array([c.end_ns for c in p2p], dtype=np.int64))


def _clipped(segments: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> int:
    """Length of the disjoint sorted ``segments`` inside ``[lo, hi)``."""
    s, e = segments
    a = int(np.searchsorted(e, lo, side="right"))
    b = int(np.searchsorted(s, hi, side="left"))
    if a >= b:
        return 0
    return int((np.minimum(e[a:b], hi) - np.maximum(s[a:b], lo)).sum())


def _groups(dist: dict[str, Any], world: int | None) -> list[GroupInfo]:
    out = []
    config = dist.get("pg_config")
    if isinstance(config, list):
        for pg in config:
            if not isinstance(pg, dict) or pg.get("pg_name") is None:
                continue
            ranks = pg.get("ranks")
            rk = (tuple(r for r in ranks if isinstance(r, int))
                  if isinstance(ranks, list) else None)
            out.append(GroupInfo(str(pg["pg_name"]), rk, _str(pg.get("pg_desc"))))
    if not any(g.name == DEFAULT_GROUP for g in out) and world:
        out.insert(0, GroupInfo(DEFAULT_GROUP, tuple(range(world)), "default_pg"))
    return out


def _rank_list(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list) and all(isinstance(r, int) for r in value):
        return tuple(value)
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None

