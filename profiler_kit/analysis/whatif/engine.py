"""The replay: the graph's work laid out again, each wait recomputed from its dependencies.

Each host thread keeps its events in recorded order; an event moves by what changed
before it on its thread, as a monotone warp of the thread's clock made of knots: a
blocking call (or a launch call held by a full launch queue) that now ends earlier or
later, time a change removes (an interval that collapses to a point) or adds, a burst of
work that starts on the clock of the thread that woke it, an event that waited for such
a burst. GPU activities, blocking calls and those handoffs are visited once, in the
order they happened (a Python loop over them only: a few thousand per trace); CPU
events are warped afterwards, all at once.
"""

from __future__ import annotations

import numpy as np

from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.whatif.graph import Graph

_INF = 1 << 62
_NONE = -(1 << 62)
# item kinds, in the order they run at one time: knots, then activities, then calls
_KNOT, _WAKE, _JOIN, _INSERT, _REMOVE, _ACT, _SYNC = range(7)


class Edits:
    """What a change does to the graph: activity durations, streams, cross-stream waits
    and fixed delays; which blocking calls still wait; host time removed (per thread, an
    interval that collapses to its start) or added (at a point). Changes edit one in turn."""

    def __init__(self, g: Graph) -> None:
        self.dur = g.dur.copy()
        self.stream = g.stream.copy()
        self.wait = g.wait.copy()
        self.delay = g.delay.copy()
        self.gap = g.gap.copy()
        self.sync_blocks = g.sync_waits.copy()
        self.sync_own = g.sync_own.copy()
        self.sync_delay = g.sync_delay.copy()
        self.removals: list[tuple[int, int, int]] = []  # (thread, start, end)
        self.insertions: list[tuple[int, int, int]] = []  # (thread, at, ns)
        self.n_streams = len(g.streams)
        self.sync_streams = list(g.sync_streams)
        self.notes: list[str] = []

    def unchanged(self, g: Graph) -> bool:
        """Whether the changes left the graph as recorded (the replay is the unchanged
        one: a change that found nothing to change costs no second replay)."""
        return (not self.removals and not self.insertions
                and self.n_streams == len(g.streams)
                and self.sync_streams == list(g.sync_streams)
                and all(np.array_equal(mine, g_own) for mine, g_own in (
                    (self.dur, g.dur), (self.stream, g.stream), (self.wait, g.wait),
                    (self.delay, g.delay), (self.gap, g.gap), (self.sync_blocks, g.sync_waits),
                    (self.sync_own, g.sync_own), (self.sync_delay, g.sync_delay))))


class Times:
    """Replayed times: activities in the graph's order, CPU events in ``cpu_row`` order."""

    def __init__(self, act_start: np.ndarray, act_end: np.ndarray, cpu_start: np.ndarray,
                 cpu_end: np.ndarray) -> None:
        self.act_start, self.act_end = act_start, act_end
        self.cpu_start, self.cpu_end = cpu_start, cpu_end


def recorded(g: Graph, table_ts: np.ndarray, table_dur: np.ndarray) -> Times:
    """The recorded times, in the replay's layout."""
    return Times(g.start, g.start + g.dur, table_ts[g.cpu_row],
                 table_ts[g.cpu_row] + table_dur[g.cpu_row])


def _merged_removals(e: Edits) -> dict[int, list[tuple[int, int]]]:
    """Per thread, the union of the removed intervals."""
    out: dict[int, list[tuple[int, int]]] = {}
    for th, a, b in sorted(e.removals):
        if b <= a or th < 0:
            continue
        spans = out.setdefault(th, [])
        if spans and a < spans[-1][1]:  # overlapping (touching ones stay apart)
            spans[-1] = (spans[-1][0], max(spans[-1][1], b))
        else:
            spans.append((a, b))
    return out


def _inside(spans: list[tuple[int, int]], t: int, strict: bool = False) -> bool:
    """Whether ``t`` lies in one of the sorted, disjoint ``spans`` (after its start, with
    ``strict``)."""
    lo, hi = 0, len(spans)
    while lo < hi:
        mid = (lo + hi) // 2
        if spans[mid][1] <= t:
            lo = mid + 1
        else:
            hi = mid
    if lo == len(spans):
        return False
    return spans[lo][0] < t < spans[lo][1] if strict else spans[lo][0] <= t < spans[lo][1]


