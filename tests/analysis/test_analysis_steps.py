"""Step times and their breakdown against the TensorBoard plugin's own parser, on real traces.

The plugin (``torch_tb_profiler``) reads each trace adapted as ``tb_reference`` says. Two
differences are on purpose and checked in their own form:

* communication kernels: profkit counts every NCCL/RCCL kernel as communication; the
  plugin only those it links to a ``nccl:*`` op by External id and counts the rest as
  kernel time. Since both take kernels, memcpy, memset and communication before
  runtime, data loader and CPU ops, their sum is the same in both;
* trailing steps: the plugin drops a last step that launched fewer GPU activities than
  the one before it; profkit reports every step.
"""

from __future__ import annotations

import pytest
from real_traces import DATA, analysis
from tb_reference import run_profile

STEP_TRACES = [
    "a100_ddp_nccl_rank0.json.gz",
    "mi300_resnet_act_checkpoint.json.gz",
    "h100_bert_small.json.gz",
    "h100_vit_image_classification.json.gz",
    "mi300_bert_small.json.gz",
    "mi250_minitoy_train.json.gz",
    "h200_concurrent_sequential.pt.trace.json.gz",
]
US = 1000
TOL = 100  # ns: the plugin sums float microseconds, profkit integer nanoseconds


@pytest.fixture(scope="module", params=STEP_TRACES)
def pair(request):
    return analysis(request.param), run_profile(DATA / request.param)


def test_device_side_step_times_equal_the_plugins(pair):
    ours, tb = pair
    from torch_tb_profiler.profiler.event_parser import ProfileRole

    assert ours.steps.headline == "device"
    theirs = [c.costs[ProfileRole.Total] for c in tb.steps_costs]
    assert 1 <= len(theirs) <= ours.steps.count
    for step, total_us in zip(ours.steps.steps, theirs, strict=False):
        assert step.device_dur_ns == pytest.approx(total_us * US, abs=1)


def test_step_breakdown_equals_the_plugins(pair):
    ours, tb = pair
    from torch_tb_profiler.profiler.event_parser import ProfileRole as R

    for step, costs in zip(ours.steps.steps, [c.costs for c in tb.steps_costs], strict=False):
        b = step.breakdown
        assert b is not None
        parts = [getattr(b, f) for f in b.__struct_fields__]
        assert sum(parts) == step.device_dur_ns  # the parts sum to the step
        gpu_side = b.kernel_ns + b.memcpy_ns + b.memset_ns + b.communication_ns
        tb_gpu_side = sum(costs[r] for r in (R.Kernel, R.Memcpy, R.Memset, R.Communication))
        assert gpu_side == pytest.approx(tb_gpu_side * US, abs=TOL)
        assert b.runtime_ns == pytest.approx(costs[R.Runtime] * US, abs=TOL)
        assert b.dataloader_ns == pytest.approx(costs[R.DataLoader] * US, abs=TOL)
        assert b.cpu_exec_ns + b.other_ns == pytest.approx(
            (costs[R.CpuOp] + costs[R.Other]) * US, abs=TOL)
        if not b.communication_ns:
            assert b.kernel_ns == pytest.approx(costs[R.Kernel] * US, abs=TOL)
            assert b.memcpy_ns == pytest.approx(costs[R.Memcpy] * US, abs=TOL)
            assert b.cpu_exec_ns == pytest.approx(costs[R.CpuOp] * US, abs=TOL)


def test_mi300_device_side_steps_outlast_the_cpu_side():
    """The GPU runs past the CPU-side steps: the device-side median is the one to read."""
    s = analysis("mi300_resnet_act_checkpoint.json.gz").steps
    assert s.median_ns == pytest.approx(15_951_000, abs=1_000)  # CPU side
    assert s.device is not None
    assert s.device.median_ns == pytest.approx(18_980_000, abs=10_000)
    assert s.headline_median_ns == s.device.median_ns


def test_cpu_only_and_stepless_traces_keep_cpu_side_figures():
    gloo = analysis("cpu_only_gloo.json.gz").steps
    assert gloo.headline == "cpu" and gloo.device is None
    alexnet = analysis("a100_alexnet.json.gz").steps
    assert alexnet.source == "window" and alexnet.count == 0
    assert alexnet.breakdown is not None
    parts = [getattr(alexnet.breakdown, f) for f in alexnet.breakdown.__struct_fields__]
    assert sum(parts) == alexnet.end_ns - alexnet.start_ns
