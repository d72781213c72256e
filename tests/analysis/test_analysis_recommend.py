"""Each recommendation rule fires on a table built to cross its threshold, and not below it."""

from __future__ import annotations

import math

import pytest
from analysis_tables import Alloc, kernel, launch, make_table, op

from profiler_kit.analysis.advice import recommend as rules
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.wording.notes import say
from profiler_kit.trace.table import Cat

A100 = [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 1000, "computeMajor": 8,
         "computeMinor": 0, "warpSize": 32}]


def fired(table) -> dict:
    """The rules that fire, none held back by its predicted gain (these tables are too
    small for a gain worth a recommendation: the rules are what they test)."""
    return {r.rule: r for r in analyze_table(table, min_gain_pct=-math.inf).recommendations}


def test_low_gpu_utilization_fires_below_threshold_only():
    idle = fired(make_table([kernel("k", 0, 10), kernel("k", 90, 10)]))
    busy = fired(make_table([kernel("k", 0, 60), kernel("k", 60, 40)]))
    r = idle["low_gpu_utilization"]
    assert r.measured == 0.2 and r.threshold == rules.LOW_UTILIZATION and r.fires_when == "below"
    assert {e.label: e.value for e in r.evidence}["GPU busy"] == 20
    assert "low_gpu_utilization" not in busy


def test_reduced_precision_unused_and_fp32_matmul_on_ampere():
    events = [op("aten::mm", 0, 100), launch(1, corr=1),
              kernel("ampere_sgemm_128x64_nn", 10, 80, corr=1)]
    got = fired(make_table(events, device_properties=A100))
    # all the GPU time is aten::mm, which autocast runs in 16 bits, still fp32
    assert got["reduced_precision_unused"].measured == 1.0
    tf32 = got["fp32_matmul_on_tensor_core_gpu"]
    assert tf32.measured == 1.0
    assert any(e.name == "ampere_sgemm_128x64_nn" for e in tf32.evidence)
    bf16 = [op("aten::mm", 0, 100), launch(1, corr=1),
            kernel("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nn", 10, 80, corr=1)]
    got = fired(make_table(bf16, device_properties=A100))
    assert "reduced_precision_unused" not in got
    assert "fp32_matmul_on_tensor_core_gpu" not in got


def test_fp32_matmul_rule_needs_tensor_core_gpu():
    events = [op("aten::mm", 0, 100), launch(1, corr=1), kernel("volta_sgemm", 10, 80, corr=1)]
    v100 = [{**A100[0], "computeMajor": 7}]
    assert "fp32_matmul_on_tensor_core_gpu" not in fired(make_table(events,
                                                                    device_properties=v100))


def test_host_bound_not_launch_bound_when_the_cpu_runs_code_before_each_launch():
    n = rules.LAUNCH_BOUND_MIN_LAUNCHES
    # each kernel (5 ns) starts 5 ns after its launch call (10 ns) ends; the next call
    # starts long after, inside aten::add: the GPU waits on model code, not on launches
    starved = [op("aten::add", 0, n * 1000)]
    for i in range(n):
        starved += [launch(i * 1000, corr=i + 1, dur=10), kernel("k", i * 1000 + 15, 5, corr=i + 1)]
    got = fired(make_table(starved))
    r = got["host_bound"]
    assert r.measured >= rules.HOST_BOUND_SHARE and r.scope == "gpu:0"
    ev = {(e.label, e.name): e.value for e in r.evidence}
    # each gap (995) is 980 before the next launch call starts and 15 after it
    assert ev[("GPU idle while the CPU ran model code (ops, ranges, Python)", "")] == \
        (n - 1) * 980
    assert ev[("idle while the CPU ran ops", "aten::add")] == (n - 1) * 980
    assert ev[("GPU idle inside the launch calls themselves", "")] == (n - 1) * 10
    assert "launch_bound" not in got
    # the same launches, queued ahead of long kernels: no host wait, no rule
    fed = [op("aten::add", 0, n * 20)]
    for i in range(n):
        fed += [launch(i * 20, corr=i + 1, dur=10),
                kernel("k", 100_000 + i * 20_000, 20_000, corr=i + 1)]
    assert not {"host_bound", "launch_bound"} & set(fired(make_table(fed)))


