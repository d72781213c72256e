"""Each allocation of a trace with the time it was freed, its op and its line of user code.

A ``[memory]`` event with a positive size allocates ``Addr``; the next event on the same
device and address frees it (or reuses it, which means it was freed unrecorded). An
allocation with no later event on its address is still alive when the trace ends.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.memory.code_sites import enclosing_ops, user_sites
from profiler_kit.trace.memory_records import MemoryRecords

NEVER = np.iinfo(np.int64).max  # the free time of an allocation alive at the trace's end


class Lifetimes(msgspec.Struct, frozen=True):
    """The allocations of one device, in time order."""

    device: str
    ts_ns: np.ndarray  # int64, allocated at
    freed_ns: np.ndarray  # int64, NEVER when still alive at the trace's end
    bytes: np.ndarray  # int64 > 0
    ops: tuple[str | None, ...]  # innermost CPU op around the allocation
    sites: tuple[str | None, ...]  # "file:line (function)" of the user's code, if recorded
    has_addresses: bool  # False: the trace has no Addr, so no frees can be matched


def lifetimes(records: MemoryRecords) -> list[Lifetimes]:
    """Per device (in name order), every allocation with when it was freed."""
    a = records.allocations
    devices = np.array(a.device, dtype=object)
    out = []
    for dev in sorted(set(a.device)):
        rows = np.flatnonzero(devices == dev)
        addr, ts, size = a.addr[rows], a.ts_ns[rows], a.bytes[rows]
        freed = np.full(len(rows), NEVER, dtype=np.int64)
        by_addr = np.lexsort((np.arange(len(rows)), addr))
        same_next = addr[by_addr][1:] == addr[by_addr][:-1]
        has_next = np.append(same_next, False) & (addr[by_addr] >= 0)
        nxt = np.append(ts[by_addr][1:], NEVER)
        freed[by_addr[has_next]] = nxt[has_next]
        is_alloc = size > 0
        keep = np.flatnonzero(is_alloc)
        tid, when = a.tid[rows][keep], ts[keep]
        out.append(Lifetimes(
            dev, when, freed[keep], size[keep],
            tuple(enclosing_ops(records.ops, tid, when)),
            tuple(user_sites(records.frames, tid, when)),
            bool((addr >= 0).any())))
    return out


def live_at(life: Lifetimes, ts_ns: int) -> np.ndarray:
    """Indices of the allocations alive at ``ts_ns`` (allocated at or before, freed after)."""
    return np.flatnonzero((life.ts_ns <= ts_ns) & (life.freed_ns > ts_ns))
