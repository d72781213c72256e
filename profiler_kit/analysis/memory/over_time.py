"""Memory over time per device: bytes allocated and reserved after each ``[memory]`` event.

Allocated is read as :mod:`profiler_kit.analysis.memory.allocated` says (the allocator's
``Total Allocated`` on a GPU, the bytes allocated in the trace on the CPU), as in
:func:`profiler_kit.analysis.memory.usage.analyze_memory`, so the peak here is the peak there.
A long series is thinned to at most ``max_points`` points by keeping, in each run of
consecutive events, the lowest and the highest one: every rise and fall bigger than a
bucket stays, and the peak always does.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.memory.allocated import allocated_after_each, carry_forward
from profiler_kit.analysis.memory.usage import device_label
from profiler_kit.trace.table import EventTable

MAX_POINTS = 4000


class MemorySeries(msgspec.Struct, frozen=True):
    """One device's memory after each event; times are from the trace's first event."""

    device: str  # "cpu", "cuda:0", ...
    device_id: int
    events: int  # memory events of this device in the trace
    downsampled: bool  # True when fewer points are kept than there were events
    ts_ns: tuple[int, ...]
    allocated_bytes: tuple[int, ...]
    reserved_bytes: tuple[int, ...]  # empty when the trace does not report reserved memory
    peak_allocated_bytes: int
    peak_ts_ns: int  # when the peak was first reached


class MemoryTimeline(msgspec.Struct, frozen=True):
    recorded: bool  # False: the trace has no memory events (recorded without profile_memory)
    start_ns: int  # the trace's first event; every ``ts_ns`` is relative to it
    devices: tuple[MemorySeries, ...]


def memory_timeline(table: EventTable, max_points: int = MAX_POINTS) -> MemoryTimeline:
    """Allocated and reserved bytes over time per device, thinned to ``max_points`` each."""
    mem = table.memory
    firsts = [int(a.min()) for a in (table.ts_ns, mem.ts_ns) if len(a)]
    start = min(firsts) if firsts else 0
    if not len(mem):
        return MemoryTimeline(recorded=False, start_ns=start, devices=())
    order = np.argsort(mem.ts_ns, kind="stable")
    dtype_, did = mem.device_type[order], mem.device_id[order]
    keys = sorted({(int(t), int(i)) for t, i in zip(dtype_.tolist(), did.tolist(), strict=True)})
    series = []
    for dt, di in keys:
        sel = order[(dtype_ == dt) & (did == di)]
        series.append(_series(table, sel, dt, di, start, max_points))
    return MemoryTimeline(recorded=True, start_ns=start, devices=tuple(series))


def _series(table: EventTable, sel: np.ndarray, device_type: int, device_id: int,
            start: int, max_points: int) -> MemorySeries:
    mem = table.memory
    ts = mem.ts_ns[sel] - start
    allocated = allocated_after_each(device_type == 0, mem.bytes[sel],
                                     mem.total_allocated_bytes[sel], mem.addr[sel])
    reserved = mem.total_reserved_bytes[sel]
    has_reserved = bool((reserved > 0).any())  # the CPU allocator reports 0: that says nothing
    peak_at = int(np.argmax(allocated))
    keep = _thin(allocated, max_points)
    return MemorySeries(
        device=device_label(device_type, device_id),
        device_id=device_id,
        events=len(sel),
        downsampled=len(keep) < len(sel),
        ts_ns=tuple(ts[keep].tolist()),
        allocated_bytes=tuple(allocated[keep].tolist()),
        reserved_bytes=tuple(carry_forward(reserved)[keep].tolist()) if has_reserved else (),
        peak_allocated_bytes=int(allocated[peak_at]),
        peak_ts_ns=int(ts[peak_at]),
    )


def _thin(values: np.ndarray, max_points: int) -> np.ndarray:
    """Indices to keep: all when they fit, else the min and max of each of ``max_points // 2``
    equal runs of events, in time order (the first and last events always stay)."""
    n = len(values)
    if n <= max_points:
        return np.arange(n)
    buckets = max(max_points // 2 - 1, 1)
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    keep = [0, n - 1]
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        if hi > lo:
            chunk = values[lo:hi]
            keep.extend((lo + int(np.argmin(chunk)), lo + int(np.argmax(chunk))))
    return distinct(np.array(keep, dtype=np.int64))