def test_launch_bound_when_the_launch_calls_themselves_are_the_wait():
    n = rules.LAUNCH_BOUND_MIN_LAUNCHES
    # each launch call starts as the previous kernel ends and takes 985 ns; its 10 ns
    # kernel starts 5 ns after it returns: the GPU idles inside the launch calls
    events = [op("aten::add", 0, n * 1000)]
    for i in range(n):
        events += [launch(i * 1000, corr=i + 1, dur=985),
                   kernel("k", i * 1000 + 990, 10, corr=i + 1)]
    got = fired(make_table(events))
    r = got["launch_bound"]
    ev = {e.label: e.value for e in r.evidence}
    assert ev["GPU idle inside the launch calls"] == (n - 1) * 985
    assert ev["median launch call (CPU)"] == 985 and ev["median kernel"] == 10
    assert r.measured >= rules.LAUNCH_CALL_SHARE
    assert "host_bound" not in got


def test_launch_bound_is_quiet_on_a_busy_gpu():
    """MI300 ResNet: the GPU is hardly idle; the rule must not fire."""
    from pathlib import Path

    from profiler_kit.trace.loader import load

    data = Path(__file__).parents[1] / "data"
    a = analyze_table(load(data / "mi300_resnet_act_checkpoint.json.gz"))
    assert "launch_bound" not in {r.rule for r in a.recommendations}


def test_memcpy_share():
    got = fired(make_table([kernel("k", 0, 80), kernel("Memcpy HtoD", 80, 20, cat=Cat.MEMCPY)]))
    assert got["memcpy_share"].measured == 0.2


def test_exposed_communication():
    events = [kernel("ncclKernel_AllReduce", 0, 50, stream=40), kernel("gemm_k", 40, 60)]
    r = fired(make_table(events))["exposed_communication"]
    assert r.measured == 40 / 100 and r.scope == "gpu:0"


def test_dataloader_share_within_steps():
    events = [
        op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
        op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 300),
        op("aten::mm", 400, 100),
    ]
    r = fired(make_table(events))["dataloader_share"]
    assert r.measured == 0.3 and r.threshold == rules.DATALOADER_SHARE


def test_memory_near_capacity_from_device_properties():
    allocs = [Alloc(ts=10, nbytes=950, total_allocated=950, total_reserved=960),
              Alloc(ts=20, nbytes=-950, total_allocated=0, total_reserved=960)]
    got = fired(make_table([kernel("k", 0, 100)], allocs, device_properties=A100))
    r = got["memory_near_capacity"]
    assert r.measured == 0.96 and r.scope == "cuda:0"
    low = [Alloc(ts=10, nbytes=100, total_allocated=100, total_reserved=200)]
    assert "memory_near_capacity" not in fired(make_table([kernel("k", 0, 100)], low,
                                                          device_properties=A100))


def test_conv_bias_followed_by_batchnorm_from_the_bias_add():
    events = [
        op("aten::conv2d", 0, 100), op("aten::convolution", 5, 90),
        op("aten::_convolution", 10, 80), op("aten::cudnn_convolution", 15, 40),
        op("aten::add_", 60, 20),  # cuDNN adds the bias after the convolution
        op("aten::batch_norm", 120, 50),
    ]
    r = fired(make_table(events))["conv_bias_before_batchnorm"]
    assert r.measured == 1
    no_bias = [e for e in events if e.name != "aten::add_"]
    assert "conv_bias_before_batchnorm" not in fired(make_table(no_bias))
    relu_between = events[:-1] + [op("aten::relu", 120, 10), op("aten::batch_norm", 140, 50)]
    assert "conv_bias_before_batchnorm" not in fired(make_table(relu_between))


