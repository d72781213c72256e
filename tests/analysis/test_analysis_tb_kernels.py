"""Kernel totals and tensor-core figures against the TensorBoard plugin's own parser."""

from __future__ import annotations

import pytest
from real_traces import DATA, analysis
from tb_reference import run_profile

TRACES = ["a100_ddp_nccl_rank0.json.gz", "a100_alexnet.json.gz",
          "h100_vit_image_classification.json.gz", "mi300_resnet_act_checkpoint.json.gz",
          "h200_concurrent_sequential.pt.trace.json.gz"]


@pytest.fixture(scope="module", params=TRACES)
def pair(request):
    return analysis(request.param), run_profile(DATA / request.param)


def test_kernel_table_equals_the_plugins(pair):
    ours, tb = pair
    stat = tb.kernel_stat
    kernels = {k.name: k for k in ours.kernels if k.category == "kernel"}
    assert set(kernels) == set(stat.index)
    for name, row in stat.iterrows():
        k = kernels[name]
        assert k.count == row["count"]
        assert k.total_ns == pytest.approx(row["sum"] * 1000, abs=1)
        assert k.min_ns == pytest.approx(row["min"] * 1000, abs=1)
        assert k.max_ns == pytest.approx(row["max"] * 1000, abs=1)


@pytest.mark.parametrize("name", ["a100_ddp_nccl_rank0.json.gz",
                                  "h100_vit_image_classification.json.gz"])
def test_tensor_core_eligible_time_within_the_plugins(name):
    """The plugin counts every kernel an eligible op (its allow-list: conv, mm, linear, ...)
    launches, bias adds, casts and layout changes included; profkit counts only the
    kernels that do the GEMM or convolution, so its share is at most the plugin's. (On
    the MI300 trace the plugin's list lacks ``aten::miopen_convolution`` and
    ``aten::convolution_backward`` and finds almost nothing: not compared.)"""
    ours = analysis(name)
    tb = run_profile(DATA / name)
    kernel_ns = sum(k.total_ns for k in ours.kernels if k.category == "kernel")
    share = ours.precision.eligible_ns / kernel_ns
    assert 0.75 * tb.tc_eligible_ops_kernel_ratio <= share <= tb.tc_eligible_ops_kernel_ratio
    # tensor-core use as the plugin reads it from kernel names, over all kernel time
    assert ours.precision.tensor_core_by_name_ns / kernel_ns >= tb.tc_used_ratio - 1e-9
