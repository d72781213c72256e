"""Memory over time, checked against the raw ``[memory]`` events read here with plain json."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from analysis_tables import Alloc, make_table, op
from raw_memory import in_trace_allocated
from real_traces import analysis as analyzed

from profiler_kit.analysis.trace_analysis import analyze_table

DATA = Path(__file__).parents[1] / "data"


def raw_memory(name: str) -> dict[tuple[int, int], list[dict]]:
    """Every ``[memory]`` event's args per (device type, device id), in time order."""
    with gzip.open(DATA / name, "rt") as f:
        events = json.load(f)["traceEvents"]
    out: dict[tuple[int, int], list[dict]] = {}
    for e in sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"]):
        a = e["args"]
        key = (a["Device Type"], a["Device Id"] if a["Device Type"] else -1)
        out.setdefault(key, []).append({**a, "ts": e["ts"]})
    return out


def test_series_is_what_the_allocator_reported():
    analysis = analyzed("h100_vit_image_classification.json.gz")
    timeline = analysis.memory_timeline
    raw = raw_memory("h100_vit_image_classification.json.gz")
    assert timeline.recorded
    assert {d.device for d in timeline.devices} == {"cpu", "cuda:0"}
    for series in timeline.devices:
        events = raw[(1, 0)] if series.device == "cuda:0" else raw[(0, -1)]
        assert series.events == len(events) == len(series.ts_ns)
        assert not series.downsampled
        if series.device == "cpu":  # the trace's own allocations, walked by address
            assert list(series.allocated_bytes) == in_trace_allocated(events)
        # a first profiling session: on the CPU too, what the allocator reported
        assert list(series.allocated_bytes) == [e["Total Allocated"] for e in events]
        peak = max(e["Total Allocated"] for e in events)
        assert series.peak_allocated_bytes == peak
        first_peak = next(e for e in events if e["Total Allocated"] == peak)
        # times are from the trace's first event, in ns (the trace has µs with 3 decimals)
        assert abs(series.peak_ts_ns + timeline.start_ns - first_peak["ts"] * 1000) <= 1
        if series.device == "cuda:0":
            assert list(series.reserved_bytes) == [e["Total Reserved"] for e in events]
        else:  # the CPU allocator reports 0 reserved, which says nothing
            assert series.reserved_bytes == ()
    # the same peak as the memory analysis reports
    peaks = {d.device: d.peak_allocated_bytes for d in analysis.memory.devices}
    assert peaks == {d.device: d.peak_allocated_bytes for d in timeline.devices}


def test_cpu_trace_starts_with_the_trace():
    analysis = analyzed("cpu_torch_profiler.pt.trace.json.gz")
    timeline = analysis.memory_timeline
    assert timeline.start_ns == analysis.timeline.trace_start_ns
    (series,) = timeline.devices
    assert series.device == "cpu"
    assert series.peak_allocated_bytes == analysis.memory.devices[0].peak_allocated_bytes
    assert min(series.ts_ns) >= 0


def test_no_memory_events_means_nothing_recorded():
    analysis = analyzed("a100_alexnet.json.gz")
    assert not analysis.memory_timeline.recorded
    assert analysis.memory_timeline.devices == ()


def test_running_sum_when_totals_are_missing():
    table = make_table([op("aten::add", 0, 100)],
                       [Alloc(10, 100), Alloc(20, 50), Alloc(30, -100), Alloc(40, 200)])
    (series,) = analyze_table(table).memory_timeline.devices
    assert series.allocated_bytes == (100, 150, 50, 250)
    assert series.reserved_bytes == ()
    assert (series.peak_allocated_bytes, series.peak_ts_ns) == (250, 40)


def test_long_series_is_thinned_keeping_the_peak_and_the_ends():
    # a saw-tooth of 10,000 events with one spike in the middle
    allocs, total = [], 0
    for i in range(10_000):
        delta = 1000 if i % 2 == 0 else -900
        if i == 5001:
            delta = 10**9
        elif i == 5002:
            delta = -10**9
        total += delta
        allocs.append(Alloc(10 + i, delta, total_allocated=total, total_reserved=2 * 10**9))
    table = make_table([op("aten::add", 0, 20_000)], allocs)
    (series,) = analyze_table(table).memory_timeline.devices
    assert series.downsampled and series.events == 10_000
    assert len(series.ts_ns) <= 4000
    assert series.ts_ns[0] == 10 and series.ts_ns[-1] == 10_009
    assert series.peak_allocated_bytes == max(a.total_allocated for a in allocs)
    assert series.peak_ts_ns == 10 + 5001
    assert series.peak_allocated_bytes in series.allocated_bytes
    assert list(series.ts_ns) == sorted(series.ts_ns)
    assert set(series.reserved_bytes) == {2 * 10**9}
