"""Bytes allocated after each ``[memory]`` event of one device, read as each device means it.

On a GPU the caching allocator reports its true total (``Total Allocated``), tensors made
before the trace included. On the CPU that field is a counter PyTorch's profiler keeps
while profiling is on, for the whole process: a block freed while no profiler ran is never
taken off it, so each profiling session starts where the last one's leftovers put it (a
second strategy profiled in the same process starts with the first one's last step in it).
On the CPU, then, the figure is the bytes allocated in the trace and not yet freed:
allocations, less the frees matched to one of them by address. Tensors made before the
trace (weights, optimizer state) are in neither reading on the CPU; PyTorch's memory
categories count them.
"""

from __future__ import annotations

import numpy as np


def counts_before_trace(on_cpu: bool, totals: np.ndarray) -> bool:
    """Whether the allocated figure includes memory allocated before the trace started."""
    return not on_cpu and bool((totals >= 0).any())


def allocated_after_each(on_cpu: bool, nbytes: np.ndarray, totals: np.ndarray,
                         addr: np.ndarray) -> np.ndarray:
    """Allocated bytes after each event (events in time order; -1: total or address absent)."""
    if counts_before_trace(on_cpu, totals):
        return carry_forward(totals)
    return np.maximum(np.cumsum(np.where(_matched(nbytes, addr), nbytes, 0)), 0)


def _matched(nbytes: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Allocations, and the frees of a block allocated earlier in the trace (a free of an
    address last seen allocated). Where no address was recorded, every free counts."""
    n = len(nbytes)
    order = np.lexsort((np.arange(n), addr))
    same = np.zeros(n, dtype=bool)
    same[1:] = addr[order][1:] == addr[order][:-1]
    after_alloc = np.zeros(n, dtype=bool)
    after_alloc[1:] = same[1:] & (nbytes[order][:-1] > 0)
    ok = np.empty(n, dtype=bool)
    ok[order] = after_alloc
    return (nbytes > 0) | ok | (addr < 0)


def carry_forward(values: np.ndarray) -> np.ndarray:
    """Replace -1 (not reported) by the last reported value before it, 0 before any."""
    known = values >= 0
    idx = np.where(known, np.arange(len(values)), -1)
    np.maximum.accumulate(idx, out=idx)
    return np.where(idx >= 0, values[np.maximum(idx, 0)], 0).astype(np.int64)
