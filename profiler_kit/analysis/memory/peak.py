"""The peak of a trace's memory: when, how much, which op reached it, and what was live.

The allocated bytes after every ``[memory]`` event (the allocator's ``Total Allocated`` on
a GPU, the bytes allocated in the trace on the CPU: :mod:`profiler_kit.analysis.memory.allocated`);
the peak is the highest, and the allocation that set it is the first event reaching it.
What was live then is every allocation made at or before that event and freed after it,
summed by the user's line that allocated it (or by op where no stacks were recorded).
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.memory.allocated import (
    allocated_after_each,
    carry_forward,
    counts_before_trace,
)
from profiler_kit.analysis.memory.lifetimes import Lifetimes, live_at
from profiler_kit.trace.memory_records import MemoryRecords


class LiveSite(msgspec.Struct, frozen=True):
    site: str | None  # "file:line (function)" of the user's code; None when not recorded
    op: str | None  # the op that allocated most of these bytes
    bytes: int
    allocations: int


class TracePeak(msgspec.Struct, frozen=True):
    device: str
    peak_allocated_bytes: int
    peak_ts_ns: int  # trace clock
    reserved_at_peak_bytes: int | None  # None where the allocator reports none (the CPU)
    peak_reserved_bytes: int | None
    op: str | None  # the op around the allocation that set the peak
    site: str | None  # and its line of user code
    request_bytes: int  # the size of that allocation
    live_sites: tuple[LiveSite, ...]  # live at the peak, by site, largest first
    live_ops: tuple[LiveSite, ...]  # the same by (site, op): what to compare strategies by
    live_bytes_seen: int  # of those allocated inside the trace (the rest predates it)
    counts_before_trace: bool = True  # False on the CPU: only bytes allocated in the trace


def trace_peaks(records: MemoryRecords, lives: list[Lifetimes], top: int = 10) -> list[TracePeak]:
    """One peak per device with memory events."""
    a = records.allocations
    devices = np.array(a.device, dtype=object)
    by_device = {life.device: life for life in lives}
    out = []
    for dev in sorted(by_device):
        rows = np.flatnonzero(devices == dev)
        on_cpu = dev == "cpu"
        allocated = allocated_after_each(on_cpu, a.bytes[rows], a.total_allocated[rows],
                                         a.addr[rows])
        i = int(np.argmax(allocated))
        reserved = a.total_reserved[rows]
        has_reserved = bool((reserved > 0).any())  # the CPU allocator reports 0
        reserved_now = carry_forward(reserved)
        life = by_device[dev]
        ts = int(a.ts_ns[rows[i]])
        k = int(np.searchsorted(life.ts_ns, ts, side="right")) - 1
        setter = k if k >= 0 and life.ts_ns[k] == ts and a.bytes[rows[i]] > 0 else -1
        live = live_at(life, ts)
        out.append(TracePeak(
            dev, int(allocated[i]), ts,
            int(reserved_now[i]) if has_reserved else None,
            int(reserved.max()) if has_reserved else None,
            life.ops[setter] if setter >= 0 else None,
            life.sites[setter] if setter >= 0 else None,
            int(a.bytes[rows[i]]),
            tuple(by_site(life, live)[:top]), tuple(by_site(life, live, by_op=True)),
            int(life.bytes[live].sum()),
            counts_before_trace(on_cpu, a.total_allocated[rows])))
    return out


def by_site(life: Lifetimes, index: np.ndarray, by_op: bool = False) -> list[LiveSite]:
    """The allocations at ``index`` summed by user site (by op where no site, or also by op
    with ``by_op``), largest first."""
    groups: dict[tuple[str | None, str | None], dict[str | None, int]] = {}
    counts: dict[tuple[str | None, str | None], int] = {}
    for i in index.tolist():
        site, op = life.sites[i], life.ops[i]
        key = (site, op if by_op or not site else None)
        ops = groups.setdefault(key, {})
        ops[op] = ops.get(op, 0) + int(life.bytes[i])
        counts[key] = counts.get(key, 0) + 1
    sites = [LiveSite(site, max(ops, key=ops.__getitem__), sum(ops.values()), counts[(site, o)])
             for (site, o), ops in groups.items()]
    sites.sort(key=lambda s: (-s.bytes, s.site or "", s.op or ""))
    return sites
