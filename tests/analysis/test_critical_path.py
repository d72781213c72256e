"""Critical path against Holistic Trace Analysis on a real trace, event by event."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from analysis_tables import kernel, launch, make_table, op

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.core.steps import analyze_steps
from profiler_kit.analysis.time.critical_path import SYNC, build_path, critical_path, summarize
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import Cat

DATA = Path(__file__).parents[1] / "data"
TRACE = DATA / "a100_simple_add.json.gz"
# HTA 0.5.0's critical path of TRACE (benchmarks/hta_critical_path.py made it)
HTA_050 = DATA / "hta" / "a100_simple_add_critical_path.json"
# the reference HTA keeps in its own tests, made by an earlier HTA
HTA_REFERENCE = DATA / "a100_simple_add_critical_path_expected.json.gz"


@pytest.fixture(scope="module")
def simple_add():
    table = load(TRACE)
    gpu = attribute_gpu(table, build_op_tree(table))
    return table, gpu, build_path(table, gpu)


def _ours(table, graph) -> set[tuple[str, int, int]]:
    return {(table.name_of(r), int(table.ts_ns[r]), int(table.dur_ns[r])) for r in graph.rows}


def _reference(path: Path) -> set[tuple[str, int, int]]:
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    return {(e["name"], e["ts"] * 1000, e["dur"] * 1000) for e in doc["traceEvents"]
            if e.get("ph") == "X" and e.get("args", {}).get("critical") == 1}


def test_equals_hta_critical_path_event_by_event(simple_add):
    table, gpu, graph = simple_add
    hta = json.loads(HTA_050.read_text())
    theirs = {(name, ts * 1000, dur * 1000) for name, _cat, ts, dur in hta["events"]}
    assert len(theirs) == 600
    assert _ours(table, graph) == theirs
    # the same length, split the same way (HTA's bound_by, in µs)
    s = summarize(table, gpu, graph, "trace", None, 0, 0)
    by = hta["bound_by_us"]
    assert s.length_ns == hta["length_us"] * 1000
    assert s.cpu_ns == by["cpu_bound"] * 1000
    assert s.gpu_compute_ns == by["gpu_compute_bound"] * 1000
    assert s.kernel_gap_ns == by["gpu_kernel_kernel_overhead"] * 1000
    assert s.launch_ns == by["gpu_kernel_launch_overhead"] * 1000
    assert s.communication_ns == 0
    assert s.length_ns == (s.cpu_ns + s.gpu_compute_ns + s.communication_ns + s.launch_ns
                           + s.kernel_gap_ns)
    assert sum(e.ns for e in s.entries) <= s.cpu_ns + s.gpu_compute_ns
    assert s.events == 600


def test_differences_from_the_reference_kept_in_hta_tests(simple_add):
    """HTA's own test data holds an overlaid trace made by an earlier HTA; HTA checks it
    only to within 1 % of the number of critical events. It and profkit (like HTA 0.5.0)
    agree on 590 events and differ in one forward pass only: there the reference stays on
    the CPU through a 12 ms ``cudaMalloc``, while profkit takes the GPU kernels (an 868 µs
    sgemm, then the stream's gap up to the next memset) into the ``cudaDeviceSynchronize``
    that ends the pass. That GPU branch is longer, so under the model's own rules the
    reference's path there is not the longest one."""
    table, gpu, graph = simple_add
    ours, reference = _ours(table, graph), _reference(HTA_REFERENCE)
    assert len(reference) == 624 and len(ours & reference) == 590
    only_ref, only_ours = reference - ours, ours - reference
    lo, hi = 1694040009786_600_000, 1694040009800_100_000  # that forward pass
    assert all(lo <= ts <= hi for _, ts, _ in only_ref | only_ours)
    assert len(only_ref) == 34 and len(only_ours) == 10
    gpu_cats = (Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET)
    assert all(table.cat[r] in gpu_cats for r in graph.rows
               if (table.name_of(r), int(table.ts_ns[r]), int(table.dur_ns[r])) in only_ours)
    assert any(name == "cudaMalloc" and dur == 11_986_000 for name, _, dur in only_ref)
    # at the end of the synchronize both branches meet: the GPU one is 222 µs longer
    sync = next(r for r in range(len(table)) if table.name_of(r) == "cudaDeviceSynchronize"
                and lo <= table.ts_ns[r] <= hi)
    end_node = 2 * int(np.flatnonzero(np.isin(graph.node_row[0::2], [sync]))[0]) + 1
    into = np.flatnonzero(graph.edge_dst == end_node)
    def branch(kind: int) -> int:  # 0: operator (the CPU), 4: sync (from each GPU stream)
        return max(int(graph.node_dist[graph.edge_src[e]]) for e in into
                   if graph.edge_kind[e] == kind)

    cpu_branch, gpu_branch = branch(0), branch(4)
    assert gpu_branch - cpu_branch == 222_000


def test_a_gpu_bound_step_runs_through_its_kernels():
    """CPU: launch, launch, synchronize; the GPU: two kernels back to back, 1 ms each."""
    t = make_table([
        op("ProfilerStep#1", 0, 3_000_000, cat=Cat.USER_ANNOTATION),
        op("aten::mm", 1000, 20_000), launch(2000, 1, dur=5000),
        op("aten::mm", 30_000, 20_000), launch(31_000, 2, dur=5000),
        launch(60_000, 3, dur=2_100_000, name="cudaDeviceSynchronize"),
        kernel("gemm_a", 10_000, 1_000_000, corr=1), kernel("gemm_b", 1_010_000, 1_000_000, corr=2),
    ])
    a = analyze_table(t)
    c = a.critical_path
    assert (c.window, c.step) == ("step", 1)
    # launch at 2 µs, kernel from 10 µs: 8 µs of launch delay, then the two kernels
    assert c.launch_ns == 8000 and c.gpu_compute_ns == 2_000_000 and c.kernel_gap_ns == 0
    assert c.length_ns == 1000 + 8000 + 2_000_000  # aten::mm up to the launch first
    assert c.cpu_ns == 1000
    assert [e.name for e in c.entries[:2]] == ["gemm_a", "gemm_b"]


def test_cpu_only_trace_path_is_the_busiest_thread():
    """Thread 2 works 600 ns (conv2d, then relu after a 90 ns gap), thread 3 300 ns. Top-level
    ops are joined with no weight, as in HTA: the gap between them is not on the path."""
    ops = [op("aten::conv2d", 10, 500, tid=2), op("aten::relu", 600, 100, tid=2),
           op("aten::mm", 10, 300, tid=3)]
    for events, window in ((ops, "trace"),
                           ([op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION)] + ops,
                            "step")):
        t = make_table(events)
        c = critical_path(t, attribute_gpu(t, build_op_tree(t)), analyze_steps(t))
        assert c.window == window
        assert c.length_ns == c.cpu_ns == 600
        assert [(e.name, e.ns) for e in c.entries] == [("aten::conv2d", 500), ("aten::relu", 100)]


