"""Link every GPU activity (kernel, memcpy, memset) to the CPU op that launched it, and class it.

The link goes through the correlation id to the runtime call (``cudaLaunchKernel``,
``hipLaunchKernel``, ``cuLaunchKernel``, ...) and from there to the innermost range
open on that call's thread; when the runtime call is missing, the activity's
``External id`` names the op directly. A kernel takes the class of its linked op
(or the nearest ancestor that has one); name rules decide when no op says, and a
kernel whose own name says it copies or communicates is a copy or communication
whatever op launched it (a layout transpose inside a convolution is a copy).
Communication is never inherited by compute: a kernel is communication when its name
says so, a collective op launched it, or it is that collective's own copy.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids
from profiler_kit.analysis.core.collective_kinds import (
    ALLREDUCE,
    REDUCE,
    REDUCE_SCATTER,
    collective_kind,
)
from profiler_kit.analysis.core.op_tree import OpTree, innermost_at, thread_keys_for
from profiler_kit.trace.table import Cat, EventTable

GPU_ACTIVITY_CATS = (Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET)


class GpuActivity(msgspec.Struct, frozen=True):
    """GPU activity rows (kernels, memcpy, memset) with their launching op and class."""

    row: np.ndarray  # int64 table rows, in table (start time) order
    node: np.ndarray  # int64 innermost CPU range in the op tree (-1 when not linked)
    op_node: np.ndarray  # int64 the launching cpu_op node (-1 when not linked)
    klass: np.ndarray  # int8 index into classify.CLASSES
    linked_by: np.ndarray  # int8: 0 none, 1 correlation, 2 external id
    name_klass: np.ndarray  # int8 class from the kernel's own name and functor alone
    op_row: np.ndarray  # int64 table row of the launching cpu_op (-1 when not linked)
    launch_row: np.ndarray  # int64 table row of the runtime call with its correlation id (-1)

    def __len__(self) -> int:
        return len(self.row)


def attribute_gpu(table: EventTable, tree: OpTree) -> GpuActivity:
    """Attribute and class every kernel, memcpy and memset of ``table``."""
    cats = np.array([int(c) for c in GPU_ACTIVITY_CATS], dtype=table.cat.dtype)
    rows = np.flatnonzero(np.isin(table.cat, cats))
    node = np.full(len(rows), -1, dtype=np.int64)
    launch_row = np.full(len(rows), -1, dtype=np.int64)
    linked_by = np.zeros(len(rows), dtype=np.int8)

    # 1. correlation id -> runtime call -> innermost range open on its thread
    runtime = table.rows(Cat.RUNTIME)
    runtime = runtime[table.correlation[runtime] >= 0]
    corr = table.correlation[rows]
    if len(runtime) and len(rows):
        rt_corr = table.correlation[runtime]
        order = np.argsort(rt_corr, kind="stable")
        rt_sorted = rt_corr[order]
        pos = np.searchsorted(rt_sorted, corr)
        pos_c = np.minimum(pos, len(rt_sorted) - 1)
        hit = (corr >= 0) & (pos < len(rt_sorted)) & (rt_sorted[pos_c] == corr)
        rt_rows = runtime[order[pos_c[hit]]]
        launch_row[hit] = rt_rows
        keys = thread_keys_for(tree, table.pid[rt_rows], table.tid[rt_rows])
        found = innermost_at(tree, keys, table.ts_ns[rt_rows])
        idx = np.flatnonzero(hit)
        node[idx] = found
        linked_by[idx[found >= 0]] = 1

    # 2. External id -> the op carrying that id
    missing = np.flatnonzero((node < 0) & (table.external_id[rows] >= 0))
    if len(missing) and len(tree):
        ext_nodes = table.external_id[tree.row]
        valid = np.flatnonzero(ext_nodes >= 0)
        order = valid[np.argsort(ext_nodes[valid], kind="stable")]
        ext_sorted = ext_nodes[order]
        want = table.external_id[rows[missing]]
        pos = np.searchsorted(ext_sorted, want)
        pos_c = np.minimum(pos, max(len(ext_sorted) - 1, 0))
        if len(ext_sorted):
            hit = (pos < len(ext_sorted)) & (ext_sorted[pos_c] == want)
            node[missing[hit]] = order[pos_c[hit]]
            linked_by[missing[hit]] = 2

    op_node = np.where(node >= 0, tree.op_node[np.maximum(node, 0)], -1) if len(tree) else node
    name_klass = _name_classes(table, rows)
    klass = _classes(table, rows, node, tree, name_klass)
    op_row = np.where(op_node >= 0, tree.row[np.maximum(op_node, 0)], -1) if len(tree) \
        else np.full(len(rows), -1, dtype=np.int64)
    return GpuActivity(row=rows, node=node, op_node=op_node, klass=klass, linked_by=linked_by,
                       name_klass=name_klass, op_row=op_row,
                       launch_row=launch_row)


def _name_classes(table: EventTable, rows: np.ndarray) -> np.ndarray:
    """Class of every activity from its name alone (the rules run once per distinct name)."""
    if not len(rows):
        return np.zeros(0, dtype=np.int8)
    uniq, inverse = dense_ids(table.name[rows])
    lut = np.array(
        [classify.CLASS_INDEX[classify.classify_kernel_name(table.names[int(u)])] for u in uniq],
        dtype=np.int8,
    )
    return lut[inverse.reshape(-1)]


def _classes(table: EventTable, rows: np.ndarray, node: np.ndarray, tree: OpTree,
             name_klass: np.ndarray) -> np.ndarray:
    other = classify.CLASS_INDEX[classify.OTHER]
    klass = np.full(len(rows), other, dtype=np.int8)
    if not len(rows):
        return klass
    if len(tree):
        linked = node >= 0
        klass[linked] = tree.klass[node[linked]]
    decisive = np.isin(name_klass, [classify.CLASS_INDEX[classify.COPY],
                                    classify.CLASS_INDEX[classify.COMMUNICATION]])
    need = (klass == other) | decisive
    klass[need] = name_klass[need]
    if len(tree):
        _communication(table, rows, node, tree, name_klass, klass)
    cat = table.cat[rows]
    klass[cat == Cat.MEMCPY] = classify.CLASS_INDEX[classify.MEMCPY]
    klass[cat == Cat.MEMSET] = classify.CLASS_INDEX[classify.MEMSET]
    return klass


def _communication(table: EventTable, rows: np.ndarray, node: np.ndarray, tree: OpTree,
                   name_klass: np.ndarray, klass: np.ndarray) -> None:
    """Communication is what communicates: kernels whose own name says so (NCCL, RCCL,
    ...), kernels a collective op launches itself (an unreadable name, a copy, or a
    reduction under a reducing collective: vLLM's ``cross_device_reduce_1stage`` under
    ``vllm::all_reduce``), and the
    copy kernels of a collective (an ``aten::copy_`` right inside ``c10d::allgather_``).
    A compute kernel launched inside a range named for a collective (TorchRec's ``##
    KJTAllToAllTensorsAwaitable wait() ##`` around its ``fbgemm`` permutes and cub scans)
    is compute: it takes the class its own name gives. Changes ``klass`` in place."""
    comm = classify.CLASS_INDEX[classify.COMMUNICATION]
    copy = classify.CLASS_INDEX[classify.COPY]
    other = classify.CLASS_INDEX[classify.OTHER]
    reduction = classify.CLASS_INDEX[classify.REDUCTION]
    op = np.where(node >= 0, tree.op_node[np.maximum(node, 0)], -1)
    own = np.where(op >= 0, tree.own_klass[np.maximum(op, 0)], other)
    inherited = (klass == comm) & (name_klass != comm)
    by_collective = (own == comm) & (np.isin(name_klass, [other, copy])
                                      | ((name_klass == reduction) & _reducing(table, tree, op)))
    klass[inherited & ~by_collective] = name_klass[inherited & ~by_collective]
    # copy kernels of an aten copy op directly inside a collective op
    copies = np.flatnonzero((klass == copy) & (own == copy)
                            & (table.cat[rows] == Cat.KERNEL))
    if len(copies):
        up = tree.parent[op[copies]]
        outer = np.where(up >= 0, tree.op_node[np.maximum(up, 0)], -1)
        inside = (outer >= 0) & (tree.own_klass[np.maximum(outer, 0)] == comm)
        klass[copies[inside]] = comm


def _reducing(table: EventTable, tree: OpTree, op: np.ndarray) -> np.ndarray:
    """Per activity: its launching op (``op``, -1: none) is a reducing collective
    (all-reduce, reduce-scatter, reduce)."""
    out = np.zeros(len(op), dtype=bool)
    has = np.flatnonzero(op >= 0)
    if not len(has):
        return out
    names = table.name[tree.row[op[has]]]
    uniq, inverse = dense_ids(names)
    lut = np.array([collective_kind(table.names[int(u)]) in (ALLREDUCE, REDUCE_SCATTER, REDUCE)
                    for u in uniq], dtype=bool)
    out[has] = lut[inverse.reshape(-1)]
    return out
