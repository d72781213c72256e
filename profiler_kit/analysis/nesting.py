"""The CPU op tree: which op encloses which, per thread, and self time.

CPU-side ranges (``cpu_op`` and ``user_annotation`` events) nest on their thread.
One stack sweep in start order gives every range its parent; everything else
(self time, the innermost range around a point in time) is vectorized on top.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiler_kit.analysis import classify
from profiler_kit.trace.table import Cat, EventTable

_TREE_CATS = (Cat.CPU_OP, Cat.USER_ANNOTATION)


@dataclass(frozen=True)
class OpTree:
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
    """Nest the CPU ranges of ``table`` per thread with one stack sweep."""
    mask = np.isin(table.cat, np.array([int(c) for c in _TREE_CATS], dtype=table.cat.dtype))
    rows = np.flatnonzero(mask)
    pid = table.pid[rows]
    tid = table.tid[rows]
    pairs = np.stack([pid, tid], axis=1) if len(rows) else np.zeros((0, 2), dtype=np.int64)
    uniq, thread = np.unique(pairs, axis=0, return_inverse=True)
    thread = thread.reshape(-1).astype(np.int64)
    start = table.ts_ns[rows]
    dur = table.dur_ns[rows]
    order = np.lexsort((-dur, start, thread))
    rows, thread, start, dur = rows[order], thread[order], start[order], dur[order]
    end = start + dur
    n = len(rows)

    is_op = (table.cat[rows] == Cat.CPU_OP)
    own = _own_classes(table, rows, is_op)

    parent = np.full(n, -1, dtype=np.int64)
    op_node = np.full(n, -1, dtype=np.int64)
    klass = own.copy()
    other = classify.CLASS_INDEX[classify.OTHER]
    # The one per-event Python loop: a stack of open ranges per thread.
    thread_l = thread.tolist()
    start_l = start.tolist()
    end_l = end.tolist()
    is_op_l = is_op.tolist()
    own_l = own.tolist()
    parent_l = parent.tolist()
    op_node_l = op_node.tolist()
    klass_l = klass.tolist()
    stack: list[int] = []
    current_thread = -1
    for i in range(n):
        if thread_l[i] != current_thread:
            stack.clear()
            current_thread = thread_l[i]
        s = start_l[i]
        while stack and end_l[stack[-1]] <= s:
            stack.pop()
        if stack:
            p = stack[-1]
            parent_l[i] = p
            if own_l[i] == other:
                klass_l[i] = klass_l[p]
            op_node_l[i] = i if is_op_l[i] else op_node_l[p]
        elif is_op_l[i]:
            op_node_l[i] = i
        stack.append(i)
    parent = np.asarray(parent_l, dtype=np.int64)
    op_node = np.asarray(op_node_l, dtype=np.int64)
    klass = np.asarray(klass_l, dtype=np.int8)

    has_parent = parent >= 0
    child_part = np.zeros(n, dtype=np.int64)
    if has_parent.any():
        kids = np.flatnonzero(has_parent)
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
        threads=[(int(p), int(t)) for p, t in uniq],
        thread_bounds=bounds,
    )


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
        uniq, inverse = np.unique(names[sel], return_inverse=True)
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
    for key in np.unique(thread_keys):
        if key < 0:
            continue
        lo, hi = int(tree.thread_bounds[key]), int(tree.thread_bounds[key + 1])
        sel = np.flatnonzero(thread_keys == key)
        t = ts_ns[sel]
        cand = np.searchsorted(tree.start_ns[lo:hi], t, side="right") - 1 + lo
        cand[cand < lo] = -1
        while True:
            valid = cand >= 0
            bad = np.zeros(len(cand), dtype=bool)
            bad[valid] = tree.end_ns[cand[valid]] <= t[valid]
            if not bad.any():
                break
            cand[bad] = tree.parent[cand[bad]]
        result[sel] = cand
    return result


def thread_keys_for(tree: OpTree, pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Thread key of each (pid, tid) pair; -1 for threads with no CPU ranges."""
    lookup = {pt: i for i, pt in enumerate(tree.threads)}
    if not len(pid):
        return np.zeros(0, dtype=np.int64)
    pairs = np.stack([pid, tid], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    keys = np.array([lookup.get((int(p), int(t)), -1) for p, t in uniq], dtype=np.int64)
    return keys[inverse.reshape(-1)]


def thread_keys_for_tid(tree: OpTree, tid: np.ndarray) -> np.ndarray:
    """Thread key by thread id alone (memory events carry no pid); -1 when unknown."""
    lookup: dict[int, int] = {}
    for i, (_pid, t) in enumerate(tree.threads):
        lookup.setdefault(t, i)
    if not len(tid):
        return np.zeros(0, dtype=np.int64)
    uniq, inverse = np.unique(tid, return_inverse=True)
    keys = np.array([lookup.get(int(t), -1) for t in uniq], dtype=np.int64)
    return keys[inverse.reshape(-1)]
