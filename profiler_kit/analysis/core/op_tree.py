"""The CPU op tree: which op encloses which, per thread, and self time.

CPU-side ranges (``cpu_op`` and ``user_annotation`` events) nest on their thread.
Parents come from a vectorized equivalent of a stack sweep in start order; everything
else (self time, classes inherited from ancestors, the innermost range around a point
in time) is vectorized on top, so millions of ops cost no per-op Python work.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids, distinct
from profiler_kit.trace.table import Cat, EventTable

_TREE_CATS = (Cat.CPU_OP, Cat.USER_ANNOTATION)


class OpTree(msgspec.Struct, frozen=True):
    """CPU ranges sorted by (thread, start, longest first); arrays are indexed by node.

    ``row`` maps a node to its event-table row. ``op_node`` is the node itself when
    it is a ``cpu_op``, else its nearest ``cpu_op`` ancestor (-1 if none), so an
    annotation never stands in for the op that launched a kernel. ``klass`` is the
    node's hotspot class index, inherited from the nearest ancestor that has one.
    """

    row: np.ndarray  # int64
    thread: np.ndarray  # int64 thread key (index into ``threads``)
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    parent: np.ndarray  # int64, -1 for roots
    op_node: np.ndarray  # int64
    klass: np.ndarray  # int8, index into classify.CLASSES, resolved through ancestors
    own_klass: np.ndarray  # int8, the node's own class from its name
    self_ns: np.ndarray  # int64: duration minus the parts of direct children inside it
    threads: list[tuple[int, int]]  # thread key -> (pid, tid)
    thread_bounds: np.ndarray  # int64 [n_threads + 1]: node range of each thread

    def __len__(self) -> int:
        return len(self.row)


def build_op_tree(table: EventTable) -> OpTree:
    """Nest the CPU ranges of ``table`` per thread."""
    mask = np.isin(table.cat, np.array([int(c) for c in _TREE_CATS], dtype=table.cat.dtype))
    rows = np.flatnonzero(mask)
    uniq, thread = _pair_ids(table.pid[rows], table.tid[rows])
    start = table.ts_ns[rows]
    dur = table.dur_ns[rows]
    order = np.lexsort((-dur, start, thread))
    rows, thread, start, dur = rows[order], thread[order], start[order], dur[order]
    end = start + dur
    n = len(rows)

    is_op = table.cat[rows] == Cat.CPU_OP
    own = _own_classes(table, rows, is_op)
    parent = parents(thread, start, end)
    other = classify.CLASS_INDEX[classify.OTHER]
    classed = _nearest_self_or_ancestor(own != other, parent)
    klass = np.where(classed >= 0, own[np.maximum(classed, 0)], other).astype(np.int8)
    op_node = _nearest_self_or_ancestor(is_op, parent)

    child_part = np.zeros(n, dtype=np.int64)
    kids = np.flatnonzero(parent >= 0)
    if len(kids):
        inside = np.minimum(end[kids], end[parent[kids]]) - start[kids]
        child_part = np.rint(
            np.bincount(parent[kids], weights=np.maximum(inside, 0), minlength=n)
        ).astype(np.int64)
    self_ns = np.maximum(dur - child_part, 0)

    bounds = np.searchsorted(thread, np.arange(len(uniq) + 1), side="left").astype(np.int64)
    return OpTree(
        row=rows.astype(np.int64),
        thread=thread,
        start_ns=start,
        end_ns=end,
        parent=parent,
        op_node=op_node,
        klass=klass,
        own_klass=own,
        self_ns=self_ns,
        threads=uniq,
        thread_bounds=bounds,
    )


def _pair_ids(pid: np.ndarray, tid: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Dense ids of (pid, tid) pairs, in sorted pair order, and each row's id."""
    if not len(pid):
        return [], np.zeros(0, dtype=np.int64)
    upid, ipid = dense_ids(pid)
    utid, itid = dense_ids(tid)
    combined = ipid.reshape(-1).astype(np.int64) * len(utid) + itid.reshape(-1)
    ucomb, ids = dense_ids(combined)
    pairs = [(int(upid[c // len(utid)]), int(utid[c % len(utid)])) for c in ucomb.tolist()]
    return pairs, ids.reshape(-1).astype(np.int64)


def parents(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Parent of every range: the latest earlier range on its thread still open at its start.

    That is what a stack sweep finds, computed by pointer jumping: a candidate that
    has already ended hands over its own candidate, since everything between the two
    ended even earlier. Each round is vectorized; chains halve every round.
    """
    n = len(start)
    cand = np.arange(n, dtype=np.int64) - 1
    pending = np.arange(n, dtype=np.int64)
    while len(pending):
        c = cand[pending]
        valid = c >= 0
        valid[valid] = thread[c[valid]] == thread[pending[valid]]
        cand[pending[~valid]] = -1
        pending, c = pending[valid], c[valid]
        still = end[c] <= start[pending]
        pending, c = pending[still], c[still]
        cand[pending] = cand[c]
    return cand


def _nearest_self_or_ancestor(has: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """For every node, itself if ``has`` else its nearest ancestor that has it (-1: none)."""
    ptr = np.where(has, np.arange(len(has), dtype=np.int64), parent)
    pending = np.flatnonzero((ptr >= 0) & ~has[np.maximum(ptr, 0)])
    while len(pending):
        ptr[pending] = ptr[ptr[pending]]
        p = ptr[pending]
        pending = pending[(p >= 0) & ~has[np.maximum(p, 0)]]
    return ptr


def _own_classes(table: EventTable, rows: np.ndarray, is_op: np.ndarray) -> np.ndarray:
    """Class index of every node from its name (the regexes run once per distinct name)."""
    own = np.full(len(rows), classify.CLASS_INDEX[classify.OTHER], dtype=np.int8)
    if not len(rows):
        return own
    names = table.name[rows]
    for op_flag, rule in ((True, classify.classify_op), (False, classify.classify_annotation)):
        sel = np.flatnonzero(is_op == op_flag)
        if not len(sel):
            continue
        uniq, inverse = dense_ids(names[sel])
        lut = np.array([classify.CLASS_INDEX[rule(table.names[int(u)])] for u in uniq],
                       dtype=np.int8)
        own[sel] = lut[inverse.reshape(-1)]
    return own


def innermost_at(tree: OpTree, thread_keys: np.ndarray, ts_ns: np.ndarray) -> np.ndarray:
    """Node of the innermost range open at ``ts_ns`` on each thread (-1 when none).

    The last range starting at or before ``t`` either encloses ``t`` or has ended;
    in the latter case the answer is among its ancestors, so climb until one encloses.
    """
    result = np.full(len(ts_ns), -1, dtype=np.int64)
    if not len(tree) or not len(ts_ns):
        return result
    for key in distinct(thread_keys):
        if key < 0:
            continue
        lo, hi = int(tree.thread_bounds[key]), int(tree.thread_bounds[key + 1])
        sel = np.flatnonzero(thread_keys == key)
        result[sel] = innermost_in_thread(tree.start_ns, tree.end_ns, tree.parent, lo, hi,
                                          ts_ns[sel])
    return result


def innermost_in_thread(start_ns: np.ndarray, end_ns: np.ndarray, parent: np.ndarray,
                        lo: int, hi: int, t: np.ndarray, end_inclusive: bool = False
                        ) -> np.ndarray:
    """Innermost of the ranges ``lo:hi`` (one thread's, sorted by start, outer first on
    ties) open at each time ``t``; -1 for none. ``end_inclusive``: a range still encloses
    its end time (an instant recorded as the range closes)."""
    cand = np.searchsorted(start_ns[lo:hi], t, side="right") - 1 + lo
    cand[cand < lo] = -1
    while True:
        valid = cand >= 0
        ended = np.zeros(len(cand), dtype=bool)
        ends = end_ns[cand[valid]]
        ended[valid] = ends < t[valid] if end_inclusive else ends <= t[valid]
        if not ended.any():
            return cand
        cand[ended] = parent[cand[ended]]


def thread_keys_for(tree: OpTree, pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Thread key of each (pid, tid) pair; -1 for threads with no CPU ranges."""
    lookup = {pt: i for i, pt in enumerate(tree.threads)}
    if not len(pid):
        return np.zeros(0, dtype=np.int64)
    pairs, ids = _pair_ids(pid, tid)
    keys = np.array([lookup.get(pt, -1) for pt in pairs], dtype=np.int64)
    return keys[ids]


def thread_keys_for_tid(tree: OpTree, tid: np.ndarray) -> np.ndarray:
    """Thread key by thread id alone (memory events carry no pid); -1 when unknown."""
    lookup: dict[int, int] = {}
    for i, (_pid, t) in enumerate(tree.threads):
        lookup.setdefault(t, i)
    if not len(tid):
        return np.zeros(0, dtype=np.int64)
    uniq, inverse = dense_ids(tid)
    keys = np.array([lookup.get(int(t), -1) for t in uniq], dtype=np.int64)
    return keys[inverse.reshape(-1)]
