"""Hotspots: time per class for GPU activities and for CPU ops (self time), with the top names.

Per-name totals are one ``dense_ids`` + ``np.bincount`` over interned name ids, so
they are exact integer sums whatever the trace size.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.trace.table import Cat, EventTable

_CAT_LABEL = {int(Cat.KERNEL): "kernel", int(Cat.MEMCPY): "memcpy", int(Cat.MEMSET): "memset"}


class NameTotal(msgspec.Struct, frozen=True):
    """One kernel (or op) name: how often it ran and for how long in total."""

    name: str
    category: str  # kernel / memcpy / memset / cpu_op
    klass: str = msgspec.field(name="class")
    count: int
    total_ns: int
    min_ns: int
    max_ns: int


class ClassTotal(msgspec.Struct, frozen=True):
    klass: str = msgspec.field(name="class")
    count: int
    total_ns: int
    share: float  # of all the time in this breakdown
    top: tuple[NameTotal, ...]


class Breakdown(msgspec.Struct, frozen=True):
    """Time per hotspot class (classes with no time left out), largest first."""

    total_ns: int
    count: int
    classes: tuple[ClassTotal, ...]

    def ns(self, klass: str) -> int:
        return next((c.total_ns for c in self.classes if c.klass == klass), 0)


def _sum_by(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact integer sums per group: float64 holds every integer below 2**53 ns (104 days)."""
    return np.rint(np.bincount(groups, weights=values, minlength=n)).astype(np.int64)


def name_totals(
    names: list[str], name_ids: np.ndarray, dur_ns: np.ndarray, klass: np.ndarray,
    category: np.ndarray | None = None,
) -> list[NameTotal]:
    """Count and exact total per (category, name), each with the class holding most of its time."""
    if not len(name_ids):
        return []
    cat = category if category is not None else np.zeros(len(name_ids), dtype=np.int64)
    key = cat.astype(np.int64) * (len(names) + 1) + name_ids.astype(np.int64)
    uniq, inverse = dense_ids(key)
    inverse = inverse.reshape(-1)
    n = len(uniq)
    count = np.bincount(inverse, minlength=n)
    total = _sum_by(inverse, dur_ns, n)
    mins = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(mins, inverse, dur_ns)
    maxs = np.zeros(n, dtype=np.int64)
    np.maximum.at(maxs, inverse, dur_ns)
    # Class holding most of each name's time.
    n_cls = len(classify.CLASSES)
    per_cls = _sum_by(inverse * n_cls + klass.astype(np.int64), dur_ns + 1, n * n_cls)
    best_cls = per_cls.reshape(n, n_cls).argmax(axis=1)
    out = []
    for i in np.argsort(-total, kind="stable").tolist():
        k = int(uniq[i])
        c, nid = divmod(k, len(names) + 1)
        out.append(
            NameTotal(
                name=names[nid],
                category=_CAT_LABEL.get(c, "cpu_op") if category is not None else "cpu_op",
                klass=classify.CLASSES[int(best_cls[i])],
                count=int(count[i]),
                total_ns=int(total[i]),
                min_ns=int(mins[i]),
                max_ns=int(maxs[i]),
            )
        )
    return out


def breakdown(
    names: list[str], name_ids: np.ndarray, dur_ns: np.ndarray, klass: np.ndarray,
    category: np.ndarray | None = None, top: int = 5,
) -> Breakdown:
    """Per-class count, time and share, with the ``top`` names of each class."""
    total = int(dur_ns.sum()) if len(dur_ns) else 0
    n_cls = len(classify.CLASSES)
    counts = np.bincount(klass.astype(np.int64), minlength=n_cls)
    times = _sum_by(klass.astype(np.int64), dur_ns, n_cls)
    classes = []
    for ci in np.argsort(-times, kind="stable").tolist():
        if counts[ci] == 0:
            continue
        sel = klass == ci
        tops = name_totals(
            names, name_ids[sel], dur_ns[sel], klass[sel],
            category[sel] if category is not None else None,
        )[:top]
        classes.append(
            ClassTotal(
                klass=classify.CLASSES[ci],
                count=int(counts[ci]),
                total_ns=int(times[ci]),
                share=float(times[ci]) / total if total > 0 else 0.0,
                top=tuple(tops),
            )
        )
    return Breakdown(total_ns=total, count=int(len(dur_ns)), classes=tuple(classes))


def gpu_breakdown(
    table: EventTable, gpu: GpuActivity, mask: np.ndarray | None = None, top: int = 5
) -> Breakdown:
    """GPU time per class (sum of activity durations, so concurrent streams both count)."""
    sel = slice(None) if mask is None else mask
    rows = gpu.row[sel]
    return breakdown(
        table.names, table.name[rows], table.dur_ns[rows], gpu.klass[sel],
        table.cat[rows].astype(np.int64), top=top,
    )


def cpu_breakdown(table: EventTable, tree: OpTree, top: int = 5) -> Breakdown:
    """CPU op self time per class (an op's time minus its direct children's)."""
    ops = np.flatnonzero(table.cat[tree.row] == Cat.CPU_OP)
    rows = tree.row[ops]
    return breakdown(table.names, table.name[rows], tree.self_ns[ops], tree.own_klass[ops],
                     top=top)


def kernel_table(table: EventTable, gpu: GpuActivity) -> list[NameTotal]:
    """Every GPU activity name with its category, count and exact total duration."""
    rows = gpu.row
    return name_totals(
        table.names, table.name[rows], table.dur_ns[rows], gpu.klass,
        table.cat[rows].astype(np.int64),
    )
