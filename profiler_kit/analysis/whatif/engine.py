"""The replay: the graph's work laid out again, each wait recomputed from its dependencies.

Each host thread keeps its events in recorded order; an event moves by what changed
before it on its thread, as a monotone warp of the thread's clock made of knots: a
blocking call (or a launch call held by a full launch queue) that now ends earlier or
later, time a change removes (an interval that collapses to a point) or adds, a burst of
work that starts on the clock of the thread that woke it, an event that waited for such
a burst. Everything happens in the order it was issued: a Python loop visits the items
that read what the replay has computed so far (blocking calls, activities that wait on
another, handoffs: a few hundred per trace); the activities between two visits go at
once (:class:`_Runs`), and so do the spans a change removes (:class:`_Removals`); CPU
events are warped afterwards, all at once. Integers throughout: the times are those of
visiting every item in turn.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import numpy as np

from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.note import Note
from profiler_kit.analysis.whatif.graph import Graph

_INF = 1 << 62
_NONE = -(1 << 62)
# item kinds, in the order they run at one time: knots, then activities, then calls
_KNOT, _WAKE, _JOIN, _INSERT, _REMOVE, _ACT, _SYNC = range(7)
_SHORT_RUN = 32  # activities a run replays one by one (fewer than numpy's fixed costs)


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
        self.removed_spans: list[np.ndarray] = []  # (thread, start, end) rows (remove())
        self.insertions: list[tuple[int, int, int]] = []  # (thread, at, ns)
        self.n_streams = len(g.streams)
        self.sync_streams = list(g.sync_streams)
        self.notes: list[Note] = []  # what each change touched

    def remove(self, thread: int | np.ndarray, start: Sequence[int] | np.ndarray,
               end: Sequence[int] | np.ndarray) -> None:
        """Remove the host time [start, end) of ``thread`` (one, or one per span)."""
        spans = np.empty((len(start), 3), dtype=np.int64)
        spans[:, 0], spans[:, 1], spans[:, 2] = thread, start, end
        self.removed_spans.append(spans)

    def unchanged(self, g: Graph) -> bool:
        """Whether the changes left the graph as recorded (the replay is the unchanged
        one: a change that found nothing to change costs no second replay)."""
        return (not any(len(r) for r in self.removed_spans) and not self.insertions
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


def _merged_removals(e: Edits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per thread, the union of the removed intervals (overlapping ones merge, touching
    ones stay apart): the spans' threads, starts and ends, by thread and start."""
    th, a, b = np.concatenate([np.zeros((0, 3), dtype=np.int64), *e.removed_spans]).T
    keep = (b > a) & (th >= 0)
    th, a, b = th[keep], a[keep], b[keep]
    order = np.lexsort((b, a, th))
    th, a, b = th[order], a[order], b[order]
    if not len(th):
        return th, a, b
    # an interval starts a new span where it begins at or after every earlier end of its
    # thread (the running maximum restarts with each thread)
    reach = b.copy()
    first = np.ones(len(th), dtype=bool)
    first[1:] = th[1:] != th[:-1]
    bounds = np.flatnonzero(first)
    for lo, hi in zip(bounds.tolist(), bounds[1:].tolist() + [len(th)], strict=True):
        np.maximum.accumulate(reach[lo:hi], out=reach[lo:hi])
    new = first.copy()
    new[1:] |= a[1:] >= reach[:-1]
    starts = np.flatnonzero(new)
    return th[starts], a[starts], np.maximum.reduceat(b, starts)


def _inside(spans: tuple[np.ndarray, np.ndarray, np.ndarray], threads: np.ndarray,
            times: np.ndarray, strict: bool = False) -> np.ndarray:
    """Whether each time lies in a removed span of its thread (after the span's start,
    with ``strict``); ``spans`` as :func:`_merged_removals` gives them."""
    th, a, b = spans
    out = np.zeros(len(times), dtype=bool)
    if not len(th) or not len(times):
        return out
    threads, times = np.asarray(threads, dtype=np.int64), np.asarray(times, dtype=np.int64)
    for h in distinct(threads).tolist():
        lo, hi = np.searchsorted(th, [h, h + 1])
        if lo == hi:
            continue
        sel = np.flatnonzero(threads == h)
        t = times[sel]
        j = lo + np.searchsorted(b[lo:hi], t, side="right")  # the first span ending after
        ok = j < hi
        jj = np.minimum(j, hi - 1)
        after = a[jj] < t if strict else a[jj] <= t
        out[sel] = ok & after & (t < b[jj])
    return out


