"""Host-bound against launch-bound, and what autocast can reach, on real traces."""

from __future__ import annotations

from pathlib import Path

import pytest
from real_traces import analysis

from profiler_kit.analysis.advice import recommend as rules
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.perf.autocast_scope import autocast_scope
from profiler_kit.render.wording.rules import advice
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"


def _fired(name: str) -> dict:
    return {r.rule: r for r in analysis(name).recommendations}


def _ev(r) -> dict:
    return {(e.label, e.name): e.value for e in r.evidence}


# -- 3. host-bound names the regions and ops; launch-bound needs the launch calls ------

@pytest.mark.parametrize("name, region, op", [
    ("a100_ddp_nccl_rank0.json.gz", "## forward ##", "aten::batch_norm"),
    ("b200_vllm_eager.json.gz", "execute_context_1(888_788544)_generation_0(0)",
     "vllm::moe_forward"),
    ("h100_bert_small.json.gz", "(no record_function range)", "aten::linear"),
    ("a100_alexnet.json.gz", "[param|cuda]", "aten::conv2d"),
])
def test_host_bound_names_the_regions_and_ops(name, region, op):
    got = _fired(name)
    r = got["host_bound"]
    ev = _ev(r)
    assert r.measured >= rules.HOST_BOUND_SHARE
    assert ("idle while in the region", region) in ev
    assert ("idle while the CPU ran ops", op) in ev
    # the launch calls themselves are a small part: not launch-bound
    in_calls = ev[("GPU idle inside the launch calls themselves", "")]
    window = next(v for (label, _), v in ev.items() if label in ("device-side step time",
                                                                  "GPU window"))
    assert in_calls / window < rules.LAUNCH_CALL_SHARE
    assert "launch_bound" not in got
    assert "CUDA graphs" in advice(r) and "torch.compile" in advice(r)


def test_launch_bound_measures_the_launch_calls_not_the_code_before_them():
    """Eager BERT on an H100: the GPU idles 82 % of the step, but the launch calls that
    end its gaps take 7.5 % of it; the rest is Python and aten ops before them."""
    a = analysis("h100_bert_small.json.gz")
    (d,) = a.idle.devices
    host = sum(d.kind_ns(k) for k in ("cpu_op", "phase", "python"))
    assert host / a.step_device_ns > 0.8
    assert 0.05 < d.in_launch_call_ns / a.step_device_ns < 0.1
    # the launch calls sit in the queued part of the gaps, never in the host part
    assert d.in_launch_call_ns <= d.kind_ns("queued")


# -- 4. autocast's reach: the ops it changes, never custom or Triton kernels -----------

def _scope(name: str):
    table = load(DATA / name)
    tree = build_op_tree(table)
    return autocast_scope(table, tree, attribute_gpu(table, tree))


def test_custom_and_triton_kernels_are_out_of_autocasts_reach():
    """vLLM on a B200: half the GPU time is its own fp8/fp4 GEMMs (custom ops), out of
    autocast's reach; the aten::linear it could touch is 7 % and bf16 already."""
    s = _scope("b200_vllm_eager.json.gz")
    assert s.out_of_reach_ns / s.gpu_ns > 0.4 and s.share < 0.1
    assert s.low_precision_share == 1.0
    assert "reduced_precision_unused" not in _fired("b200_vllm_eager.json.gz")
    triton = _scope("a100_triton_kernel.json.gz")
    assert triton.scope_ns == 0
    assert "reduced_precision_unused" not in _fired("a100_triton_kernel.json.gz")


def test_precision_advice_says_what_share_it_could_touch():
    r = _fired("v100_resnet50_train.json.gz")["reduced_precision_unused"]
    ev = {e.label: e.value for e in r.evidence}
    share = ev["GPU time in ops autocast changes, still 32-bit"] / ev["GPU time"]
    assert r.measured == pytest.approx(share) and 0.6 < share < 0.7
    assert f"{share:.0%} of the GPU time" in advice(r)
    assert {e.name for e in r.evidence if e.label == "op"} >= {"aten::convolution_backward",
                                                               "aten::conv2d"}


def test_precision_stays_silent_where_autocast_reaches_little():
    """The 8-rank DLRM rank: fp32 GEMMs, but NCCL, fbgemm's embedding kernels and copies
    hold 83 % of the GPU time; AlexNet's first passes: copies are 84 %."""
    for name, most in (("a100_recsys_8gpu_rank3.json.gz", 0.17),
                       ("a100_alexnet.json.gz", 0.14)):
        s = _scope(name)
        assert s.share < rules.AUTOCAST_MIN_SHARE and s.share == pytest.approx(most, abs=0.01)
        assert s.low_precision_ns == 0
        assert "reduced_precision_unused" not in _fired(name)


def test_compiled_graphs_gemms_are_in_reach():
    """The 16-GPU rank's fp32 GEMMs run inside torch.compile graphs (CompiledFunction):
    library GEMM kernels autocast would change when compiled under it."""
    r = _fired("a100_recsys_16gpu_rank0.json.gz")["reduced_precision_unused"]
    ev = {e.label: e.value for e in r.evidence}
    assert ev["of it library GEMM/conv/attention kernels in torch.compile graphs"] > \
        0.9 * ev["GPU time in ops autocast changes"]
    assert r.figures["compiled"] and "compile it under autocast" in advice(r)
