"""What is known about one strategy's memory, as one record: the peaks of its traces, its
memory categories, its allocator snapshot, the advice and what fits, with a note per file
that could not be used (:mod:`profiler_kit.sources.strategy_memory` reads the files).
"""

from __future__ import annotations

import msgspec

from profiler_kit.analysis.core.note import Note
from profiler_kit.analysis.memory import snapshot as snap
from profiler_kit.analysis.memory.advice import Advice
from profiler_kit.analysis.memory.categories import CategoryPeak
from profiler_kit.analysis.memory.fit import Fit
from profiler_kit.analysis.memory.growth import Growth
from profiler_kit.analysis.memory.peak import TracePeak


class SnapshotSite(msgspec.Struct, frozen=True):
    site: str | None  # "file:line (function)" of the first user frame
    bytes: int
    blocks: int


class SnapshotMemory(msgspec.Struct, frozen=True):
    path: str
    fragmentation: tuple[snap.Fragmentation, ...]
    live_sites: tuple[SnapshotSite, ...]
    oom_events: tuple[snap.OomEvent, ...]
    has_stacks: bool
    history_peaks: tuple[snap.HistoryPeak, ...] = ()  # peaks over the recorded actions


class Unrecorded(msgspec.Struct, frozen=True):
    """A trace that recorded nothing about memory, and why."""

    path: str
    why: Note


class StrategyMemory(msgspec.Struct, frozen=True):
    label: str
    items_per_step: int | None
    categories: tuple[CategoryPeak, ...]
    peaks: tuple[TracePeak, ...]
    growth: tuple[Growth, ...]
    snapshot: SnapshotMemory | None
    advice: tuple[Advice, ...]
    fit: Fit | None
    device_memory_bytes: int | None  # given, recorded by the run, or from the trace
    notes: tuple[Note, ...]  # one per file that could not be used, and why
    limits: tuple[Note, ...] = ()  # one per file used with less than it could give
    # traces without memory events (not a fault of the file: how it was profiled)
    unrecorded: tuple[Unrecorded, ...] = ()
