"""Kernel launches and the causes of GPU idle time, per device and stream.

Launches: every GPU activity linked to the runtime call that launched it (correlation
id). The CPU launch duration is that call's duration; the launch delay is the time from
the call's end to the activity's start (0 when the activity starts first), as Holistic
Trace Analysis (HTA) defines them. The queue length of a stream is the number of
activities launched on it and not yet started: +1 at each launch call, -1 at each start.

Idle causes, per stream, as HTA's idle time breakdown: each gap between consecutive
activities on a stream is

* host wait when the call that launched the next activity started after the previous
  activity ended (the CPU had not enqueued it yet);
* kernel wait when it is shorter than ``KERNEL_WAIT_NS`` (back-to-back launch overhead);
* other otherwise (waiting on an event, another stream, a synchronization...).

A device's idle causes are the same rules on its whole timeline: each gap between its
busy periods (no activity on any of its streams) is classed by the activity that ends
it, so they add up to the device's idle time between its first and last activity.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core.arrays import distinct, sorted_percentile
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.trace.table import EventTable

QUEUE_BINS = 32
KERNEL_WAIT_NS = 30_000  # HTA's consecutive_kernel_delay default (30, in its microseconds)


class Distribution(msgspec.Struct, frozen=True):
    """Count, total and percentiles of a set of durations (ns)."""

    count: int
    total_ns: int
    mean_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    max_ns: int


class StreamLaunches(msgspec.Struct, frozen=True):
    """One stream: its idle time by cause and its launch queue."""

    device: int
    stream: int
    activities: int
    idle_ns: int  # sum of gaps between consecutive activities
    host_wait_ns: int
    kernel_wait_ns: int
    other_wait_ns: int
    max_queue_length: int  # most activities launched and not yet started at once
    mean_queue_length: float  # time-weighted over the stream's first launch to last start
    # the queue length over time: its maximum in each of QUEUE_BINS equal slices of the
    # stream's first launch to last start (empty when nothing was launched)
    queue_start_ns: int = 0
    queue_bin_ns: int = 0
    queue_max_by_bin: tuple[int, ...] = ()


class DeviceLaunches(msgspec.Struct, frozen=True):
    """One device: the causes of its idle time (gaps between its busy periods), and its
    launch delays."""

    device: int
    idle_ns: int
    host_wait_ns: int
    kernel_wait_ns: int
    other_wait_ns: int
    launch_delay: Distribution | None


class Launches(msgspec.Struct, frozen=True):
    """Launch statistics and idle causes of the GPU activities in one window."""

    launched: int  # activities linked to a runtime call
    unlinked: int  # activities without one (not in the launch figures)
    cpu_launch: Distribution | None  # duration of the runtime calls
    launch_delay: Distribution | None  # launch call end -> activity start (>= 0)
    devices: tuple[DeviceLaunches, ...]
    streams: tuple[StreamLaunches, ...]

    @property
    def idle_ns(self) -> int:
        return sum(d.idle_ns for d in self.devices)

    @property
    def host_wait_share(self) -> float | None:
        idle = self.idle_ns
        return sum(d.host_wait_ns for d in self.devices) / idle if idle > 0 else None


def distribution(values: np.ndarray) -> Distribution | None:
    if not len(values):
        return None
    v = np.sort(values.astype(np.int64, copy=False))
    return Distribution(
        count=int(len(v)), total_ns=int(v.sum()), mean_ns=float(v.mean()),
        p50_ns=sorted_percentile(v, 50), p90_ns=sorted_percentile(v, 90),
        p99_ns=sorted_percentile(v, 99), max_ns=int(v[-1]),
    )


class Activities(msgspec.Struct, frozen=True):
    """The selected GPU activities as columns, with their launch calls (-1: none)."""

    launch: np.ndarray  # table row of the launch call
    start: np.ndarray
    end: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    linked: np.ndarray  # has a launch call
    launch_start: np.ndarray


def activities(table: EventTable, gpu: GpuActivity, mask: np.ndarray | None) -> Activities:
    """The activities in ``mask`` (all by default)."""
    sel = np.ones(len(gpu), dtype=bool) if mask is None else mask
    rows = gpu.row[sel]
    launch = gpu.launch_row[sel]
    start = table.ts_ns[rows]
    linked = launch >= 0
    return Activities(launch=launch, start=start, end=start + table.dur_ns[rows],
                      device=table.device[rows], stream=table.stream[rows], linked=linked,
                      launch_start=np.where(linked, table.ts_ns[np.maximum(launch, 0)], -1))


def analyze_launches(table: EventTable, gpu: GpuActivity,
                     mask: np.ndarray | None = None) -> Launches:
    """Launch statistics and idle causes of the activities in ``mask`` (all by default)."""
    acts = activities(table, gpu, mask)
    launch, start, end, device, stream, linked, l_start = (
        acts.launch, acts.start, acts.end, acts.device, acts.stream, acts.linked,
        acts.launch_start)
    l_end = np.where(linked, l_start + table.dur_ns[np.maximum(launch, 0)], -1)
    delay = np.maximum(start - l_end, 0)

    streams: list[StreamLaunches] = []
    devices: list[DeviceLaunches] = []
    for dev in distinct(device).tolist():
        on_dev = device == dev
        for st in distinct(stream[on_dev]).tolist():
            on = np.flatnonzero(on_dev & (stream == st))
            streams.append(_stream(int(dev), int(st), start[on], end[on], l_start[on],
                                   linked[on]))
        on = np.flatnonzero(on_dev)
        causes = _gaps(start[on], end[on], l_start[on], linked[on], union=True)
        devices.append(DeviceLaunches(
            int(dev), *causes, launch_delay=distribution(delay[on_dev & linked]),
        ))
    return Launches(
        launched=int(linked.sum()),
        unlinked=int((~linked).sum()),
        cpu_launch=distribution((l_end - l_start)[linked]),
        launch_delay=distribution(delay[linked]),
        devices=tuple(devices),
        streams=tuple(streams),
    )


def _gaps(start: np.ndarray, end: np.ndarray, l_start: np.ndarray, linked: np.ndarray,
          union: bool) -> tuple[int, int, int, int]:
    """Idle, host wait, kernel wait and other wait between activities in start order.

    With ``union``, a gap runs from the end of everything before (the busy union) and only
    positive gaps count; without, from the previous activity's end (HTA's per-stream sum).
    """
    if len(start) > 1 and not (start[1:] >= start[:-1]).all():  # table order is time order
        order = np.argsort(start, kind="stable")
        start, end, l_start, linked = start[order], end[order], l_start[order], linked[order]
    s, e, ls, lk = start, end, l_start, linked
    prev_end = np.maximum.accumulate(e)[:-1] if union else e[:-1]
    gap = s[1:] - prev_end
    count = gap > 0 if union else np.ones(len(gap), dtype=bool)
    host = count & lk[1:] & (ls[1:] > prev_end)
    kernel = count & ~host & (gap < KERNEL_WAIT_NS)
    other = count & ~host & ~kernel
    return (int(gap[count].sum()), int(gap[host].sum()), int(gap[kernel].sum()),
            int(gap[other].sum()))


def _stream(device: int, stream: int, start: np.ndarray, end: np.ndarray,
            l_start: np.ndarray, linked: np.ndarray) -> StreamLaunches:
    idle, host, kernel, other = _gaps(start, end, l_start, linked, union=False)
    q_max, q_mean, q_start, q_bin, q_series = _queue(l_start[linked], start[linked])
    return StreamLaunches(
        device=device, stream=stream, activities=int(len(start)),
        idle_ns=idle, host_wait_ns=host, kernel_wait_ns=kernel, other_wait_ns=other,
        max_queue_length=q_max, mean_queue_length=q_mean, queue_start_ns=q_start,
        queue_bin_ns=q_bin, queue_max_by_bin=q_series,
    )


def _queue(launch_ts: np.ndarray, start_ts: np.ndarray
           ) -> tuple[int, float, int, int, tuple[int, ...]]:
    """Most and time-weighted mean activities launched but not started (launches first
    at equal times, as a launch precedes its own start), and the most in each time bin."""
    if not len(launch_ts):
        return 0, 0.0, 0, 0, ()
    times = np.concatenate([launch_ts, start_ts])
    steps = np.concatenate([np.ones(len(launch_ts), np.int64),
                            -np.ones(len(start_ts), np.int64)])
    order = np.argsort(times, kind="stable")  # launches come first in ``times``
    times, steps = times[order], steps[order]
    depth = np.cumsum(steps)
    t0 = int(times[0])
    span = int(times[-1]) - t0
    mean = float((depth[:-1] * np.diff(times)).sum() / span) if span > 0 else 0.0
    bin_ns = max(-(-span // QUEUE_BINS), 1)
    bins = np.minimum((times - t0) // bin_ns, QUEUE_BINS - 1)
    series = np.zeros(QUEUE_BINS, dtype=np.int64)
    np.maximum.at(series, bins, depth)
    # a bin with no event keeps the length the previous one ended with
    # bins ascend with time: the last event of bin b is just before the first of b + 1
    ends = np.searchsorted(bins, np.arange(QUEUE_BINS), side="right") - 1
    last = depth[np.maximum(ends, 0)]
    seen = np.zeros(QUEUE_BINS, dtype=bool)
    seen[bins] = True
    carry = 0
    for i in range(QUEUE_BINS):
        if seen[i]:
            series[i] = max(series[i], carry)
            carry = int(last[i])
        else:
            series[i] = carry
    return int(depth.max()), mean, t0, int(bin_ns), tuple(int(x) for x in series)
