"""The GPU counters per device and step, against hand computations: on a small trace
written here (two steps of known power and clocks), and on a real trace re-exported by
PyTorch's own exporter with sampled counters (the step means recomputed from its raw
``"C"`` events)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from monitor_window import export, need_exporter

from profiler_kit.analysis.perf.gpu_counters import held_mean, held_values
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.json.analysis import trace_document
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"
MS = 1000.0  # µs


def _trace(tmp_path: Path) -> Path:
    """Two 10 ms steps, a 9 ms kernel in each; power 100 W through step 1 and 300 W
    through step 2, the SM clock 1980 MHz then 1500 MHz from the middle of step 2."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "py"}}]
    for i in range(2):
        start = i * 10 * MS
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1,
             "tid": 1, "ts": start, "dur": 10 * MS},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": start + 1, "dur": 2, "args": {"correlation": 10 + i}},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": start + 0.5 * MS,
             "dur": 9 * MS, "args": {"device": 0, "stream": 7, "correlation": 10 + i}}]
    counters = [("Power (W)", 0, 100), ("Power (W)", 10 * MS, 300),
                ("SM Clock (MHz)", 0, 1980), ("SM Clock (MHz)", 15 * MS, 1500),
                ("SM Active (%)", 0, 80), ("SM Active (%)", 10 * MS, 40),
                ("Temperature (C)", 0, 70), ("Temperature (C)", 15 * MS, 88)]
    # each series sampled every 5 ms: the value holds until the next sample
    for name, ts, value in counters:
        for k in range(0, 2):
            events.append({"ph": "C", "name": name, "pid": "GPU 0 Counters",
                           "ts": ts + k * 5 * MS, "args": {"": value}})
    path = tmp_path / "two_steps.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_two_steps_energy_clocks_and_throttling_by_hand(tmp_path: Path) -> None:
    a = analyze_table(load(_trace(tmp_path)))
    c = a.counters
    assert c.samples == 16 and c.series[:2] == ("Power (W)", "SM Clock (MHz)")
    steps = {w.step: w for w in c.windows if w.step is not None}
    one, two = steps[0], steps[1]
    # the device-side steps: [0, 10) and [10, 20) ms
    assert [(w.start_ns, w.dur_ns) for w in (one, two)] == [(0, 10**7), (10**7, 10**7)]
    assert one.power_w == pytest.approx(100) and two.power_w == pytest.approx(300)
    assert one.energy_j == pytest.approx(100 * 0.010)
    assert two.energy_j == pytest.approx(300 * 0.010)
    assert one.sm_active_pct == pytest.approx(80) and two.sm_active_pct == pytest.approx(40)
    # 1980 MHz until 15 ms, 1500 after: 5 ms each in step 2
    assert two.sm_clock_mhz == pytest.approx((1980 + 1500) / 2)
    assert (one.sm_clock_min_mhz, two.sm_clock_min_mhz) == (1980, 1500)
    assert (one.temperature_c, two.temperature_c) == (70, 88)
    (throttle,) = c.throttles
    assert (throttle.step, throttle.from_mhz, throttle.to_mhz, throttle.temperature_c) == \
        (1, 1980, 1500, 88)
    doc = trace_document(a)
    assert doc["gpu_counters"]["throttles"][0]["to_mhz"] == 1500


def test_a_sample_holds_until_the_next_and_the_last_for_one_period() -> None:
    ts = np.array([0, 10, 20])
    values = np.array([1.0, 3.0, 5.0])
    # [5, 25): 1 for 5, 3 for 10, 5 for 5 (the last holds for the period, 10)
    assert held_mean(ts, values, 5, 25) == (pytest.approx((5 + 30 + 25) / 20), 1.0)
    # past the last sample's period: covered in part
    mean, covered = held_mean(ts, values, 25, 45)
    assert mean == 5.0 and covered == pytest.approx(5 / 20)
    assert held_mean(ts, values, -10, 0) == (None, 0.0)  # before the first sample
    assert held_values(ts, values, 12, 21).tolist() == [3.0, 5.0]


def test_a_trace_without_counters_has_none() -> None:
    a = analyze_table(load(DATA / "a100_alexnet.json.gz"))
    assert a.counters is None
    assert trace_document(a)["gpu_counters"] is None


