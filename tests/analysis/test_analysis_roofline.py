"""Per-op rates on real traces with shapes, checked against the raw JSON by hand."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import msgspec
import pytest
from real_traces import analysis as analyzed

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.perf.roofline import analyze_roofline
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"


def raw(name: str) -> dict:
    with gzip.open(DATA / name) as fh:
        return json.load(fh)


def perf_of(table):
    tree = build_op_tree(table)
    return analyze_roofline(table, tree, attribute_gpu(table, tree))


@pytest.fixture(scope="module")
def bert():
    return perf_of(load(DATA / "h100_bert_small.json.gz"))


@pytest.mark.parametrize(("trace", "device"), [
    ("h100_bert_small.json.gz", "H100 SXM"), ("h100_vit_image_classification.json.gz",
                                              "H100 SXM"),
    ("mi300_bert_small.json.gz", "MI300X"), ("mi300_normalization_layers.json.gz", "MI300X"),
    ("mi300_resnet_act_checkpoint.json.gz", "MI300X"),
])
def test_the_device_comes_from_device_properties(trace: str, device: str) -> None:
    perf = perf_of(load(DATA / trace))
    assert perf.peak is not None and perf.peak.name == device
    assert perf.device == raw(trace)["deviceProperties"][0]["name"]
    assert perf.ops > 0 and perf.flops > 0 and perf.model_flops_utilization is not None or \
        trace.startswith("mi300_norm")  # norms only: no matrix work, so no MFU


def _kernels_under(doc: dict, op_filter) -> dict[tuple, list[int]]:
    """ns of GPU activity launched inside each matching cpu_op, found in the raw JSON:
    the runtime call with the kernel's correlation id lies inside the op on its thread."""
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    ops = [e for e in ev if e.get("cat") == "cpu_op" and op_filter(e)]
    runtime = {e["args"]["correlation"]: e for e in ev
               if e.get("cat") in ("cuda_runtime", "cuda_driver")
               and "correlation" in e.get("args", {})}
    out: dict[tuple, list[int]] = defaultdict(list)
    for k in ev:
        if k.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        r = runtime.get(k["args"].get("correlation"))
        if r is None:
            continue
        for o in ops:
            if o["tid"] == r["tid"] and o["ts"] <= r["ts"] < o["ts"] + o["dur"]:
                out[json.dumps(o["args"]["Input Dims"])].append(round(k["dur"] * 1000))
    return out


def test_gemm_flops_and_time_by_hand(bert) -> None:
    """Every aten::addmm of BERT: 2mnk from its recorded shapes, and the kernels it launched."""
    doc = raw("h100_bert_small.json.gz")
    addmms = [e for e in doc["traceEvents"] if e.get("name") == "aten::addmm"]
    kernels = _kernels_under(doc, lambda e: e["name"] == "aten::addmm")
    groups = {json.dumps(g.input_dims): g for g in bert.groups if g.op == "aten::addmm"}
    assert sum(g.count for g in groups.values()) == len(addmms) == 26
    for dims, g in groups.items():
        _bias, (m, k), (_k, n) = json.loads(dims)[:3]
        assert g.flops == 2 * m * n * k
        assert g.total_ns == sum(kernels[dims])
        assert g.flops_per_s == pytest.approx(g.flops * g.count / (g.total_ns * 1e-9))
        assert g.compute_peak_share == pytest.approx(g.flops_per_s / 989.5e12)
        assert g.memory_peak_share == pytest.approx(g.bytes * g.count / (g.total_ns * 1e-9)
                                                    / 3.35e12)
    vocab = groups[json.dumps([[30522], [141, 512], [512, 30522], [], []])]
    assert vocab.flops == 4_406_888_448  # the tied output projection, 2 * 141 * 30522 * 512


def test_linear_counts_once(bert) -> None:
    """aten::linear wraps aten::addmm: the FLOPs are counted once, at the addmm."""
    assert not any(g.op == "aten::linear" for g in bert.groups)
    gemm = next(f for f in bert.families if f.family == "gemm")
    doc = raw("h100_bert_small.json.gz")
    expected = 0
    for e in doc["traceEvents"]:
        if e.get("name") == "aten::addmm":
            _b, (m, k), (_k, n) = e["args"]["Input Dims"][:3]
            expected += 2 * m * n * k
    assert gemm.flops == expected


def test_attention_and_roofline_side(bert) -> None:
    """Flash attention [1, 141, 8, 64] (b, s, h, d): 4 * b*h * s^2 * d FLOPs; its intensity
    is below H100's ridge (989.5 TFLOP/s / 3.35 TB/s), so it is memory-bound."""
    g = next(g for g in bert.groups if g.op == "aten::_flash_attention_forward")
    assert g.flops == 4 * 8 * 141 * 141 * 64 and g.count == 4
    assert g.intensity_flops_per_byte < 989.5 / 3.35 and g.bound == "memory"