def test_conv_bias_followed_by_batchnorm_from_input_dims():
    with_bias = [[4, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []]
    no_bias = [[4, 3, 16, 16], [8, 3, 3, 3], [], [], [], [], []]
    for dims, fires in ((with_bias, True), (no_bias, False)):
        events = [
            op("aten::conv2d", 0, 100, dims=dims),
            op("aten::convolution", 5, 90), op("aten::mkldnn_convolution", 10, 80),
            op("aten::batch_norm", 120, 50),
            op("aten::conv2d", 200, 100, dims=dims), op("aten::relu", 320, 10),
        ]
        got = fired(make_table(events))
        assert ("conv_bias_before_batchnorm" in got) == fires
        if fires:
            ev = {e.label: e.value for e in got["conv_bias_before_batchnorm"].evidence}
            assert ev["conv ops followed by batch norm"] == 1
            assert ev["example"] == "aten::conv2d -> aten::batch_norm"


def test_cpu_only_table_skips_gpu_rules_with_a_note():
    a = analyze_table(make_table([op("aten::mm", 0, 10)]))
    assert a.recommendations == ()
    assert {"cpu_only_trace", "no_step_spans"} <= {n.code for n in a.notes}


def test_odd_but_valid_tables_do_not_crash():
    for events in ([], [kernel("k", 5, 0)], [op("x", 0, 0)], [launch(0, corr=3)],
                   [kernel("k", 0, 10, corr=99)]):
        a = analyze_table(make_table(events))
        assert a.events == len(events)


def test_memory_without_totals_uses_the_running_sum_and_attributes_to_ops():
    allocs = [Alloc(ts=15, nbytes=100, device_type=0, device_id=-1),
              Alloc(ts=25, nbytes=50, device_type=0, device_id=-1),
              Alloc(ts=35, nbytes=-100, device_type=0, device_id=-1),
              Alloc(ts=45, nbytes=30, device_type=0, device_id=-1)]
    a = analyze_table(make_table([op("aten::empty", 10, 10), op("aten::mm", 20, 30)], allocs))
    (dev,) = a.memory.devices
    assert (dev.device, dev.peak_allocated_bytes, dev.peak_reserved_bytes) == ("cpu", 150, None)
    assert [(o.name, o.allocations, o.allocated_bytes) for o in a.memory.top_ops] == [
        ("aten::empty", 1, 100), ("aten::mm", 2, 80)]


def test_missing_memory_says_why_it_may_be_missing():
    """No [memory] events: profile_memory was off, or every thread was followed
    (profile_all_threads, as profkit's threads strategy is profiled), which records none."""
    a = analyze_table(make_table([op("aten::mm", 0, 10)]))
    (note,) = [say(n) for n in a.notes if n.code == "memory_rule_no_memory_events"]
    assert "profile_memory was off" in note and "profile_all_threads" in note


def _step_of(events: list, end: int) -> list:
    return [op("ProfilerStep#1", 0, end, cat=Cat.USER_ANNOTATION), *events]


def test_dataloader_rule_measures_the_gpu_idle_it_causes():
    """With a GPU, the DataLoader rule measures the GPU idle while the launching thread was
    in the DataLoader: 300 of a 1000 ns step. The same 300 ns of loading while a long
    kernel runs costs nothing: no rule."""
    loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    idle = _step_of([op(loader, 0, 300), op("aten::mm", 300, 20), launch(305, corr=1),
                     kernel("k", 320, 680, corr=1)], 1000)
    r = fired(make_table(idle))["dataloader_share"]
    assert r.measured == pytest.approx(0.3) and r.scope == "gpu:0"  # of the 1000 ns step
    ev = {e.label: e.value for e in r.evidence}
    assert ev["GPU idle while the CPU was in the DataLoader"] == 300
    hidden = _step_of([op("aten::mm", 0, 20), launch(5, corr=1), kernel("k", 20, 980, corr=1),
                       op(loader, 30, 300), op("aten::add", 900, 20), launch(905, corr=2),
                       kernel("k2", 1000, 10, corr=2)], 1010)
    assert "dataloader_share" not in fired(make_table(hidden))


def test_synchronization_and_optimizer_rules():
    """The GPU drains while the thread waits in aten::item, then idles while it runs
    Python; then it idles while the optimizer launches its work."""
    events = _step_of([
        op("aten::mm", 0, 10), launch(2, corr=1), kernel("k1", 10, 100, corr=1),
        op("aten::item", 20, 95), launch(25, corr=9, name="cudaStreamSynchronize", dur=88),
        op("Optimizer.step#SGD.step", 400, 400), launch(790, corr=2),
        kernel("k2", 800, 200, corr=2),
    ], 1000)
    got = fired(make_table(events))
    sync = got["idle_after_synchronization"]
    assert sync.measured == pytest.approx(690 / 1000)  # the gap 110..800 began in item
    opt = got["idle_in_optimizer"]
    assert opt.measured == pytest.approx(390 / 1000)  # 400..790, before the launch
    names = [r.rule for r in
             analyze_table(make_table(events), min_gain_pct=-math.inf).recommendations]
    assert names.index("idle_after_synchronization") < names.index("idle_in_optimizer")