def simulate(g: Graph, e: Edits, table_ts: np.ndarray, table_dur: np.ndarray) -> Times:
    """Replay ``g`` as ``e`` edits it.

    The loop visits blocking calls, knots, handoffs and the activities that wait on
    another one (a launch queue slot, a recorded event); the other activities are
    replayed in runs between those visits (:class:`_Runs`), and removed host time becomes
    knots where a clock is read (:class:`_Removals`)."""
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
    keep = np.flatnonzero(~_inside(removals, g.sync_thread, g.sync_start))
    keys += [g.sync_start[keep], g.sync_end[keep]]
    kinds += [np.full(len(keep), _SYNC), np.full(len(keep), _KNOT)]
    idxs += [keep, keep]  # a sync's end knot is pending[sync index]
    # removals and insertions (indices into these lists, past the syncs' pending slots)
    r_thread, r_a, r_b = removals
    n_rem = len(r_thread)
    ins = [x for x in e.insertions if x[0] >= 0]
    if ins:
        out = _inside(removals, [x[0] for x in ins], [x[1] for x in ins], strict=True)
        ins = [x for x, gone in zip(ins, out.tolist(), strict=True) if not gone]
    if n_rem:
        keys += [r_a, r_b]
        kinds += [np.full(n_rem, _REMOVE), np.full(n_rem, _KNOT)]
        idxs += [m + np.arange(n_rem), m + np.arange(n_rem)]
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
        joins = joins[~_inside(removals, g.burst_join_thread[joins], g.burst_join_end[joins])]
        keys.append(g.burst_join_end[joins])
        kinds.append(np.full(len(joins), _JOIN))
        idxs.append(joins)
    key = np.concatenate(keys)
    kind = np.concatenate(kinds)
    idx = np.concatenate(idxs)
    order = np.lexsort((kind, key))
    kind, idx = kind[order], idx[order]
    # the activities replayed in runs: those that wait on no other activity
    is_act = kind == _ACT
    waits_on = np.zeros(n, dtype=bool) if not n else (e.wait >= 0) | (g.queue_prev >= 0)
    in_runs = is_act.copy()
    in_runs[is_act] = ~waits_on[idx[is_act]]
    # removed host time becomes knots only where a clock is read (_Removals)
    of_removal = (kind == _REMOVE) | ((kind == _KNOT) & (idx >= m))
    visited = np.flatnonzero(~in_runs & ~of_removal)

    n_threads = max(len(g.threads), 1)
    kx = [g.t0] * n_threads
    ky = [g.t0] * n_threads
    kc = [_INF] * n_threads
    # each thread's knots, in the order made, with the position in the visiting order of
    # the item that made them (the runs' lookup); the first is the clock the replay
    # starts from
    t_pos: list[list[int]] = [[-1] for _ in range(n_threads)]
    t_x: list[list[int]] = [[g.t0] for _ in range(n_threads)]
    t_y: list[list[int]] = [[g.t0] for _ in range(n_threads)]
    t_c: list[list[int]] = [[_INF] for _ in range(n_threads)]

    def knot(th: int, x: int, y: int, c: int, pos: int) -> None:
        """From recorded time ``x`` on, thread ``th``'s clock reads ``y`` and runs for
        ``c`` (then stands still until the next knot)."""
        kx[th], ky[th], kc[th] = x, y, c
        t_pos[th].append(pos)
        t_x[th].append(x)
        t_y[th].append(y)
        t_c[th].append(c)

    def edited(mine: np.ndarray, name: str) -> list[int]:
        """An edited array as a list: the graph's own where the changes left it as built."""
        return g.listed(name) if np.array_equal(mine, getattr(g, name)) else mine.tolist()

    pending = [0] * m
    pend_thread = g.listed("sync_thread")
    pend_x = g.listed("sync_end")
    removed = _Removals(removals, of_removal, kind, idx, m, (kx, ky, kc),
                        (t_pos, t_x, t_y, t_c))
    advance = removed.advance
    every_thread = removed.threads

    new_start = np.zeros(n, dtype=np.int64)
    new_end = np.zeros(n, dtype=np.int64)
    stream_end = [_NONE] * e.n_streams
    a_thread, a_launch, a_latency, a_queue, a_stream, a_gap, a_wait, a_delay, a_dur, a_rec = (
        g.listed("thread"), g.listed("launch_ts"), g.listed("latency"), g.listed("queue_prev"),
        edited(e.stream, "stream"), edited(e.gap, "gap"), edited(e.wait, "wait"),
        edited(e.delay, "delay"), edited(e.dur, "dur"), g.listed("start"))
    runs = _Runs(g, e, idx, in_runs, new_start, new_end, stream_end, (t_pos, t_x, t_y, t_c),
                 (a_thread, a_launch, a_latency, a_stream, a_gap, a_delay, a_dur, a_rec))
    place = runs.place
    s_thread, s_start, s_wake, s_act = (g.listed(a) for a in (
        "sync_thread", "sync_start", "sync_wake", "sync_act"))
    s_own = edited(e.sync_own, "sync_own")
    s_delay = edited(e.sync_delay, "sync_delay")
    s_blocks = edited(e.sync_blocks, "sync_waits")
    s_streams = e.sync_streams
    q_wake, c_own, c_end, c_dur, c_blocked = (g.listed(a) for a in (
        "queue_wake", "call_own", "call_end", "call_dur", "call_blocked"))
    b_thread, b_start, b_end, b_waker, b_join, b_joiner, b_floor, b_join_floor = (
        g.listed(a) for a in ("burst_thread", "burst_start", "burst_end", "burst_waker",
                              "burst_join_end", "burst_join_thread", "burst_floor",
                              "burst_join_floor"))

    def runs_before(pos: int) -> None:
        """The run activities before visiting ``pos``; every thread's removed spans before
        it are made first (the runs read the knots)."""
        if runs.next_pos < pos:
            for h in every_thread:
                advance(h, pos)
            runs.upto(pos)

    for pos, k, i in zip(visited.tolist(), kind[visited].tolist(), idx[visited].tolist(),
                         strict=True):
        if k == _ACT:  # waits on another activity: the runs before it first
            runs_before(pos)
            th, t = a_thread[i], a_launch[i]
            if every_thread:
                advance(th, pos)
            ready = _NONE
            if th >= 0:
                d = t - kx[th]
                c = kc[th]
                ns = ky[th] + (d if d < c else c)
                ready = ns + a_latency[i]
                # the launch call waits for room in the launch queue (not one whose host
                # time a change removed: c == 0 while the thread's clock stands still)
                q = a_queue[i]
                if q >= 0 and c != 0:
                    ret = max(ns + c_own[i], int(new_end[q]) + q_wake[i])
                    if c_blocked[i] or ret > ns + c_dur[i]:
                        knot(th, t, ns, ret - ns, pos)
                        knot(th, c_end[i], ret, _INF, pos)
            w = a_wait[i]
            if w >= 0 and new_end[w] > ready:
                ready = int(new_end[w])
            place(i, ready)
        elif k == _SYNC:
            runs_before(pos)
            th = s_thread[i]
            advance(th, pos)
            st = s_start[i]
            ns = ky[th] + min(st - kx[th], kc[th])
            ne = ns + s_own[i]
            if s_blocks[i]:
                a = s_act[i]
                if a >= 0:
                    target = int(new_end[a])
                else:
                    target = max((stream_end[s] for s in s_streams[i]), default=_NONE)
                if target != _NONE:
                    ne = max(ne, target + s_wake[i]) + s_delay[i]
            knot(th, st, ns, ne - ns, pos)
            pending[i] = ne
        elif k == _KNOT:  # a blocking call's end
            th = pend_thread[i]
            advance(th, pos)
            knot(th, pend_x[i], pending[i], _INF, pos)
        elif k == _WAKE:
            th, x, a = b_thread[i], b_start[i], b_waker[i]
            advance(th, pos)
            advance(a, pos)
            y = ky[a] + min(x - kx[a], kc[a])
            f = b_floor[i]  # not before the thread's own previous work ends
            if f >= 0:
                y = max(y, ky[th] + max(0, min(f - kx[th], kc[th])))
            knot(th, x, y, _INF, pos)
        elif k == _JOIN:
            b, th, x = b_thread[i], b_joiner[i], b_join[i]
            advance(th, pos)
            advance(b, pos)
            be = b_end[i]
            y = ky[b] + min(be - kx[b], kc[b]) + (x - be)
            f = b_join_floor[i]  # not before the joining event starts, nor its thread's work
            y = max(y, ky[th] + max(0, min(f - kx[th], kc[th])))
            knot(th, x, y, _INF, pos)
        else:  # _INSERT
            th, x, c = ins[i]
            advance(th, pos)
            y = ky[th] + min(x - kx[th], kc[th]) + c
            knot(th, x, y, _INF, pos)
    runs_before(len(order))
    for h in every_thread:  # the spans after the last item
        advance(h, len(order))

    cpu_start = table_ts[g.cpu_row].copy()
    cpu_end = cpu_start + table_dur[g.cpu_row]
    moved = [th for th in range(n_threads) if len(t_pos[th]) > 1]
    if moved:
        by_thread = np.argsort(g.cpu_thread, kind="stable")
        t_bounds = np.searchsorted(g.cpu_thread[by_thread], np.arange(n_threads + 1))
        for th in moved:  # the knots made (not the clock the replay starts from)
            xs, ys, cs = (np.array(a[th][1:], dtype=np.int64) for a in (t_x, t_y, t_c))
            rows = by_thread[t_bounds[th]:t_bounds[th + 1]]
            for arr in (cpu_start, cpu_end):
                t = arr[rows]
                j = np.searchsorted(xs, t, side="right") - 1
                jj = np.maximum(j, 0)
                arr[rows] = np.where(j >= 0, ys[jj] + np.minimum(t - xs[jj], cs[jj]), t)
    return Times(new_start, new_end, cpu_start, cpu_end)


