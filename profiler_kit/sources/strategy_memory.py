"""Everything known about one strategy's memory, read from whatever files it has.

A strategy folder may hold a trace with ``[memory]`` events (the peak, the op and line that
reached it, what was live, growth per step), the memory categories of its profiled steps
(bytes by category at the peak) and an allocator snapshot pickle (fragmentation, live
blocks by line, out-of-memory events). Each file that cannot be read, or lacks what is
needed, gives one note and the rest goes on; a trace without memory events is listed with
the reason (``unrecorded``), as it was profiled rather than broken.
"""

from __future__ import annotations

from pathlib import Path

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.memory import snapshot as snap
from profiler_kit.analysis.memory.advice import Advice, snapshot_advice, trace_advice
from profiler_kit.analysis.memory.categories import CategoryPeak
from profiler_kit.analysis.memory.explained import (
    SnapshotMemory,
    SnapshotSite,
    StrategyMemory,
    Unrecorded,
)
from profiler_kit.analysis.memory.fit import from_categories
from profiler_kit.analysis.memory.growth import Growth, step_growth
from profiler_kit.analysis.memory.lifetimes import lifetimes
from profiler_kit.analysis.memory.peak import TracePeak, trace_peaks
from profiler_kit.errors import TraceError
from profiler_kit.sources.allocator_snapshot import load_snapshot
from profiler_kit.sources.memory_categories import read_category_peaks
from profiler_kit.trace.memory_records import read_memory_records


def _site_label(frame: snap.Frame | None) -> str | None:
    return None if frame is None else f"{frame.filename}:{frame.line} ({frame.name})"


def read_snapshot_memory(path: Path, top: int) -> tuple[SnapshotMemory, list[Advice]]:
    s = load_snapshot(path)
    frags = snap.fragmentation(s)
    sites = tuple(SnapshotSite(_site_label(x.frame), x.bytes, x.blocks)
                  for x in snap.live_sites(s, top))
    return (SnapshotMemory(str(path), tuple(frags), sites, tuple(snap.oom_events(s)),
                           s.has_frames, tuple(snap.history_peaks(s))),
            snapshot_advice(s, frags))


def explain(label: str, traces: list[Path], categories: list[Path], snapshots: list[Path],
            items_per_step: int | None = None, device_memory: int | None = None,
            top: int = 10, *, by_profkit: bool = False,
            why_no_memory: Note | None = None) -> StrategyMemory:
    """The memory of one strategy (or one file) from the files given; never raises on them.

    ``by_profkit``: the files are a run's that ``profkit run`` made, so a note names
    profkit's options rather than torch.profiler's arguments. ``why_no_memory``: why a
    trace of the strategy has no memory events, where the run recorded it.
    """
    notes: list[Note] = []
    limits: list[Note] = []
    unrecorded: list[Unrecorded] = []
    cats: list[CategoryPeak] = []
    for path in categories:
        try:
            found, remark = read_category_peaks(path)
        except TraceError as exc:
            notes.append(note("memory_file_unreadable", error=str(exc)))
            continue
        cats.extend(found)
        if remark is not None:
            notes.append(remark)
    peaks: list[TracePeak] = []
    growth: list[Growth] = []
    advice: list[Advice] = []
    for path in traces:
        try:
            records = read_memory_records(path)
        except TraceError as exc:
            notes.append(note("memory_file_unreadable", error=str(exc)))
            continue
        if not len(records.allocations):
            unrecorded.append(Unrecorded(str(path), why_no_memory or note("no_memory_events")))
            continue
        if not records.frames.call_from:
            limits.append(note("trace_without_stacks", path=str(path), by_profkit=by_profkit))
        lives = lifetimes(records)
        found = trace_peaks(records, lives, top)
        peaks.extend(found)
        growth.extend(step_growth(life, records.steps, records.shapes_recorded,
                                  records.transform_starts_ns) for life in lives)
        for p in found:
            a = trace_advice(p.device, p.peak_allocated_bytes, p.reserved_at_peak_bytes,
                             p.peak_reserved_bytes)
            if a is not None:
                advice.append(a)
        if device_memory is None and records.device_memory:
            device_memory = max(records.device_memory.values())
    snapshot = None
    for path in snapshots[:1]:
        try:
            snapshot, found_advice = read_snapshot_memory(path, top)
        except TraceError as exc:
            notes.append(note("memory_file_unreadable", error=str(exc)))
            continue
        advice = [a for a in advice if a.device not in {f.device for f in found_advice}]
        advice.extend(found_advice)
        if not snapshot.has_stacks:
            limits.append(note("snapshot_without_stacks", path=str(path)))
    for path in snapshots[1:]:
        notes.append(note("snapshot_left_out", path=str(path)))
    fit = None
    if cats and items_per_step:
        fit = from_categories(max(cats, key=lambda c: c.total_bytes), items_per_step,
                              device_memory)
    return StrategyMemory(label, items_per_step, tuple(cats), tuple(peaks), tuple(growth),
                          snapshot, tuple(advice), fit, device_memory, tuple(notes),
                          tuple(limits), tuple(unrecorded))
