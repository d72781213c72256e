"""Invariants of the whole analysis on random (odd but valid) event tables."""

from __future__ import annotations

from analysis_tables import Alloc, Ev, make_table
from hypothesis import given, settings
from hypothesis import strategies as st

from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.table import Cat

NAMES = ["aten::conv2d", "aten::mm", "aten::add_", "aten::copy_", "ProfilerStep#1",
         "ProfilerStep#2", "nccl:all_reduce", "gemm_kernel", "ncclKernel_x", "k", "forward",
         "enumerate(DataLoader)#x"]
CATS = [Cat.CPU_OP, Cat.USER_ANNOTATION, Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET, Cat.RUNTIME,
        Cat.GPU_USER_ANNOTATION, Cat.PYTHON_FUNCTION, Cat.OTHER]

events = st.builds(
    Ev,
    cat=st.sampled_from(CATS),
    name=st.sampled_from(NAMES),
    ts=st.integers(0, 1000),
    dur=st.integers(0, 300),
    pid=st.integers(0, 2),
    tid=st.integers(0, 2),
    device=st.integers(-1, 1),
    stream=st.integers(-1, 2),
    correlation=st.integers(-1, 5),
    external_id=st.integers(-1, 5),
)
allocs = st.builds(Alloc, ts=st.integers(0, 1000), nbytes=st.integers(-500, 500),
                   total_allocated=st.integers(-1, 2000), total_reserved=st.integers(-1, 4000),
                   device_type=st.integers(0, 1), device_id=st.integers(-1, 1),
                   tid=st.integers(0, 2))


@given(st.lists(events, max_size=40), st.lists(allocs, max_size=8))
@settings(max_examples=60, deadline=None)
def test_analysis_invariants_on_random_tables(evs, mem):
    table = make_table(evs, mem, device_properties=[{"id": 0, "totalGlobalMem": 3000,
                                                     "computeMajor": 8, "warpSize": 32}])
    a = analyze_table(table)
    gpu_durs = [e.dur for e in evs if e.cat in (Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET)]
    whole = a.trace_gpu
    assert whole.total_ns == sum(gpu_durs) == sum(c.total_ns for c in whole.classes)
    assert a.gpu.total_ns <= whole.total_ns  # the steps' share of it
    assert sum(k.count for k in a.kernels) == len(gpu_durs)
    for tl in (a.timeline, a.trace_timeline):
        for d in tl.devices:
            assert 0 <= d.busy_ns <= d.window_ns
            assert d.idle_ns == d.window_ns - d.busy_ns
            assert d.multi_stream_ns <= d.busy_ns
            assert 0 <= d.exposed_communication_ns <= d.communication_busy_ns
        assert tl.busy_ns <= sum(gpu_durs)
    for phases in (a.phases, a.trace_phases):
        for p in phases.phases:
            assert p.share_of_window is None or 0 <= p.share_of_window <= 1
            assert p.gpu_share_of_window is None or 0 <= p.gpu_share_of_window <= 1
            assert p.cpu_total_ns <= p.cpu_sum_ns
    for launches in (a.launches, a.trace_launches):
        for s in launches.streams:
            assert s.idle_ns == s.host_wait_ns + s.kernel_wait_ns + s.other_wait_ns
        assert launches.launched + launches.unlinked <= len(gpu_durs)
    cpu_durs = sum(e.dur for e in evs if e.cat == Cat.CPU_OP)
    assert 0 <= a.cpu.total_ns <= cpu_durs
    assert a.cpu.count == sum(1 for e in evs if e.cat == Cat.CPU_OP)
    a_ = a.attribution
    assert a_.by_correlation + a_.by_external_id + a_.unlinked == len(gpu_durs)
    assert a.memory.recorded == bool(mem)
    st = a.step_terms  # the step decomposition is exact, and idle is never negative
    assert st.window_ns == sum(st.busy_ns.values()) - st.overlap_ns + st.idle_ns
    assert 0 <= st.idle_ns <= st.window_ns
    if st.side == "device":
        assert st.overlap_ns >= 0
    for r in a.recommendations:
        if r.fires_when == "above":
            assert r.measured >= r.threshold
        else:
            assert r.measured < r.threshold
