"""The Python frames of a trace recorded with stacks (``python_function`` rows), nested per
thread: the innermost frame, or ``nn.Module`` call, open at a point in time.

Frames nest by time on their thread, as the profiler's own ``Python parent id`` says;
the ``nn.Module: Linear_3`` frames are the module calls (the instance names are the
profiler's: class name and a counter per class).
"""

from __future__ import annotations

import numpy as np

from profiler_kit.analysis.core.arrays import dense_ids, distinct
from profiler_kit.analysis.core.op_tree import innermost_in_thread, parents
from profiler_kit.trace.table import Cat, EventTable

MODULE_PREFIX = "nn.Module: "


def thread_ids(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One int64 key per (pid, tid) pair, the same for equal pairs in any call."""
    return (pid.astype(np.int64) << np.int64(32)) ^ (tid.astype(np.int64) & np.int64(0xFFFFFFFF))


class Nesting:
    """Ranges (table rows) nested per thread, sorted by (thread, start, longest first)."""

    def __init__(self, table: EventTable, rows: np.ndarray) -> None:
        thread = thread_ids(table.pid[rows], table.tid[rows])
        start = table.ts_ns[rows]
        end = start + table.dur_ns[rows]
        order = np.lexsort((-(end - start), start, thread))
        self.row = rows[order]
        self.thread = thread[order]
        self.start = start[order]
        self.end = end[order]
        _, dense = dense_ids(self.thread)
        self.parent = parents(dense.reshape(-1).astype(np.int64), self.start, self.end)

    def __len__(self) -> int:
        return len(self.row)

    def innermost(self, thread: np.ndarray, ts_ns: np.ndarray) -> np.ndarray:
        """Index of the innermost range open at each (thread, time); -1 for none."""
        out = np.full(len(ts_ns), -1, dtype=np.int64)
        if not len(self) or not len(ts_ns):
            return out
        for t in distinct(thread).tolist():
            lo = int(np.searchsorted(self.thread, t, "left"))
            hi = int(np.searchsorted(self.thread, t, "right"))
            if lo == hi:
                continue
            sel = np.flatnonzero(thread == t)
            out[sel] = innermost_in_thread(self.start, self.end, self.parent, lo, hi,
                                           ts_ns[sel])
        return out


def frame_rows(table: EventTable) -> np.ndarray:
    return table.rows(Cat.PYTHON_FUNCTION)


def module_rows(table: EventTable, frames: np.ndarray) -> np.ndarray:
    """The ``nn.Module: …`` frames among ``frames``."""
    if not len(frames):
        return frames
    ids = np.array([i for i, n in enumerate(table.names) if n.startswith(MODULE_PREFIX)],
                   dtype=np.int64)
    return frames[np.isin(table.name[frames], ids)] if len(ids) else frames[:0]