class _Removals:
    """Host time a change removed, as knots made only when a thread's clock is read.

    A removed span [a, b) stops its thread's clock at a (a knot that runs for 0) and starts
    it again at b (one that runs on): y_a = clock(a), then the clock reads y_a from b. Between
    two other knots of the thread, a chain of spans is a running sum: y_(k+1) = y_k +
    (a_(k+1) - b_k). Before an item reads or moves a thread's clock (or the runs read its
    knots) the thread's spans up to that item's position are made, at once where there
    are many: the same knots, in the same order, as visiting each span."""

    def __init__(self, spans: tuple[np.ndarray, np.ndarray, np.ndarray], of_removal: np.ndarray,
                 kind: np.ndarray, idx: np.ndarray, m: int,
                 clock: tuple[list[int], list[int], list[int]],
                 knots: tuple[list[list[int]], ...]) -> None:
        self.kx, self.ky, self.kc = clock
        self.t_pos, self.t_x, self.t_y, self.t_c = knots
        self.threads: list[int] = []
        self.a: dict[int, np.ndarray] = {}
        self.b: dict[int, np.ndarray] = {}
        self.a_list: dict[int, list[int]] = {}
        self.b_list: dict[int, list[int]] = {}
        self.at: dict[int, list[int]] = {}  # positions of its spans' starts and ends, in turn
        self.done: dict[int, int] = {}  # how many of those knots are made
        self.y: dict[int, int] = {}  # the clock reading of the last span started
        th, a, b = spans
        if not len(th):
            return
        pos = np.flatnonzero(of_removal)
        r = idx[pos] - m  # the span of each
        starts = kind[pos] == _REMOVE
        at = np.zeros(2 * len(th), dtype=np.int64)
        at[2 * r[starts]] = pos[starts]
        at[2 * r[~starts] + 1] = pos[~starts]
        for h in distinct(th).tolist():  # each thread's spans together, in order
            mine = np.flatnonzero(th == h)
            lo, hi = int(mine[0]), int(mine[-1]) + 1
            self.threads.append(h)
            self.a[h], self.b[h] = a[lo:hi], b[lo:hi]
            self.a_list[h], self.b_list[h] = self.a[h].tolist(), self.b[h].tolist()
            self.at[h] = at[2 * lo:2 * hi].tolist()
            self.done[h] = 0

    def advance(self, h: int, pos: int) -> None:
        """Make thread ``h``'s knots of the spans before visiting position ``pos``."""
        u = self.done.get(h)
        if u is None:
            return
        at = self.at[h]
        if u == len(at) or at[u] >= pos:
            return
        v = bisect_left(at, pos, u)
        self.done[h] = v
        kx, ky, kc = self.kx, self.ky, self.kc
        tp, tx, ty, tc = self.t_pos[h], self.t_x[h], self.t_y[h], self.t_c[h]
        if v - u <= _SHORT_RUN:  # one by one: knots 2r (a span's start) and 2r + 1 (its end)
            starts, ends = self.a_list[h], self.b_list[h]
            for q in range(u, v):
                if q % 2:
                    x, y, c = ends[q // 2], self.y[h], _INF
                else:
                    x = starts[q // 2]
                    d = x - kx[h]
                    y = ky[h] + (d if d < kc[h] else kc[h])
                    c = 0
                    self.y[h] = y
                kx[h], ky[h], kc[h] = x, y, c
                tp.append(at[q])
                tx.append(x)
                ty.append(y)
                tc.append(c)
            return
        if u % 2:  # the end of a span whose start is made
            x = self.b_list[h][u // 2]
            kx[h], ky[h], kc[h] = x, self.y[h], _INF
            tp.append(at[u])
            tx.append(x)
            ty.append(self.y[h])
            tc.append(_INF)
            u += 1
            if u == v:
                return
        first, last = u // 2, (v - 1) // 2  # the spans involved; the last one ends if v even
        a, b = self.a[h][first:last + 1], self.b[h][first:last + 1]
        d = int(a[0]) - kx[h]
        y = np.empty(len(a), dtype=np.int64)
        y[0] = ky[h] + (d if d < kc[h] else kc[h])
        y[1:] = y[0] + np.cumsum(a[1:] - b[:-1])
        count = v - u
        xs = np.column_stack((a, b)).ravel()[:count].tolist()
        ys = np.repeat(y, 2)[:count].tolist()
        cs = ([0, _INF] * len(a))[:count]
        tp.extend(at[u:v])
        tx.extend(xs)
        ty.extend(ys)
        tc.extend(cs)
        self.y[h] = ys[-1]
        kx[h], ky[h], kc[h] = xs[-1], ys[-1], cs[-1]


class _Runs:
    """The activities :func:`simulate` replays in runs, between the items it visits.

    An activity of a run waits on nothing but its launch and its stream, so on each
    stream its end is E_j = max(A_j + D_j, E_(j-1) + G_j + D_j) (A: launch call on the
    thread's clock plus the latency, D: delay plus duration, G: the gap): with S_j the
    running sum of G + D, E_j = S_j + max(E_0, max over k <= j of (A_k + D_k - S_k)).
    Integers throughout: the same times the one-by-one loop gives. A short run (a launch
    queue that keeps filling visits most activities) goes one by one."""

    def __init__(self, g: Graph, e: Edits, idx: np.ndarray, in_runs: np.ndarray,
                 new_start: np.ndarray, new_end: np.ndarray, stream_end: list[int],
                 knots: tuple[list[list[int]], ...], lists: tuple[list[int], ...]) -> None:
        self.pos = np.flatnonzero(in_runs)  # visiting-order positions of the run activities
        self.act = idx[self.pos]  # their activity indices
        self.pos_list = self.pos.tolist()
        self.done = 0  # run activities replayed
        # the visiting position of the next one to replay
        self.next_pos = self.pos_list[0] if self.pos_list else _INF
        self.g, self.e = g, e
        self.new_start, self.new_end, self.stream_end = new_start, new_end, stream_end
        self.t_pos, self.t_x, self.t_y, self.t_c = knots
        self.mark = [0] * len(self.t_pos)  # each thread's first knot the next run may use
        # thread, launch, latency, stream, gap, delay, duration, recorded start
        self.lists = lists

    def upto(self, pos: int) -> None:
        """Replay the run activities before visiting position ``pos`` (``next_pos`` is
        before it): every thread's knots before it are made."""
        lo = self.done
        hi = bisect_left(self.pos_list, pos, lo)
        self.done = hi
        self.next_pos = self.pos_list[hi] if hi < len(self.pos_list) else _INF
        if hi - lo <= _SHORT_RUN:
            self._one_by_one(self.act[lo:hi].tolist(), self.pos_list[lo:hi])
        else:
            self._at_once(self.act[lo:hi], self.pos[lo:hi])
        for h in range(len(self.t_pos)):  # the next run starts from each thread's last knot
            self.mark[h] = len(self.t_pos[h]) - 1

    def place(self, i: int, ready: int) -> None:
        """Activity ``i`` on its stream: ready at ``ready`` (its launch, or what it waited
        for; _NONE: nothing), it starts no earlier than the previous activity's end plus
        the gap (at its recorded start where neither says), after its delay."""
        _, _, _, stream, gap, delay, dur, rec = self.lists
        s = stream[i]
        pe = self.stream_end[s]
        if pe != _NONE:
            pe += gap[i]
            if pe > ready:
                ready = pe
        if ready == _NONE:
            ready = rec[i]
        ready += delay[i]
        end = ready + dur[i]
        self.new_start[i] = ready
        self.new_end[i] = end
        self.stream_end[s] = end

    def _one_by_one(self, acts: list[int], at: list[int]) -> None:
        thread, launch, latency = self.lists[:3]
        for i, p in zip(acts, at, strict=True):
            th = thread[i]
            ready = _NONE
            if th >= 0:
                j = bisect_right(self.t_pos[th], p) - 1  # the knot made last before
                d = launch[i] - self.t_x[th][j]
                c = self.t_c[th][j]
                ready = self.t_y[th][j] + (d if d < c else c) + latency[i]
            self.place(i, ready)

    def _at_once(self, acts: np.ndarray, at: np.ndarray) -> None:
        g, e = self.g, self.e
        th = g.thread[acts]
        ready = np.full(len(acts), _NONE, dtype=np.int64)
        for h in distinct(th[th >= 0]).tolist():
            sel = np.flatnonzero(th == h)
            first = self.mark[h]
            kp, kx, ky, kc = (np.array(k[h][first:], dtype=np.int64)
                              for k in (self.t_pos, self.t_x, self.t_y, self.t_c))
            j = np.searchsorted(kp, at[sel], side="right") - 1  # the knot made last before
            ready[sel] = ky[j] + np.minimum(g.launch_ts[acts[sel]] - kx[j], kc[j]) \
                + g.latency[acts[sel]]
        streams = e.stream[acts]
        d = e.delay[acts] + e.dur[acts]
        for s in distinct(streams).tolist():
            sel = np.flatnonzero(streams == s)
            a = ready[sel]
            before = self.stream_end[s]
            if before == _NONE and a[0] == _NONE:  # the stream's first, launched by no one
                a[0] = g.start[acts[sel[0]]]
            ds = d[sel]
            total = np.cumsum(e.gap[acts[sel]] + ds)
            end = total + np.maximum(np.maximum.accumulate(a + ds - total), before)
            self.new_end[acts[sel]] = end
            self.new_start[acts[sel]] = end - e.dur[acts[sel]]
            self.stream_end[s] = int(end[-1])


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
