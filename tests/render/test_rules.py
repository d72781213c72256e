"""Every rule the analyses can fire has its title and advice, built from the figures the
rule gives: the codes, the branches (variants) and the figures' names are read from the
source with ``ast``, so a rule added without its words (or words left behind) fails here.
The words that depend on figures are checked word for word against the text the rules
wrote before they were codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rule_codes import rule_entries

from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.render.wording import rules

# the modules whose rules rules.WORDS words
SOURCES = sorted((Path(__file__).resolve().parents[2] / "profiler_kit" / "analysis"
                  / "advice").glob("*.py"))

# figures of each entry, as the rules give them
EXAMPLES: dict[str, dict[str, Any]] = {
    "low_gpu_utilization": {},
    "reduced_precision_unused": {"compiled": True},
    "host_bound": {},
    "launch_bound": {},
    "idle_after_synchronization": {},
    "idle_in_optimizer": {},
    "dataloader_share/gpu_idle": {},
    "dataloader_share/cpu_time": {},
    "memcpy_share": {},
    "exposed_communication": {"contexts": ("embedding", "optimizer")},
    "fp32_matmul_on_tensor_core_gpu": {},
    "memory_near_capacity": {},
    "conv_bias_before_batchnorm": {},
    "cpu_ops_waiting": {},
    "cpu_fp32_matmul_conv/bf16_units": {"bf16": "AMX"},
    "cpu_fp32_matmul_conv/cpu_unknown": {"bf16": "not shown in the trace"},
    "cpu_small_elementwise_ops": {},
    "small_kernels_underfill_gpu": {},
    "gemm_unaligned_dims": {},
    "small_gemms": {},
    "elementwise_chain_between_gemms": {},
    "conv_channels_last": {},
    **{f"waiting_for_late_rank/{v}": {"straggler": (1, 9, 10), "rank": 1,
                                      "range": "## backward ##", "gpu_share": 0.25}
       for v in ("no_lead_ins", "gpu_bound", "loading_data", "optimizer", "untraced",
                 "host_work")},
    "slow_transfer": {"kind": "allreduce", "link": "NVLink 3"},
    "exposed_transfer": {"contexts": ("ddp_gradient",)},
}


def test_every_rule_the_analyses_fire_has_its_words_and_no_other():
    made = rule_entries(SOURCES)
    assert set(made) == set(rules.WORDS) == set(EXAMPLES)
    for key, names in made.items():
        assert set(EXAMPLES[key]) == names, key


def _rec(key: str, measured: float = 0.42, **figures: Any) -> Recommendation:
    rule, _, variant = key.partition("/")
    return Recommendation(rule, "trace", measured, 0.1, "above", "fraction", (),
                          variant=variant, figures={**EXAMPLES[key], **figures})


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_each_entry_words_its_figures(key):
    r = _rec(key)
    assert rules.key(r) == key
    title, advice = rules.title(r), rules.advice(r)
    assert title and advice.endswith(".") and "{" not in title + advice
    assert title[0].isupper() or title.startswith("fp")
    for value in EXAMPLES[key].values():  # a name or number the words need shows
        if isinstance(value, str):
            assert value in title + advice or key.endswith("cpu_unknown") \
                or key.endswith(("no_lead_ins", "untraced")), (key, value)


def test_words_that_follow_the_figures():
    assert "they are 42% of the GPU time" in rules.advice(_rec("reduced_precision_unused"))
    assert "and compile it under autocast so" in rules.advice(
        _rec("reduced_precision_unused"))
    assert "GradScaler) so these ops" in rules.advice(
        _rec("reduced_precision_unused", compiled=False))
    assert rules.title(_rec("exposed_communication")) == (
        "Communication not hidden behind computation: embedding all-to-all (TorchRec), "
        "collectives in the optimizer step")
    # no context above the share: only the caveat, without a leading space
    assert rules.advice(_rec("exposed_communication", contexts=())).startswith(
        "From one rank's trace")
    assert rules.title(_rec("exposed_transfer")) == (
        "Transfers not hidden behind computation: DDP's gradient all-reduce")
    assert rules.title(_rec("slow_transfer", measured=0.07)) == (
        "Collectives transfer far below the link: allreduce at 7% of NVLink 3")
    wait = "waiting_for_late_rank/host_work"
    assert rules.title(_rec(wait)) == (
        "Ranks wait for rank 1 (last in 9 of 10 collectives where a rank waited)")
    assert rules.title(_rec(wait, straggler=None)) == (
        "Ranks wait for late ranks (no single straggler)")
    assert rules.advice(_rec(wait)).startswith(
        "Rank 1's CPU is still in ## backward ## (its GPU computing 25% of that time) when")
    assert rules.advice(_rec(wait, gpu_share=0.0)).startswith(
        "Rank 1's CPU is still in ## backward ## (its GPU idle) when")
    assert rules.advice(_rec(wait, gpu_share=None)).startswith(
        "Rank 1's CPU is still in ## backward ## when")
    assert "launched in Python or untraced code when" in rules.advice(
        _rec("waiting_for_late_rank/gpu_bound", range=None))
    assert rules.advice(_rec(wait)).endswith(
        "The others only wait: a faster interconnect or other collective settings do not "
        "help until the late rank arrives sooner.")