def test_alexnet_forward_equals_hta_across_streams():
    """HTA's own critical-path test window: the second ``measure|forward`` of AlexNet,
    where one stream waits on another (``cudaEventRecord`` + ``cudaStreamWaitEvent``).

    The path is HTA's event by event: the kernel launched after the wait follows the one
    recorded before it on the other stream, from the ``Stream Wait Event`` args
    (``wait_on_stream``, ``wait_on_cuda_event_record_corr_id``)."""
    table = load(DATA / "a100_alexnet.json.gz")
    assert len(table.event_waits) == 20  # every Stream Wait Event of the trace
    gpu = attribute_gpu(table, build_op_tree(table))
    name = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
    second = [r for r in range(len(table)) if table.name_of(r) == name][1]
    lo = int(table.ts_ns[second])
    graph = build_path(table, gpu, lo, lo + int(table.dur_ns[second]))
    hta = json.loads((DATA / "hta" / "a100_alexnet_critical_path.json").read_text())
    assert hta["annotation"] == name and hta["instance_id"] == 1
    theirs = {(n, ts * 1000, dur * 1000) for n, _cat, ts, dur in hta["events"]}
    assert len(theirs) == 77 and _ours(table, graph) == theirs
    # the path crosses streams through a wait
    kinds = graph.edge_kind[graph.path_edges]
    streams = {int(table.stream[r]) for r in graph.rows if table.stream[r] >= 0}
    assert SYNC in kinds.tolist() and len(streams) > 1
    assert abs(int(graph.edge_weight[graph.path_edges].sum()) - hta["length_us"] * 1000) <= 1000


@pytest.mark.parametrize("trace", ["a100_event_sync", "a100_event_sync_multi_stream"])
def test_event_and_stream_synchronize_equal_hta(trace):
    """HTA's own event-sync programs: ``cudaEventSynchronize`` (an ``Event Sync`` naming
    the stream and the ``cudaEventRecord`` it waits on) and ``cudaStreamSynchronize``
    (``Stream Sync``) join the GPU work waited for to the end of the call that waited.
    The path is HTA 0.5.0's event by event, with the same length and split."""
    table = load(DATA / f"{trace}.json.gz")
    gpu = attribute_gpu(table, build_op_tree(table))
    graph = build_path(table, gpu)
    hta = json.loads((DATA / "hta" / f"{trace}_critical_path.json").read_text())
    assert hta["hta_version"] == "0.5.0" and hta["annotation"] == ""
    theirs = {(n, ts * 1000, dur * 1000) for n, _cat, ts, dur in hta["events"]}
    assert _ours(table, graph) == theirs
    s = summarize(table, gpu, graph, "trace", None, 0, 0)
    by = hta["bound_by_us"]
    assert s.length_ns == hta["length_us"] * 1000
    assert s.cpu_ns == by["cpu_bound"] * 1000
    assert s.gpu_compute_ns == by["gpu_compute_bound"] * 1000
    assert s.launch_ns == by["gpu_kernel_launch_overhead"] * 1000
    assert s.kernel_gap_ns == by.get("gpu_kernel_kernel_overhead", 0) * 1000


def test_event_synchronize_waits_for_the_kernel_recorded_before_it():
    """In the one-stream program the CPU waits in ``cudaEventSynchronize`` for the spin
    kernel recorded before the event: the path runs through that kernel, then the sync
    edge, then the calls after the wait (``cudaEventQuery``, ``cudaEventElapsedTime``);
    without the edge it ended at the ``cudaStreamSynchronize`` before."""
    table = load(DATA / "a100_event_sync.json.gz")
    gpu = attribute_gpu(table, build_op_tree(table))
    graph = build_path(table, gpu)
    on_path = [table.name_of(int(r)) for r in graph.node_row[graph.path]]
    spin = next(i for i, n in enumerate(on_path) if "spin_kernel" in n)
    assert "cudaEventSynchronize" in on_path[spin:]
    assert on_path[-1] == "cudaEventElapsedTime"
    kinds = graph.edge_kind[graph.path_edges].tolist()
    assert kinds.count(SYNC) == 2  # the stream sync after the copy, the event sync