def test_flops_while_kernels_run_by_hand(bert) -> None:
    """All modelled FLOPs / the modelled ops' GPU time / the bf16 dense peak. In this trace
    every GPU activity belongs to a modelled op but one device-to-host copy (``.item()``'s
    ``_local_scalar_dense``), so their time is every kernel's and memset's."""
    doc = raw("h100_bert_small.json.gz")
    acts = [e for e in doc["traceEvents"]
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in acts)
    busy, end = 0.0, float("-inf")
    for s, e in spans:
        if e > end:
            busy += e - max(s, end)
            end = e
    assert bert.gpu_busy_ns == pytest.approx(busy * 1000, abs=len(spans))
    (copy,) = [e for e in acts if e["cat"] == "gpu_memcpy"]
    assert "DtoH" in copy["name"]
    modelled_us = sum(e["dur"] for e in acts if e is not copy)
    assert bert.time_ns == pytest.approx(modelled_us * 1000, abs=len(acts))
    assert bert.modelled_share == pytest.approx(
        modelled_us / sum(e["dur"] for e in acts), rel=1e-6)
    assert bert.mfu_dtype == "bf16" and not bert.mfu_partial
    assert bert.flops_per_s_peak_share == pytest.approx(
        bert.flops / (modelled_us * 1e-6) / 989.5e12, rel=1e-3)


def test_unknown_device_gets_rates_without_peak() -> None:
    table = load(DATA / "h100_bert_small.json.gz")
    table.meta = msgspec.structs.replace(table.meta, device_properties=[{"name": "Mystery GPU"}])
    perf = perf_of(table)
    assert perf.peak is None and perf.model_flops_utilization is None
    assert perf.flops_per_s_peak_share is None
    assert perf.flops > 0 and all(g.flops_per_s is not None for g in perf.groups)
    assert all(g.compute_peak_share is None and g.bound is None for g in perf.groups)
    assert note("device_not_in_peak_table", name="Mystery GPU", amd_matrix_kernels=False) \
        in perf.notes


def test_cpu_only_trace_gets_flops_and_gflops() -> None:
    """CPU trace: each op's time is its own duration, less the modelled ops inside it."""
    table = load(DATA / "cpu_torch_profiler.pt.trace.json.gz")
    perf = perf_of(table)
    assert perf.time_source == "host" and perf.peak is None and perf.gpu_busy_ns == 0
    g = next(g for g in perf.groups if g.op == "aten::addmm")
    assert g.flops == 2 * 4 * 1568 * 10
    doc = raw("cpu_torch_profiler.pt.trace.json.gz")
    addmm = [e for e in doc["traceEvents"] if e.get("name") == "aten::addmm"]
    assert g.count == len(addmm)
    # its time is its duration less the aten::copy_ inside it (the bias expanded into the
    # output), which is modelled and counted on its own
    copies = [e for e in doc["traceEvents"] if e.get("name") == "aten::copy_"
              and any(a["tid"] == e["tid"] and a["ts"] <= e["ts"] < a["ts"] + a["dur"]
                      for a in addmm)]
    assert len(copies) == len(addmm)
    assert g.total_ns == pytest.approx(sum(e["dur"] * 1000 for e in addmm)
                                       - sum(e["dur"] * 1000 for e in copies), abs=4)
    assert g.flops_per_s == pytest.approx(g.flops * g.count / (g.total_ns * 1e-9))


def test_trace_without_shapes_costs_nothing_and_says_so() -> None:
    table = load(DATA / "a100_alexnet.json.gz")
    perf = perf_of(table)
    assert not perf.shapes_recorded and perf.groups == () and perf.ops == 0
    assert perf.notes[0] == note("perf_no_input_shapes")


def test_norms_forward_and_backward() -> None:
    """mi300_normalization_layers: layer norm over [16, 32, 32] of [8, 16, 32, 32] fp32."""
    perf = perf_of(load(DATA / "mi300_normalization_layers.json.gz"))
    ops = {g.op for g in perf.groups}
    assert {"aten::native_layer_norm", "aten::native_layer_norm_backward",
            "aten::native_group_norm", "aten::native_group_norm_backward",
            "aten::_fused_rms_norm", "aten::_fused_rms_norm_backward",
            "aten::native_batch_norm", "aten::native_batch_norm_backward",
            "aten::miopen_batch_norm", "aten::miopen_batch_norm_backward"} <= ops
    n, row = 8 * 16 * 32 * 32, 16 * 32 * 32
    affine = next(g for g in perf.groups if g.op == "aten::native_layer_norm"
                  and g.input_dims[2] == [16, 32, 32])
    plain = next(g for g in perf.groups if g.op == "aten::native_layer_norm"
                 and g.input_dims[2] == [])
    # read x, write y (fp32); weight and bias read; mean and rstd (fp32) per row written
    assert affine.bytes == 2 * n * 4 + 2 * row * 4 + 2 * 8 * 4
    assert plain.bytes == 2 * n * 4 + 2 * 8 * 4
    # FLOPs as TraceLens: the affine folds into x * alpha + beta, so both count alike
    assert affine.flops == plain.flops == 5 * n + 6 * row
    assert affine.bound == plain.bound == "memory"
    bwd = [g for g in perf.groups if g.op.endswith("_backward")]
    assert bwd and all(g.backward for g in bwd)


def test_analysis_carries_the_perf_model() -> None:
    a = analyzed("h100_vit_image_classification.json.gz")
    assert a.perf.groups and a.perf.families
    conv = next(g for g in a.perf.groups if g.op == "aten::convolution")
    assert conv.flops == 2 * 4 * 768 * 3 * 16 * 16 * 14 * 14
    rules = {r.rule for r in a.recommendations}
    assert {"gemm_unaligned_dims", "conv_channels_last"} <= rules
    # the chains fire on their share but fusion prices them under 2 %: held back
    assert "elementwise_chain_between_gemms" in {r.rule for r in a.held_back}
