"""Which line of the user's code an allocation came from, and which op made it.

With ``with_stack`` a trace holds every Python call as a ``python_function`` range whose
``CallFrom`` is the calling line. The innermost range around an allocation whose caller
is the user's own file names that file's line (``model.py:88``): frames of torch, of
installed libraries, of the standard library and of profkit's own harness are folded.
profkit's built-in scenarios are the workload, not the harness: their frames are kept,
wherever profkit is installed.
"""

from __future__ import annotations

import sys
from functools import lru_cache

import numpy as np

from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.op_tree import innermost_in_thread, parents
from profiler_kit.trace.memory_records import Ranges

# first path components that are libraries even where the profiler shortened the path
# (PyTorch strips sys.path prefixes: "torch/nn/modules/module.py")
_LIBRARIES = frozenset({"torch", "torchvision", "torchaudio", "functorch", "triton", "numpy",
                        "transformers", "accelerate", "apex", "deepspeed", "profiler_kit"})
_SCENARIOS = "profiler_kit/scenarios/"  # the built-in workloads, installed as a package


@lru_cache(maxsize=8192)  # a trace names few files, each asked about for many frames
def is_library_file(filename: str) -> bool:
    """Whether ``filename`` belongs to torch, an installed library or the standard library."""
    if _SCENARIOS in filename.replace("\\", "/"):
        return False
    if ("site-packages" in filename or "dist-packages" in filename or filename.startswith("<")
            or filename.endswith((".cpp", ".h", ".cu")) or "/torch/" in filename
            or "/lib/python3" in filename):
        return True
    first = filename.replace("\\", "/").split("/", 1)[0]
    stem = first[:-3] if first.endswith(".py") else first
    return stem in _LIBRARIES or stem in sys.stdlib_module_names


class Nested:
    """Ranges of one kind nested per thread: the innermost one open at a time."""

    def __init__(self, ranges: Ranges) -> None:
        dur = ranges.end_ns - ranges.start_ns
        self.order = np.lexsort((-dur, ranges.start_ns, ranges.tid))
        self.tid = ranges.tid[self.order]
        self.start = ranges.start_ns[self.order]
        self.end = ranges.end_ns[self.order]
        _, thread = np.unique(self.tid, return_inverse=True)
        self.parent = parents(thread.reshape(-1).astype(np.int64), self.start, self.end)

    def innermost(self, tid: np.ndarray, ts_ns: np.ndarray) -> np.ndarray:
        """Sorted position of the innermost range around each (tid, time); -1 for none."""
        out = np.full(len(ts_ns), -1, dtype=np.int64)
        for t in distinct(tid).tolist():
            lo = int(np.searchsorted(self.tid, t, "left"))
            hi = int(np.searchsorted(self.tid, t, "right"))
            sel = np.flatnonzero(tid == t)
            out[sel] = innermost_in_thread(self.start, self.end, self.parent, lo, hi,
                                           ts_ns[sel], end_inclusive=True)
        return out


def _function(frame_name: str) -> str:
    """``forward`` from ``model.py(10): forward``; the name itself otherwise."""
    return frame_name.split("): ", 1)[1] if "): " in frame_name else frame_name


def user_sites(frames: Ranges, tid: np.ndarray, ts_ns: np.ndarray) -> list[str | None]:
    """Per point in time: ``file:line (function)`` of the innermost user call around it.

    None where no Python frame of the user's encloses the point (or no stacks were recorded).
    """
    if not len(frames) or not frames.call_from:
        return [None] * len(ts_ns)
    nested = Nested(frames)
    calls = [frames.call_from[i] for i in nested.order.tolist()]
    names = [frames.name[i] for i in nested.order.tolist()]
    user = [bool(c) and not is_library_file(c.rsplit(":", 1)[0]) for c in calls]
    cache: dict[int, str | None] = {}
    out: list[str | None] = []
    for node in nested.innermost(tid, ts_ns).tolist():
        start = node
        if start not in cache:
            site = None
            while node >= 0:
                if user[node]:
                    caller = int(nested.parent[node])
                    where = f" ({_function(names[caller])})" if caller >= 0 else ""
                    site = f"{calls[node]}{where}"
                    break
                node = int(nested.parent[node])
            cache[start] = site
        out.append(cache[start])
    return out


def enclosing_ops(ops: Ranges, tid: np.ndarray, ts_ns: np.ndarray) -> list[str | None]:
    """Per point in time: the name of the innermost CPU op around it (None outside ops)."""
    if not len(ops):
        return [None] * len(ts_ns)
    nested = Nested(ops)
    names = [ops.name[i] for i in nested.order.tolist()]
    return [names[n] if n >= 0 else None for n in nested.innermost(tid, ts_ns).tolist()]
