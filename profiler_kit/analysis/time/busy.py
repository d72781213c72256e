"""GPU busy and idle time per device, busy time per stream, and overlaps.

Busy time is the union of kernel, memcpy and memset intervals (not their sum), so
concurrent streams are not double-counted. A device's window runs from its first
GPU activity to the end of its last, or is given (the GPU-side steps window, see
:mod:`profiler_kit.analysis.core.steps`); idle is the window minus busy time. Every figure
is measured inside the window, so none exceeds it.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.trace.table import Cat, EventTable


class StreamBusy(msgspec.Struct, frozen=True):
    """One stream's busy time (union of its activities) and activity count."""

    stream: int
    busy_ns: int
    activities: int


class DeviceTimeline(msgspec.Struct, frozen=True):
    """One GPU's busy/idle time and the overlaps measured on it."""

    device: int
    window_start_ns: int
    window_ns: int
    busy_ns: int
    idle_ns: int
    idle_share: float | None  # idle / window; None for an empty window
    kernel_busy_ns: int  # union of kernels alone
    memcpy_busy_ns: int
    streams: tuple[StreamBusy, ...]
    multi_stream_ns: int  # time with two or more streams busy
    communication_busy_ns: int
    computation_busy_ns: int  # non-communication kernels
    comm_compute_overlap_ns: int
    exposed_communication_ns: int  # communication time with no computation beside it


class Timeline(msgspec.Struct, frozen=True):
    devices: tuple[DeviceTimeline, ...]
    multi_device_ns: int  # time with two or more devices busy
    trace_start_ns: int
    trace_window_ns: int  # first to last event of any kind

    @property
    def busy_ns(self) -> int:
        return sum(d.busy_ns for d in self.devices)

    @property
    def window_ns(self) -> int:
        return sum(d.window_ns for d in self.devices)

    @property
    def idle_share(self) -> float | None:
        window = self.window_ns
        return (window - self.busy_ns) / window if window > 0 else None


def analyze_timeline(table: EventTable, gpu: GpuActivity, mask: np.ndarray | None = None,
                     window: tuple[int, int] | None = None) -> Timeline:
    """Busy/idle per device and stream, and stream/device/communication overlaps, of the
    activities in ``mask`` (all by default), inside ``window`` (default: each device's
    first start to last end)."""
    if len(table):
        trace_start = int(table.ts_ns.min())
        trace_window = int((table.ts_ns + table.dur_ns).max()) - trace_start
    else:
        trace_start, trace_window = 0, 0
    sel = np.ones(len(gpu), dtype=bool) if mask is None else mask
    rows = gpu.row[sel]
    start = table.ts_ns[rows]
    end = start + table.dur_ns[rows]
    if window is not None:
        start, end = np.clip(start, *window), np.clip(end, *window)
    device = table.device[rows]
    stream = table.stream[rows]
    cat = table.cat[rows]
    comm = gpu.klass[sel] == classify.CLASS_INDEX[classify.COMMUNICATION]
    is_kernel = cat == Cat.KERNEL

    devices: list[DeviceTimeline] = []
    device_unions: list[tuple[np.ndarray, np.ndarray]] = []
    for dev in distinct(device).tolist():
        on = device == dev
        s, e = start[on], end[on]
        busy_u = intervals.union(s, e)
        device_unions.append(busy_u)
        busy = int((busy_u[1] - busy_u[0]).sum())
        w0, w1 = (int(s.min()), int(e.max())) if window is None else window
        span = w1 - w0
        stream_unions = []
        streams = []
        for st in distinct(stream[on]).tolist():
            sel = on & (stream == st)
            u = intervals.union(start[sel], end[sel])
            stream_unions.append(u)
            streams.append(StreamBusy(int(st), int((u[1] - u[0]).sum()), int(sel.sum())))
        comm_u = intervals.union(start[on & comm], end[on & comm])
        comp_u = intervals.union(start[on & is_kernel & ~comm], end[on & is_kernel & ~comm])
        comm_busy = int((comm_u[1] - comm_u[0]).sum())
        overlap = intervals.intersection_length(comm_u, comp_u)
        mem = on & (cat == Cat.MEMCPY)
        devices.append(
            DeviceTimeline(
                device=int(dev),
                window_start_ns=w0,
                window_ns=span,
                busy_ns=busy,
                idle_ns=span - busy,
                idle_share=(span - busy) / span if span > 0 else None,
                kernel_busy_ns=intervals.length(start[on & is_kernel], end[on & is_kernel]),
                memcpy_busy_ns=intervals.length(start[mem], end[mem]),
                streams=tuple(sorted(streams, key=lambda x: -x.busy_ns)),
                multi_stream_ns=intervals.covered_at_least(stream_unions, 2),
                communication_busy_ns=comm_busy,
                computation_busy_ns=int((comp_u[1] - comp_u[0]).sum()),
                comm_compute_overlap_ns=overlap,
                exposed_communication_ns=comm_busy - overlap,
            )
        )
    return Timeline(
        devices=tuple(devices),
        multi_device_ns=intervals.covered_at_least(device_unions, 2),
        trace_start_ns=trace_start,
        trace_window_ns=trace_window,
    )