def simulate(g: Graph, e: Edits, table_ts: np.ndarray, table_dur: np.ndarray) -> Times:
    """Replay ``g`` as ``e`` edits it."""
    n, m = len(g.act), len(g.sync_row)
    removals = _merged_removals(e)
    keys: list[np.ndarray] = []
    kinds: list[np.ndarray] = []
    idxs: list[np.ndarray] = []
    # activities, by issue: the launch call's start (or their own start, unlinked)
    keys.append(g.key)
    kinds.append(np.full(n, _ACT))
    idxs.append(np.arange(n))
    # blocking calls not inside removed host time
    sync_keep = np.array([not _inside(removals.get(int(th), []), int(st))
                          for th, st in zip(g.sync_thread.tolist(), g.sync_start.tolist(),
                                            strict=True)], dtype=bool) if m else \
        np.zeros(0, dtype=bool)
    keep = np.flatnonzero(sync_keep)
    keys += [g.sync_start[keep], g.sync_end[keep]]
    kinds += [np.full(len(keep), _SYNC), np.full(len(keep), _KNOT)]
    idxs += [keep, keep]  # a sync's end knot is pending[sync index]
    # removals and insertions (indices into these lists, past the syncs' pending slots)
    rem = [(th, a, b) for th, spans in removals.items() for a, b in spans]
    ins = [(th, x, c) for th, x, c in e.insertions
           if th >= 0 and not _inside(removals.get(th, []), x, strict=True)]
    if rem:
        r_a = np.array([r[1] for r in rem], dtype=np.int64)
        r_b = np.array([r[2] for r in rem], dtype=np.int64)
        keys += [r_a, r_b]
        kinds += [np.full(len(rem), _REMOVE), np.full(len(rem), _KNOT)]
        idxs += [m + np.arange(len(rem)), m + np.arange(len(rem))]
    if ins:
        keys.append(np.array([x for _, x, _ in ins], dtype=np.int64))
        kinds.append(np.full(len(ins), _INSERT))
        idxs.append(np.arange(len(ins)))
    # handoffs between threads: a burst starts on its waker's clock; the waker's event that
    # waits for it ends on the burst's clock
    nb = len(g.burst_thread)
    if nb:
        keys.append(g.burst_start)
        kinds.append(np.full(nb, _WAKE))
        idxs.append(np.arange(nb))
        joins = np.flatnonzero(g.burst_join_end >= 0)
        joins = np.array([j for j in joins.tolist() if not _inside(
            removals.get(int(g.burst_waker[j]), []), int(g.burst_join_end[j]))], dtype=np.int64)
        keys.append(g.burst_join_end[joins])
        kinds.append(np.full(len(joins), _JOIN))
        idxs.append(joins)
    key = np.concatenate(keys)
    kind = np.concatenate(kinds)
    idx = np.concatenate(idxs)
    order = np.lexsort((kind, key))

    n_threads = max(len(g.threads), 1)
    kx = [g.t0] * n_threads
    ky = [g.t0] * n_threads
    kc = [_INF] * n_threads
    k_thread: list[int] = []
    k_x: list[int] = []
    k_y: list[int] = []
    k_c: list[int] = []

    def knot(th: int, x: int, y: int, c: int) -> None:
        """From recorded time ``x`` on, thread ``th``'s clock reads ``y`` and runs for
        ``c`` (then stands still until the next knot)."""
        kx[th], ky[th], kc[th] = x, y, c
        k_thread.append(th)
        k_x.append(x)
        k_y.append(y)
        k_c.append(c)

    def edited(mine: np.ndarray, name: str) -> list[int]:
        """An edited array as a list: the graph's own where the changes left it as built."""
        return g.listed(name) if np.array_equal(mine, getattr(g, name)) else mine.tolist()

    pending = [0] * (m + len(rem))
    pend_thread = g.listed("sync_thread") + [r[0] for r in rem]
    pend_x = g.listed("sync_end") + [r[2] for r in rem]

    # one tuple per activity: one lookup in the loop instead of one per field
    acts = list(zip(g.listed("thread"), g.listed("launch_ts"), g.listed("latency"),
                    g.listed("queue_prev"), edited(e.stream, "stream"), edited(e.gap, "gap"),
                    edited(e.wait, "wait"), edited(e.delay, "delay"), edited(e.dur, "dur"),
                    g.listed("start"), strict=True))
    new_start = [0] * n
    new_end = [0] * n
    stream_end = [_NONE] * e.n_streams
    s_thread, s_start, s_wake, s_act = (g.listed(a) for a in (
        "sync_thread", "sync_start", "sync_wake", "sync_act"))
    s_own = edited(e.sync_own, "sync_own")
    s_delay = edited(e.sync_delay, "sync_delay")
    s_blocks = edited(e.sync_blocks, "sync_waits")
    s_streams = e.sync_streams
    q_wake, c_own, c_end, c_dur, c_blocked = (g.listed(a) for a in (
        "queue_wake", "call_own", "call_end", "call_dur", "call_blocked"))
    b_thread, b_start, b_end, b_waker, b_join, b_floor, b_join_floor = (g.listed(a) for a in (
        "burst_thread", "burst_start", "burst_end", "burst_waker", "burst_join_end",
        "burst_floor", "burst_join_floor"))

    for k, i in zip(kind[order].tolist(), idx[order].tolist(), strict=True):
        if k == _ACT:
            th, t, lat, q, s, gap, w, delay, dur, rec = acts[i]
            ready = _NONE
            if th >= 0:
                d = t - kx[th]
                c = kc[th]
                ns = ky[th] + (d if d < c else c)
                ready = ns + lat
                # the launch call waits for room in the launch queue (not one whose host
                # time a change removed: c == 0 while the thread's clock stands still)
                if q >= 0 and c != 0:
                    ret = max(ns + c_own[i], new_end[q] + q_wake[i])
                    if c_blocked[i] or ret > ns + c_dur[i]:
                        ce = c_end[i]
                        kx[th], ky[th], kc[th] = ce, ret, _INF
                        k_thread += (th, th)
                        k_x += (t, ce)
                        k_y += (ns, ret)
                        k_c += (ret - ns, _INF)
            pe = stream_end[s]
            if pe != _NONE:
                pe += gap
                if pe > ready:
                    ready = pe
            if w >= 0 and new_end[w] > ready:
                ready = new_end[w]
            if ready == _NONE:
                ready = rec
            ready += delay
            new_start[i] = ready
            end = ready + dur
            new_end[i] = end
            stream_end[s] = end
        elif k == _SYNC:
            th = s_thread[i]
            st = s_start[i]
            ns = ky[th] + min(st - kx[th], kc[th])
            ne = ns + s_own[i]
            if s_blocks[i]:
                a = s_act[i]
                if a >= 0:
                    target = new_end[a]
                else:
                    target = max((stream_end[s] for s in s_streams[i]), default=_NONE)
                if target != _NONE:
                    ne = max(ne, target + s_wake[i]) + s_delay[i]
            knot(th, st, ns, ne - ns)
            pending[i] = ne
        elif k == _KNOT:
            th, x, y = pend_thread[i], pend_x[i], pending[i]
            knot(th, x, y, _INF)
        elif k == _REMOVE:
            th, a = rem[i - m][0], rem[i - m][1]
            y = ky[th] + min(a - kx[th], kc[th])
            knot(th, a, y, 0)
            pending[i] = y
        elif k == _WAKE:
            th, x, a = b_thread[i], b_start[i], b_waker[i]
            y = ky[a] + min(x - kx[a], kc[a])
            f = b_floor[i]  # not before the thread's own previous work ends
            if f >= 0:
                y = max(y, ky[th] + max(0, min(f - kx[th], kc[th])))
            knot(th, x, y, _INF)
        elif k == _JOIN:
            b, th, x = b_thread[i], b_waker[i], b_join[i]
            be = b_end[i]
            y = ky[b] + min(be - kx[b], kc[b]) + (x - be)
            f = b_join_floor[i]  # not before the joining event starts, nor its thread's work
            y = max(y, ky[th] + max(0, min(f - kx[th], kc[th])))
            knot(th, x, y, _INF)
        else:  # _INSERT
            th, x, c = ins[i]
            y = ky[th] + min(x - kx[th], kc[th]) + c
            knot(th, x, y, _INF)

    cpu_start = table_ts[g.cpu_row].copy()
    cpu_end = cpu_start + table_dur[g.cpu_row]
    if k_thread:
        kt = np.array(k_thread, dtype=np.int64)
        korder = np.lexsort((np.arange(len(kt)), kt))
        kt = kt[korder]
        kxa = np.array(k_x, dtype=np.int64)[korder]
        kya = np.array(k_y, dtype=np.int64)[korder]
        kca = np.array(k_c, dtype=np.int64)[korder]
        bounds = np.searchsorted(kt, np.arange(n_threads + 1))
        by_thread = np.argsort(g.cpu_thread, kind="stable")
        t_bounds = np.searchsorted(g.cpu_thread[by_thread], np.arange(n_threads + 1))
        for th in distinct(kt).tolist():
            lo, hi = int(bounds[th]), int(bounds[th + 1])
            xs, ys, cs = kxa[lo:hi], kya[lo:hi], kca[lo:hi]
            rows = by_thread[t_bounds[th]:t_bounds[th + 1]]
            for arr in (cpu_start, cpu_end):
                t = arr[rows]
                j = np.searchsorted(xs, t, side="right") - 1
                jj = np.maximum(j, 0)
                arr[rows] = np.where(j >= 0, ys[jj] + np.minimum(t - xs[jj], cs[jj]), t)
    return Times(np.array(new_start, dtype=np.int64), np.array(new_end, dtype=np.int64),
                 cpu_start, cpu_end)


