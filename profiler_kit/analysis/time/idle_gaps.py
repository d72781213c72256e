"""GPU idle time by the length of its gaps.

The same idle time reads differently by how it is cut: thousands of gaps of a few
microseconds between kernels are launch overhead (fusion or CUDA graphs close them), a
few gaps of milliseconds are the GPU waiting on something else (a synchronization, the
data loader, the host's Python). Each device's gaps are the stretches of its window (the
timeline's: the GPU-side steps window, or its first activity to its last) that no
activity covers; they add up to the timeline's idle time.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
import numpy as np

from profiler_kit.analysis.core import intervals
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.trace.table import EventTable

# the upper bounds of the gap lengths' buckets, in ns: under 10 µs, 10-100 µs, 0.1-1 ms,
# then 1 ms and longer
BOUNDS_NS = (10_000, 100_000, 1_000_000)


class GapBucket(msgspec.Struct, frozen=True):
    """The gaps of one length range: ``[low_ns, high_ns)`` (``high_ns`` None: no bound)."""

    low_ns: int
    high_ns: int | None
    count: int
    idle_ns: int


class DeviceGaps(msgspec.Struct, frozen=True):
    device: int
    count: int
    idle_ns: int  # all the gaps: the timeline's idle time of this device
    median_ns: int | None  # the median gap's length (None: no gap)
    buckets: tuple[GapBucket, ...]


class IdleGaps(msgspec.Struct, frozen=True):
    devices: tuple[DeviceGaps, ...]


def idle_gaps(table: EventTable, gpu: GpuActivity, mask: np.ndarray | None,
              windows: Mapping[int, tuple[int, int]]) -> IdleGaps:
    """The gaps of each device in ``windows`` (device -> [start, end) in ns) between the
    activities in ``mask`` (all by default), clipped to the window."""
    rows = gpu.row if mask is None else gpu.row[mask]
    start = table.ts_ns[rows]
    end = start + table.dur_ns[rows]
    device = table.device[rows]
    found = []
    for dev, (lo, hi) in windows.items():
        on = device == dev
        busy_start, busy_end = intervals.clip(
            intervals.union(start[on], end[on]), lo, hi)
        # the gaps: from the window's start to the first busy segment, between segments,
        # and from the last to the window's end
        gap_start = np.concatenate(([lo], busy_end)).astype(np.int64)
        gap_end = np.concatenate((busy_start, [hi])).astype(np.int64)
        lengths = gap_end - gap_start
        lengths = lengths[lengths > 0]
        found.append(_device(dev, lengths))
    return IdleGaps(tuple(found))


def _device(device: int, lengths: np.ndarray) -> DeviceGaps:
    edges = (0, *BOUNDS_NS, None)
    buckets = []
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        sel = lengths >= low if high is None else (lengths >= low) & (lengths < high)
        buckets.append(GapBucket(low, high, int(sel.sum()), int(lengths[sel].sum())))
    return DeviceGaps(device=device, count=len(lengths), idle_ns=int(lengths.sum()),
                      median_ns=int(np.median(lengths)) if len(lengths) else None,
                      buckets=tuple(buckets))
