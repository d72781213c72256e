"""Each backward op linked to the forward op that created it.

autograd numbers every graph node it creates (``Sequence number``, per forward thread)
and records that number on the forward op that made the node and on the backward op that
runs it, with ``Fwd thread id`` > 0 on the backward side. As PyTorch links them for its
``fwdbwd`` flow events, the forward op is, among the ops of that thread with that
number, the one that started last (the innermost at the latest start).
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.code.frames import thread_ids
from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.trace.table import Cat, EventTable

# the op autograd's engine records around each backward node it runs (AccumulateGrad too,
# which has no forward op)
ENGINE_PREFIX = "autograd::engine::evaluate_function:"


class BackwardLinks(msgspec.Struct, frozen=True):
    """Per op-tree node: the backward op it runs under (-1: none, a forward node) and that
    backward op's forward node (-1: not linked)."""

    backward_node: np.ndarray  # int64: the outermost node with Fwd thread id > 0 around it
    forward_node: np.ndarray  # int64: the forward op of ``backward_node``
    backward_ops: int  # backward ops (outermost ones) in the trace
    linked: int  # of them, linked to their forward op


def link_backward(table: EventTable, tree: OpTree) -> BackwardLinks:
    n = len(tree)
    none = np.full(n, -1, dtype=np.int64)
    if table.seq_nr is None or table.fwd_tid is None or not n:
        return BackwardLinks(none, none.copy(), 0, 0)
    rows = tree.row
    is_op = table.cat[rows] == Cat.CPU_OP
    seq = np.where(is_op, table.seq_nr[rows], -1)
    fwd_tid = np.where(is_op, table.fwd_tid[rows], -1)
    engine = [i for i, nm in enumerate(table.names) if nm.startswith(ENGINE_PREFIX)]
    is_bwd = ((seq >= 0) & (fwd_tid > 0)) | (is_op & np.isin(table.name[rows], engine))
    # the outermost backward op around each node (evaluate_function: XBackward0)
    outer = np.where(is_bwd, np.arange(n, dtype=np.int64), -1)
    up = tree.parent.copy()
    while True:
        has = np.flatnonzero(up >= 0)
        if not len(has):
            break
        anc = up[has]
        hit = is_bwd[anc]
        outer[has[hit]] = anc[hit]
        up[has] = tree.parent[anc]
    roots = np.flatnonzero(is_bwd & (outer == np.arange(n)))
    forward = np.full(n, -1, dtype=np.int64)
    cand = np.flatnonzero((seq >= 0) & (fwd_tid <= 0) & ~is_bwd)
    if len(roots) and len(cand):
        thread = thread_ids(table.pid[rows[cand]], table.tid[rows[cand]])
        # last per (thread, seq) by start (ties: the innermost, later in tree order)
        order = np.lexsort((cand, tree.start_ns[cand], seq[cand], thread))
        c_sorted, t_sorted, s_sorted = cand[order], thread[order], seq[cand][order]
        last = np.ones(len(order), dtype=bool)
        last[:-1] = (t_sorted[1:] != t_sorted[:-1]) | (s_sorted[1:] != s_sorted[:-1])
        best = {(int(t), int(s)): int(c) for t, s, c in
                zip(t_sorted[last].tolist(), s_sorted[last].tolist(), c_sorted[last].tolist(),
                    strict=True)}
        threads = sorted({t for t, _ in best})
        root_seq = seq[roots].tolist()
        root_fwd = np.where(seq[roots] >= 0, fwd_tid[roots], -1)
        for f in distinct(root_fwd[root_fwd > 0]).tolist():
            sel = np.flatnonzero(root_fwd == f)
            # the OS thread of autograd's forward thread id f: the one that matches most
            scores = [(sum((t, root_seq[i]) in best for i in sel.tolist()), t) for t in threads]
            score, t = max(scores) if scores else (0, 0)
            if not score:
                continue
            for i in sel.tolist():
                forward[roots[i]] = best.get((t, root_seq[i]), -1)
    node_fwd = np.where(outer >= 0, forward[np.maximum(outer, 0)], -1)
    return BackwardLinks(outer, node_fwd, int(len(roots)), int((forward[roots] >= 0).sum()))