def _by_hand(raw: list[dict], name: str, lo_us: float, hi_us: float) -> float:
    """The time-weighted mean of a series over [lo, hi), each sample held until the next
    (the last for the median period): plain Python over the raw events."""
    samples = sorted((e["ts"], e["args"][""]) for e in raw if e["name"] == name)
    times = [t for t, _ in samples]
    period = sorted(b - a for a, b in zip(times, times[1:], strict=False))[len(times) // 2 - 1] \
        if len(times) > 2 else 0
    total = weight = 0.0
    for i, (t, v) in enumerate(samples):
        end = samples[i + 1][0] if i + 1 < len(samples) else t + period
        held = max(0.0, min(end, hi_us) - max(t, lo_us))
        total += v * held
        weight += held
    return total / weight


def test_a_real_trace_exported_with_counters_by_hand(tmp_path: Path) -> None:
    need_exporter()
    json_trace, pftrace = export(DATA / "h200_concurrent_sequential.pt.trace.json.gz",
                                 tmp_path / "h200", counters=True)
    with gzip.open(json_trace, "rt") as fh:
        raw = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "C"]
    for path in (json_trace, pftrace):
        a = analyze_table(load(path))
        steps = [w for w in a.counters.windows if w.step is not None]
        assert [w.step for w in steps] == [s.number for s in a.steps.steps] == [2, 3, 4]
        for w in steps:
            lo, hi = w.start_ns / 1000, (w.start_ns + w.dur_ns) / 1000
            assert w.sm_active_pct == pytest.approx(_by_hand(raw, "SM Active (%)", lo, hi),
                                                    rel=1e-4)
            assert w.dram_bw_pct == pytest.approx(_by_hand(raw, "DRAM BW (%)", lo, hi),
                                                  rel=1e-4)
            assert w.energy_j == pytest.approx(650 * w.dur_ns / 1e9)
        # the exporter's clock drops from 1980 to 1500 MHz halfway: steps 3 and 4 throttle
        assert [t.step for t in a.counters.throttles] == [3, 4]


def test_a_runs_trace_has_its_energy_per_item(tmp_path: Path) -> None:
    """The strategy's items per step (its run.json, above the trace) turn a step's
    energy into one per item; a trace of its own has none."""
    from profiler_kit import notebook as pk
    from profiler_kit.sources.run_items import items_per_step

    run = tmp_path / "run"
    (run / "batched").mkdir(parents=True)
    trace = _trace(tmp_path).rename(run / "batched" / "main.pt.trace.json")
    (run / "run.json").write_text(json.dumps({"strategies": [
        {"name": "batched", "items_per_step": 4, "trace_files": ["batched/main.pt.trace.json"]},
        {"name": "other", "items_per_step": 9, "trace_files": ["other/main.pt.trace.json"]}]}))
    assert items_per_step(trace) == 4
    c = pk.load(trace).analysis.counters
    assert c.items_per_step == 4
    steps = [w for w in c.windows if w.step is not None]
    assert [w.energy_per_item_j for w in steps] == pytest.approx([1.0 / 4, 3.0 / 4])
    alone = tmp_path / "alone.json"
    alone.write_bytes(trace.read_bytes())
    assert items_per_step(alone) is None
    assert analyze_table(load(alone)).counters.windows[1].energy_per_item_j is None


def test_each_rank_of_a_strategy_has_its_own_share_of_the_items(tmp_path: Path) -> None:
    from profiler_kit.sources.run_items import items_per_step

    run = tmp_path / "ddp"
    (run / "w2").mkdir(parents=True)
    traces = [run / "w2" / f"rank{r}.pt.trace.json" for r in range(2)]
    for t in traces:
        t.write_text("{}")
    (run / "run.json").write_text(json.dumps({"strategies": [
        {"name": "w2", "items_per_step": 64, "per_rank_samples_ns": [[1], [1]],
         "trace_files": [f"w2/{t.name}" for t in traces]}]}))
    assert [items_per_step(t) for t in traces] == [32, 32]


def test_counters_of_something_else_are_no_gpu_counters(tmp_path: Path) -> None:
    path = tmp_path / "queue.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
        {"ph": "C", "name": "queue depth", "pid": 1, "ts": 1, "args": {"": 3}}]}))
    a = analyze_table(load(path))
    assert a.counters is None and len(a.timeline.devices) == 0
