"""The representative step's intervals, checked against the raw trace read here with plain json."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

from analysis_tables import kernel, launch, make_table, op
from real_traces import analysis as analyzed

from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import Cat

DATA = Path(__file__).parents[1] / "data"


def raw_events(name: str) -> list[dict]:
    with gzip.open(DATA / name, "rt") as f:
        return json.load(f)["traceEvents"]


def cpu_steps(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("name", "").startswith("ProfilerStep#")
            and e.get("cat") in ("cpu_op", "user_annotation")]


def test_cpu_trace_step_nearest_the_median_with_its_ops():
    name = "cpu_torch_profiler.pt.trace.json.gz"
    events = raw_events(name)
    steps = cpu_steps(events)
    median = statistics.median(e["dur"] for e in steps)
    chosen = min(steps, key=lambda e: (abs(e["dur"] - median), e["ts"]))
    t0, t1 = chosen["ts"], chosen["ts"] + chosen["dur"]
    expected = [e for e in events if e.get("ph") == "X"
                and e.get("cat") in ("cpu_op", "user_annotation") and t0 <= e["ts"] < t1]

    tl = analyzed(name).step_timeline
    assert tl.step == int(chosen["name"].split("#")[1])
    assert abs(tl.step_dur_ns - chosen["dur"] * 1000) <= 1
    assert tl.intervals_total == len(tl.lane) == len(expected)
    assert not tl.downsampled
    assert [lane.kind for lane in tl.lanes] == ["cpu"]
    shown = sorted((tl.names[n], d) for n, d in zip(tl.name, tl.dur_ns, strict=True))
    want = sorted((e["name"], round(e["dur"] * 1000)) for e in expected)
    assert [n for n, _ in shown] == [n for n, _ in want]
    assert all(abs(a - b) <= 1 for (_, a), (_, b) in zip(shown, want, strict=True))
    # the step span itself is the one outermost interval starting at offset 0
    outer = [i for i, d in enumerate(tl.depth) if d == 0 and tl.offset_ns[i] == 0]
    assert tl.names[tl.name[outer[0]]].startswith("ProfilerStep#")
    assert tl.lanes[0].rows == max(tl.depth) + 1


def test_gpu_trace_kernels_launched_in_the_step():
    name = "h100_vit_image_classification.json.gz"
    events = raw_events(name)
    (step,) = cpu_steps(events)
    t0, t1 = step["ts"], step["ts"] + step["dur"]
    launches = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and t0 <= e["ts"] < t1 and "correlation" in e.get("args", {})}
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
           and e["args"].get("correlation") in launches]

    tl = analyzed(name).step_timeline
    gpu_lanes = {i for i, lane in enumerate(tl.lanes) if lane.kind == "gpu"}
    shown = [i for i, lane in enumerate(tl.lane) if lane in gpu_lanes]
    assert len(shown) == len(gpu) > 0
    assert abs(sum(tl.dur_ns[i] for i in shown) - sum(e["dur"] for e in gpu) * 1000) <= len(gpu)
    assert {tl.lanes[i].label for i in gpu_lanes} == {
        f"GPU {e['args']['device']} stream {e['args']['stream']}" for e in gpu}
    # GPU work runs after its launch, so the window may end after the CPU-side step
    last_end = max(e["ts"] + e["dur"] for e in gpu)
    assert abs(tl.window_ns - (max(last_end, t1) - t0) * 1000) <= 1
    classes = {tl.classes[tl.klass[i]] for i in shown}
    assert "gemm" in classes


def test_longest_intervals_kept_when_there_are_too_many():
    table = load(DATA / "h100_vit_image_classification.json.gz")
    full = analyze_table(table).step_timeline
    from profiler_kit.analysis.core.launch_links import attribute_gpu
    from profiler_kit.analysis.core.op_tree import build_op_tree
    from profiler_kit.analysis.core.steps import analyze_steps
    from profiler_kit.analysis.time.step_timeline import step_timeline

    tree = build_op_tree(table)
    small = step_timeline(table, tree, attribute_gpu(table, tree), analyze_steps(table),
                          max_intervals=100)
    assert small.downsampled and small.intervals_total == full.intervals_total > 100
    assert len(small.lane) == 100
    assert sorted(small.dur_ns) == sorted(full.dur_ns)[-100:]


def test_lanes_per_thread_and_stream_and_unlinked_kernels():
    table = make_table([
        op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
        op("aten::mm", 100, 200),
        launch(150, corr=1),
        op("aten::add", 300, 50, tid=2),
        kernel("gemm_kernel", 400, 300, corr=1, stream=7),
        kernel("nccl_allreduce", 500, 100, stream=9),  # no launch: starts in the step
        kernel("late_unlinked", 2000, 10, stream=9),  # starts after the step: not in it
        op("ProfilerStep#2", 1500, 3000, cat=Cat.USER_ANNOTATION),
        op("ProfilerStep#3", 5000, 900, cat=Cat.USER_ANNOTATION),
    ])
    tl = analyze_table(table).step_timeline
    assert tl.step == 1  # durations 1000, 3000, 900: median 1000
    assert [lane.label for lane in tl.lanes] == [
        "CPU thread 1", "CPU thread 2", "GPU 0 stream 7", "GPU 0 stream 9"]
    by_name = {tl.names[n]: i for i, n in enumerate(tl.name)}
    assert set(by_name) == {"ProfilerStep#1", "aten::mm", "aten::add", "gemm_kernel",
                            "nccl_allreduce"}
    mm, gemm = by_name["aten::mm"], by_name["gemm_kernel"]
    assert (tl.lane[mm], tl.depth[mm], tl.offset_ns[mm], tl.dur_ns[mm]) == (0, 1, 100, 200)
    assert (tl.lane[gemm], tl.offset_ns[gemm]) == (2, 400)
    assert tl.classes[tl.klass[gemm]] == "gemm"  # from the op that launched it
    assert tl.classes[tl.klass[by_name["nccl_allreduce"]]] == "communication"
    assert tl.window_ns == 1000


def test_trace_without_steps_shows_the_whole_window():
    table = make_table([op("aten::mm", 0, 200), op("aten::add", 500, 100, tid=2)])
    tl = analyze_table(table).step_timeline
    assert (tl.source, tl.step, tl.step_dur_ns, tl.window_ns) == ("window", None, 600, 600)
    assert tl.intervals_total == 2
