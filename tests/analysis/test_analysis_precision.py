"""Precision of GEMM and convolution time on real traces, against the raw traces read here
and the TensorBoard plugin's tensor-core kernel list."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from real_traces import analysis as analyzed

from profiler_kit.analysis.core.classify import CLASS_INDEX
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.perf.precision import eligible_mask, input_dtype_is_low
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"


def raw_kernel_ns(name: str, match) -> int:
    """Total duration (ns) of the kernels whose name passes ``match``, read from the file."""
    doc = json.loads(gzip.decompress((DATA / name).read_bytes()))
    total = Decimal(0)
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and match(e["name"]):
            total += Decimal(str(e["dur"])) * 1000
    return int(total)


def test_transposes_and_helpers_are_not_eligible_on_mi300():
    a = analyzed("mi300_resnet_act_checkpoint.json.gz")
    p = a.precision
    # what a convolution launches besides the convolution: MIOpen's SubTensorOp helpers
    # (bias and casts); the layout transposes are class copy and never GEMM/convolution
    helpers = raw_kernel_ns("mi300_resnet_act_checkpoint.json.gz",
                            lambda n: n.startswith("SubTensorOp"))
    assert 0 < p.excluded_ns <= helpers  # those launched by convolutions and GEMMs
    table = load(DATA / "mi300_resnet_act_checkpoint.json.gz")
    gpu = attribute_gpu(table, build_op_tree(table))
    eligible = eligible_mask(table, gpu)
    classed = np.isin(gpu.klass, [CLASS_INDEX["gemm"], CLASS_INDEX["convolution"]])
    left_out = {table.names[int(table.name[r])] for r in gpu.row[classed & ~eligible]}
    assert left_out and all(n.startswith("SubTensorOp") for n in left_out)
    assert sum(int(table.dur_ns[r]) for r in gpu.row[classed & ~eligible]) == p.excluded_ns
    assert all("transpose" not in n and "SubTensorOp" not in n for n, _ in p.fp32_simt_top)
    assert a.trace_gpu.ns("copy") >= raw_kernel_ns("mi300_resnet_act_checkpoint.json.gz",
                                             lambda n: "transpose" in n)
    assert p.source == "mixed"  # ops with Input type, and kernels no op is linked to
    assert 0 < p.low_precision_share <= 1 and 0 < p.tensor_core_share <= 1


def test_alexnet_top_fp32_convolution_is_a_convolution():
    p = analyzed("a100_alexnet.json.gz").precision
    assert p.source == "kernel_name"  # recorded without shapes
    assert p.fp32_simt_top
    for name, _ in p.fp32_simt_top:
        assert "nchwToNhwc" not in name and "nhwcToNchw" not in name


@pytest.mark.parametrize("name", ["h100_bert_small.json.gz", "mi300_bert_small.json.gz",
                                  "h100_vit_image_classification.json.gz"])
def test_precision_from_input_types(name):
    """Every GEMM/convolution here runs on bf16 inputs, which the ops' Input type says."""
    p = analyzed(name).precision
    assert p.source == "input_type"
    assert p.from_input_type_ns == p.eligible_ns > 0
    assert p.low_precision_ns == p.eligible_ns


def test_input_dtype_rules():
    assert input_dtype_is_low("c10::BFloat16, c10::BFloat16, , Scalar") is True
    assert input_dtype_is_low("float, float, float") is False
    assert input_dtype_is_low("c10::Half, float") is True
    assert input_dtype_is_low("long int, Scalar") is None
    assert input_dtype_is_low("") is None


@pytest.mark.parametrize("name", ["a100_ddp_nccl_rank0.json.gz", "a100_alexnet.json.gz",
                                  "h100_vit_image_classification.json.gz"])
def test_tensor_core_kernels_of_the_plugin_are_ours(name):
    """Every eligible kernel the TensorBoard plugin's list calls tensor-core is counted
    in ``tensor_core_by_name_ns`` (profkit's list is longer: TF32, nvjet, sm90, MFMA...)."""
    tc = pytest.importorskip("torch_tb_profiler.profiler.tensor_core")
    table = load(DATA / name)
    gpu = attribute_gpu(table, build_op_tree(table))
    sel = eligible_mask(table, gpu)
    theirs: dict[str, int] = defaultdict(int)
    for r in gpu.row[sel].tolist():
        n = table.names[int(table.name[r])]
        if n in tc.TC_Allowlist:
            theirs[n] += int(table.dur_ns[r])
    p = analyze_table(table).precision
    assert p.tensor_core_by_name_ns >= sum(theirs.values())
    assert p.tensor_core_ns >= p.tensor_core_by_name_ns or p.source != "kernel_name"
