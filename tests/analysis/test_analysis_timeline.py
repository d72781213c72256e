"""Interval unions, busy/idle, stream/device/communication overlap, steps and phases."""

from __future__ import annotations

import numpy as np
from analysis_tables import kernel, launch, make_table, op
from hypothesis import given, settings
from hypothesis import strategies as st

from profiler_kit.analysis.core import intervals
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.core.steps import analyze_steps
from profiler_kit.analysis.time.busy import analyze_timeline
from profiler_kit.analysis.time.phases import analyze_phases
from profiler_kit.trace.table import Cat

spans = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=30)


@given(spans)
@settings(max_examples=200, deadline=None)
def test_union_length_matches_unit_grid(items):
    covered = set()
    for s, d in items:
        covered.update(range(s, s + d))
    starts = np.array([s for s, _ in items], dtype=np.int64)
    ends = np.array([s + d for s, d in items], dtype=np.int64)
    assert intervals.length(starts, ends) == len(covered)


@given(st.lists(spans, min_size=1, max_size=4), st.integers(1, 4))
@settings(max_examples=150, deadline=None)
def test_covered_at_least_k_matches_unit_grid(sets, k):
    counts: dict[int, int] = {}
    unions = []
    for items in sets:
        cells = set()
        for s, d in items:
            cells.update(range(s, s + d))
        for c in cells:
            counts[c] = counts.get(c, 0) + 1
        unions.append(intervals.union(np.array([s for s, _ in items], dtype=np.int64),
                                      np.array([s + d for s, d in items], dtype=np.int64)))
    assert intervals.covered_at_least(unions, k) == sum(1 for v in counts.values() if v >= k)


def _timeline(events):
    t = make_table(events)
    tree = build_op_tree(t)
    return analyze_timeline(t, attribute_gpu(t, tree))


def test_busy_idle_and_stream_overlap_on_one_device():
    tl = _timeline([
        kernel("a", 0, 100, stream=7),
        kernel("b", 50, 100, stream=8),  # 50 ns beside a
        kernel("c", 300, 100, stream=7),  # gap 150..300
    ])
    (d,) = tl.devices
    assert (d.window_ns, d.busy_ns, d.idle_ns) == (400, 250, 150)
    assert d.multi_stream_ns == 50
    assert {s.stream: s.busy_ns for s in d.streams} == {7: 200, 8: 100}
    assert tl.idle_share == 150 / 400


def test_overlap_between_devices():
    tl = _timeline([kernel("a", 0, 100, device=0), kernel("b", 60, 100, device=1)])
    assert [d.busy_ns for d in tl.devices] == [100, 100]
    assert tl.multi_device_ns == 40


def test_communication_overlap_and_exposed_time():
    tl = _timeline([
        op("c10d::allreduce_", 0, 10), launch(1, corr=1),
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 100, 200, corr=1, stream=40),
        kernel("compute_a", 50, 100, stream=7),  # overlaps comm for 50
        kernel("compute_b", 250, 20, stream=7),  # overlaps comm for 20
    ])
    (d,) = tl.devices
    assert d.communication_busy_ns == 200
    assert d.comm_compute_overlap_ns == 70
    assert d.exposed_communication_ns == 130


def test_cpu_only_trace_has_no_devices():
    tl = _timeline([op("aten::mm", 0, 10)])
    assert tl.devices == () and tl.busy_ns == 0 and tl.idle_share is None


def test_steps_median_and_spread():
    t = make_table([
        op("ProfilerStep#3", 0, 100, cat=Cat.USER_ANNOTATION),
        op("ProfilerStep#4", 100, 300, cat=Cat.USER_ANNOTATION),
        op("ProfilerStep#5", 400, 200, cat=Cat.USER_ANNOTATION),
        op("ProfilerStep#4", 150, 250, cat=Cat.GPU_USER_ANNOTATION),  # GPU side: not a step
        op("aten::mm", 10, 20),
    ])
    s = analyze_steps(t)
    assert s.source == "ProfilerStep"
    assert [x.number for x in s.steps] == [3, 4, 5]
    assert (s.count, s.median_ns, s.min_ns, s.max_ns) == (3, 200, 100, 300)
    assert s.iqr_ns == 100.0 and s.spread == 0.5
    assert (s.start_ns, s.end_ns) == (0, 600)


def test_without_steps_the_window_is_used_and_said():
    s = analyze_steps(make_table([op("aten::mm", 10, 20), op("aten::add", 50, 40)]))
    assert s.source == "window" and s.count == 0 and s.median_ns == 80


def test_empty_table_does_not_crash():
    s = analyze_steps(make_table([]))
    assert s.source == "window" and s.median_ns == 0 and s.spread is None


def _phases(t, window):
    tree = build_op_tree(t)
    return analyze_phases(t, tree, attribute_gpu(t, tree), window)


def test_phases_are_unions_with_gpu_work_launched_inside_and_skip_steps():
    t = make_table([
        op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
        op("forward", 0, 300, cat=Cat.USER_ANNOTATION),
        op("forward", 500, 200, cat=Cat.USER_ANNOTATION),
        op("backward", 300, 150, cat=Cat.USER_ANNOTATION),
        op("allreduce", 600, 300, cat=Cat.USER_ANNOTATION, tid=2),  # async: overlapping
        op("allreduce", 650, 300, cat=Cat.USER_ANNOTATION, tid=3),
        launch(10, corr=1), launch(520, corr=2), launch(310, corr=3),
        launch(10, corr=4, tid=2),  # another thread: not inside forward
        kernel("k1", 100, 100, corr=1), kernel("k2", 150, 100, corr=2),  # overlap 50
        kernel("k3", 400, 10, corr=3), kernel("k4", 900, 10, corr=4),
        kernel("forward", 10, 400, cat=Cat.GPU_USER_ANNOTATION),
    ])
    ph = {p.name: p for p in _phases(t, (0, 1000)).phases}
    assert set(ph) == {"forward", "backward", "allreduce"}
    fwd = ph["forward"]
    assert (fwd.count, fwd.cpu_total_ns, fwd.gpu_total_ns, fwd.gpu_span_ns) == (2, 500, 150, 400)
    assert ph["backward"].share_of_window == 0.15 and ph["backward"].gpu_total_ns == 10
    ar = ph["allreduce"]
    assert (ar.cpu_sum_ns, ar.cpu_total_ns) == (600, 350)  # the union, not the sum
    clipped = {p.name: p for p in _phases(t, (0, 700)).phases}
    assert clipped["allreduce"].cpu_total_ns == 100 and clipped["forward"].cpu_total_ns == 500


def test_hotspots_per_device_when_several_gpus():
    from profiler_kit.analysis.trace_analysis import analyze_table

    a = analyze_table(make_table([kernel("gemm_a", 0, 10, device=0),
                                  kernel("elementwise_kernel", 0, 30, device=1)]))
    assert [(d, bd.total_ns) for d, bd in a.gpu_by_device] == [(0, 10), (1, 30)]
    assert a.gpu.total_ns == 40