def step_times(g: Graph, t: Times) -> tuple[np.ndarray, int]:
    """Each step's time as profkit reports it (the device side on GPU traces: from where the
    previous step ended on the device, or its CPU start if later, to the last end of the GPU
    work launched in it, or its CPU end if later; else its CPU span) and the whole window
    (first start to last end of every CPU event and GPU activity)."""
    starts = [t.cpu_start] if len(t.cpu_start) else []
    ends = [t.cpu_end] if len(t.cpu_end) else []
    if len(t.act_start):
        starts.append(t.act_start)
        ends.append(t.act_end)
    window = int(max(x.max() for x in ends) - min(x.min() for x in starts)) if starts else 0
    k = len(g.step_row)
    if not k:
        return np.array([window], dtype=np.int64), window
    pos = np.searchsorted(g.cpu_row, g.step_row)
    s_start, s_end = t.cpu_start[pos], t.cpu_end[pos]
    if g.headline != "device":
        return (s_end - s_start).astype(np.int64), window
    linked = g.act_step >= 0
    first = np.full(k, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(k, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, g.act_step[linked], t.act_start[linked])
    np.maximum.at(last, g.act_step[linked], t.act_end[linked])
    counts = np.bincount(g.act_step[linked], minlength=k)
    order = np.argsort(g.step_number, kind="stable")
    prev_end = int(s_start[order[0]])
    if counts[order[0]]:
        before = t.act_end[~linked]
        before = before[before < first[order[0]]]
        if len(before):
            prev_end = max(prev_end, int(before.max()))
    out = np.zeros(k, dtype=np.int64)
    for i in order.tolist():
        start, stop = int(s_start[i]), int(s_end[i])
        d_start = max(prev_end, start)
        d_end = max(stop, int(last[i]) if counts[i] else d_start, d_start)
        out[i] = d_end - d_start
        prev_end = d_end
    return out, window


def gpu_ends(g: Graph, t: Times) -> np.ndarray:
    """Per step (the whole window without steps), the last end of the GPU work launched in
    it (every GPU activity, without steps); -1 where it launched none."""
    k = len(g.step_row)
    if not k:
        return np.array([int(t.act_end.max()) if len(t.act_end) else -1], dtype=np.int64)
    out = np.full(k, -1, dtype=np.int64)
    linked = g.act_step >= 0
    np.maximum.at(out, g.act_step[linked], t.act_end[linked])
    return out
