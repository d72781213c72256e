"""Windows and shares on real traces: every figure inside its window, every share in [0, 1],
and the steps' GPU figures and phases recomputed here from the raw JSON."""

from __future__ import annotations

import gzip
import json

import pytest
from real_traces import DATA, analysis, ns, union_length

ALL = sorted(p.name for p in DATA.glob("*.json.gz"))
GPU = {"kernel", "gpu_memcpy", "gpu_memset"}
RUNTIME = {"cuda_runtime", "cuda_driver"}


def raw(name: str) -> list[dict]:
    return json.loads(gzip.decompress((DATA / name).read_bytes()))["traceEvents"]


@pytest.mark.parametrize("name", ALL)
def test_every_share_is_in_unit_interval_and_no_figure_exceeds_its_window(name):
    a = analysis(name)
    for tl in (a.timeline, a.trace_timeline):
        for d in tl.devices:
            assert 0 <= d.busy_ns <= d.window_ns
            assert d.idle_share is None or 0 <= d.idle_share <= 1
            for part in (d.kernel_busy_ns, d.memcpy_busy_ns, d.multi_stream_ns,
                         d.communication_busy_ns, d.exposed_communication_ns,
                         d.comm_compute_overlap_ns):
                assert 0 <= part <= d.window_ns
    for phases in (a.phases, a.trace_phases):
        for p in phases.phases:
            assert p.share_of_window is None or 0 <= p.share_of_window <= 1
            assert p.gpu_share_of_window is None or 0 <= p.gpu_share_of_window <= 1
    for bd in (a.gpu, a.trace_gpu):
        assert all(0 <= c.share <= 1 for c in bd.classes)
    # a device's idle causes add up to its idle time between its first and last activity
    idle = {d.device: d.idle_ns for d in a.trace_timeline.devices}
    for d in a.trace_launches.devices:
        assert d.idle_ns == d.host_wait_ns + d.kernel_wait_ns + d.other_wait_ns == idle[d.device]
    p = a.precision
    for share in (p.low_precision_share, p.tensor_core_share):
        assert share is None or 0 <= share <= 1


def test_mi300_exposed_communication_within_the_steps_window():
    a = analysis("mi300_resnet_act_checkpoint.json.gz")
    assert a.window == "steps"
    (d,) = a.timeline.devices
    assert d.exposed_communication_ns <= d.window_ns
    s = a.steps
    assert d.window_start_ns == s.gpu_window_start_ns
    assert d.window_ns == s.gpu_window_end_ns - s.gpu_window_start_ns
    # the whole trace is a larger window, with its own figures
    (whole,) = a.trace_timeline.devices
    assert whole.window_ns >= d.window_ns


def launched_in(events: list[dict], spans: list[tuple[int, int]], same_tid=None) -> set:
    """Correlation ids of runtime calls inside one of ``spans`` (on ``same_tid``'s thread
    when given, a (pid, tid) per span)."""
    out = set()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            s, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            for i, (a, b) in enumerate(spans):
                if a <= s and end <= b and (same_tid is None
                                            or same_tid[i] == (e["pid"], e["tid"])):
                    out.add(e["args"]["correlation"])
                    break
    return out


@pytest.mark.parametrize("name", ["a100_ddp_nccl_rank0.json.gz",
                                  "mi300_resnet_act_checkpoint.json.gz"])
def test_steps_gpu_busy_by_hand(name):
    """GPU busy in the steps: the union of the activities whose launch call lies inside a
    CPU-side ProfilerStep span, inside the GPU-side window they span."""
    events = raw(name)
    steps = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
             if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op")
             and str(e.get("name", "")).startswith("ProfilerStep#")]
    corr = launched_in(events, steps)
    acts = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
            if e.get("ph") == "X" and e.get("cat") in GPU
            and e.get("args", {}).get("correlation") in corr]
    a = analysis(name)
    assert a.timeline.busy_ns == union_length(acts)
    start = min(s for s, _ in acts)
    assert a.steps.gpu_window_start_ns <= start


def test_gloo_phase_is_a_union_not_a_sum():
    a = analysis("cpu_only_gloo.json.gz")
    spans = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in raw("cpu_only_gloo.json.gz")
             if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e.get("name") == "gloo:all_reduce"]
    (phase,) = [p for p in a.trace_phases.phases if p.name == "gloo:all_reduce"]
    assert phase.cpu_total_ns == union_length(spans)
    assert phase.cpu_sum_ns == sum(e - s for s, e in spans) > phase.cpu_total_ns
    assert 0 < phase.share_of_window <= 1
    # in the steps window, the part of the union inside the steps
    lo, hi = a.steps.start_ns, a.steps.end_ns
    clipped = [(max(s, lo), min(e, hi)) for s, e in spans if min(e, hi) > max(s, lo)]
    (in_steps,) = [p for p in a.phases.phases if p.name == "gloo:all_reduce"]
    assert in_steps.cpu_total_ns == union_length(clipped)
    assert in_steps.share_of_window == in_steps.cpu_total_ns / (hi - lo)


def test_ddp_forward_gpu_time_is_gpu_work_launched_inside_it():
    name = "a100_ddp_nccl_rank0.json.gz"
    events = raw(name)
    fwd = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
           and e.get("name") == "DistributedDataParallel.forward"]
    corr = launched_in(events, [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in fwd],
                       [(e["pid"], e["tid"]) for e in fwd])
    busy = union_length([(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
                         if e.get("ph") == "X" and e.get("cat") in GPU
                         and e.get("args", {}).get("correlation") in corr])
    a = analysis(name)
    (phase,) = [p for p in a.trace_phases.phases if p.name == "DistributedDataParallel.forward"]
    assert phase.gpu_total_ns == busy
    assert phase.gpu_total_ns <= a.trace_timeline.busy_ns
    assert phase.gpu_span_ns > phase.gpu_total_ns  # the GPU-side annotation's span is not work
