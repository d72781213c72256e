"""Every recommendation rule over every real trace in tests/data, against a list written by
reading each trace: the rules that must fire, each with the reason it is the true cause,
and the rules that must lead. A rule that fires elsewhere, or stays silent here, fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from real_traces import analysis

DATA = Path(__file__).parent / "data"

# trace -> {rule: why it holds for this trace}; every other rule must stay silent
EXPECTED: dict[str, dict[str, str]] = {
    "a100_alexnet.json.gz": {
        "low_gpu_utilization": "a benchmark's first passes: 12.9 s of trace, 66 ms of GPU "
                               "work; the host spends seconds inside aten::conv2d",
        "reduced_precision_unused": "fp32 convolutions and GEMMs, no autocast",
        "memcpy_share": "host-to-device copies of the inputs are 84 % of its GPU time",
        "fp32_matmul_on_tensor_core_gpu": "ampere_sgemm (FP32 SIMT) kernels on an A100",
    },
    "a100_ddp_nccl_rank0.json.gz": {
        "launch_bound": "48 % of the step idle in short gaps while the CPU ran batch_norm, "
                        "DDP bucket copies and autograd, median launch delay 2 µs: kernels "
                        "find the queue empty",
        "low_gpu_utilization": "the GPU is busy 24 % of the device-side step",
        "reduced_precision_unused": "fp32 convolutions, no autocast",
    },
    "a100_event_sync.json.gz": {
        "low_gpu_utilization": "a few tiny kernels separated by syncs and Python",
    },
    "a100_event_sync_multi_stream.json.gz": {
        "low_gpu_utilization": "19 ms of Python between a few kernels",
        "reduced_precision_unused": "one fp32 matmul is all its GEMM time",
        "fp32_matmul_on_tensor_core_gpu": "that matmul runs on an FP32 SIMT kernel on an A100",
    },
    "a100_recsys_16gpu_rank0.json.gz": {
        "low_gpu_utilization": "the GPU is busy 31 % of the step; most idle has work "
                               "already queued (CUDA graph launches and cross-rank waits)",
        "reduced_precision_unused": "fp32 GEMMs, no autocast",
        "memcpy_share": "batch and embedding copies are 12 % of GPU time",
        "exposed_communication": "all-to-all for the sparse features with nothing beside it",
    },
    "a100_recsys_8gpu_rank3.json.gz": {
        "reduced_precision_unused": "GEMMs in TF32 at best, no fp16/bf16",
        "memcpy_share": "input batch copies are 11 % of GPU time",
        "exposed_communication": "all-to-all and all-reduce not hidden behind compute: 19 %",
        "elementwise_chain_between_gemms": "chains of elementwise kernels between the "
                                           "interaction GEMMs",
    },
    "a100_simple_add.json.gz": {
        "low_gpu_utilization": "a benchmark loop whose GPU work is tiny against its host time",
        "reduced_precision_unused": "fp32 GEMMs",
        "memcpy_share": "copies of the operands dominate the GPU time",
        "fp32_matmul_on_tensor_core_gpu": "ampere_sgemm kernels on an A100",
    },
    "a100_triton_kernel.json.gz": {
        "low_gpu_utilization": "one 1.8 µs kernel in a 13 s step",
    },
    "b200_vllm_eager.json.gz": {
        "launch_bound": "eager decoding: 65 % of the trace idle in short gaps while the CPU "
                        "ran vLLM's ops, median launch delay 3 µs",
        "low_gpu_utilization": "the GPU is busy 14 % of the window",
        "elementwise_chain_between_gemms": "RMS norm, rotary and quantization kernels "
                                           "between GEMMs",
    },
    "h100_bert_small.json.gz": {
        "launch_bound": "small-batch inference: 82 % of the step idle in short gaps while "
                        "the CPU ran aten::linear and Python, median launch delay 1.7 µs",
        "low_gpu_utilization": "the GPU is busy 7 % of the step",
        "gemm_unaligned_dims": "GEMMs with a sequence of unaligned length run far below peak",
        "elementwise_chain_between_gemms": "bias, GELU and residual adds between GEMMs",
    },
    "h100_owlv2_dataloader.json.gz": {
        "dataloader_share": "a single-process DataLoader takes 51 % of the step and the GPU "
                            "idles through it (the kernels otherwise wait in a 64 ms queue)",
        "low_gpu_utilization": "the GPU is busy 47 % of the step, idle in the DataLoader",
        "gemm_unaligned_dims": "attention bmm on 5185 patches, not a multiple of 8",
    },
    "h100_vit_image_classification.json.gz": {
        "launch_bound": "one-image inference: 71 % of the step idle in short gaps launching, "
                        "median launch delay 1.7 µs",
        "low_gpu_utilization": "the GPU is busy 16 % of the step",
        "gemm_unaligned_dims": "197 tokens: GEMMs with an unaligned m run far below peak",
        "elementwise_chain_between_gemms": "bias, GELU and residual adds between GEMMs",
        "conv_channels_last": "the bf16 patch convolution takes NCHW input on tensor cores",
    },
    "mi250_minitoy_train.json.gz": {
        "low_gpu_utilization": "a toy model whose GPU work is tiny",
        "reduced_precision_unused": "fp32 GEMMs",
        "memcpy_share": "input copies are a quarter of its GPU time",
    },
    "mi300_bert_small.json.gz": {
        "launch_bound": "the same small-batch inference on MI300X: 60 % of the step idle in "
                        "short gaps launching, median launch delay 14 µs",
        "low_gpu_utilization": "the GPU is busy 10 % of the step",
        "gemm_unaligned_dims": "GEMMs with an unaligned sequence length far below peak",
        "elementwise_chain_between_gemms": "bias, GELU and residual adds between GEMMs",
    },
    "mi300_normalization_layers.json.gz": {
        "low_gpu_utilization": "a test loop: a second of host time around 1 ms of kernels",
    },
    "mi300_resnet_act_checkpoint.json.gz": {
        "exposed_communication": "rank 0 of 8 waits in all-reduce with no computation beside "
                                 "it for 62 % of the step",
        "conv_channels_last": "bf16 convolutions on NCHW tensors",
    },
    "mi300_torch_compile_triton.json.gz": {},
    "two_ranks/rank0.json.gz": {
        "low_gpu_utilization": "the GPU is busy 45 % of the step; the optimizer, Python and "
                               "record_function ranges fill the gaps",
        "reduced_precision_unused": "fp32 GEMMs",
        "exposed_communication": "send/recv and all-to-all with no computation beside them",
        "elementwise_chain_between_gemms": "elementwise kernels between GEMMs",
    },
    "two_ranks/rank1.json.gz": {
        "low_gpu_utilization": "as rank 0: busy 47 % of the step",
        "reduced_precision_unused": "fp32 GEMMs",
        "exposed_communication": "send/recv and all-to-all with no computation beside them",
        "elementwise_chain_between_gemms": "elementwise kernels between GEMMs",
    },
    "v100_resnet50_train.json.gz": {
        "reduced_precision_unused": "fp32 ResNet-50 training; a V100 has no TF32, so only "
                                    "autocast reaches its tensor cores",
    },
    "v100_resnet50_tb_sample_step.json.gz": {
        "dataloader_share": "the TensorBoard plugin's num_workers=0 sample: the step's "
                            "69 ms in the single-process DataLoader leave the GPU idle "
                            "(80 % of its idle); the plugin's own advice is the DataLoader",
        "reduced_precision_unused": "fp32 training on a V100, no autocast",
    },
    # CPU-only traces: no GPU rules; the CPU rules of cpu_advice (tests/test_cpu_advice.py
    # says, per trace, which must stay silent and why)
    "cpu_concurrent_sequential.pt.trace.json.gz": {
        "cpu_ops_waiting": "the same convolution with the same inputs takes 0.36 ms in one "
                           "step and 167 ms in the other; 83 % of the op time is beyond "
                           "what the work needs (a shared 2-core machine)",
    },
    "cpu_concurrent_sequential_amp.pt.trace.json.gz": {
        "cpu_ops_waiting": "as without autocast: bf16 convolutions, batch norms and casts "
                           "wait; 87 % of the op time is beyond the work",
    },
    "cpu_concurrent_threads.pt.trace.json.gz": {
        "cpu_fp32_matmul_conv": "fp32 mkldnn_convolution and addmm are 80 % of the op time "
                                "on two threads, at steady times; the trace does not say "
                                "whether the CPU has bf16 units",
    },
    "cpu_only_gloo.json.gz": {},  # no op in its step: ten gloo:all_reduce spans on 2 threads
    # a small CPU run: three 16 KiB all-reduces and a sleep, nothing to recommend
    "gloo_straggler/rank0.pt.trace.json.gz": {},
    "gloo_straggler/rank1.pt.trace.json.gz": {},
    "cpu_torch_profiler.pt.trace.json.gz": {
        "cpu_ops_waiting": "every op of a tiny model takes milliseconds in both steps: a "
                           "125 kFLOP aten::mm takes 16 ms; 78 % of the op time is waiting",
    },
    "no_rank_info.json.gz": {},
}

# the rule that must come first, where the cause is clear
LEADS = {
    "h100_owlv2_dataloader.json.gz": "dataloader_share",
    "v100_resnet50_tb_sample_step.json.gz": "dataloader_share",
    "b200_vllm_eager.json.gz": "launch_bound",
    "h100_bert_small.json.gz": "launch_bound",
    "a100_ddp_nccl_rank0.json.gz": "launch_bound",
}


def test_the_list_covers_every_real_trace():
    traces = {str(p.relative_to(DATA)) for p in DATA.glob("**/*.json.gz")
              if "critical_path_expected" not in p.name}
    assert traces == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rules_that_fire_are_the_ones_read_from_the_trace(name):
    fired = [r.rule for r in analysis(name).recommendations]
    assert set(fired) == set(EXPECTED[name]), (
        f"unexpected: {sorted(set(fired) - set(EXPECTED[name]))}, "
        f"missing: {sorted(set(EXPECTED[name]) - set(fired))}")
    if name in LEADS:
        assert fired[0] == LEADS[name]


def test_launch_bound_stays_silent_where_the_queue_is_deep():
    """DataLoader-bound OWLv2 (median launch delay 64 ms), GPU-bound ResNet-50 (77 ms) and
    the plugin's DataLoader-bound ResNet-50 sample (8 ms) idle with kernels queued far
    ahead: the host is not too slow to launch."""
    for name in ("h100_owlv2_dataloader.json.gz", "v100_resnet50_train.json.gz",
                 "v100_resnet50_tb_sample_step.json.gz"):
        a = analysis(name)
        assert a.launches.launch_delay.p50_ns > 1_000_000
        assert "launch_bound" not in {r.rule for r in a.recommendations}


def test_the_tensorboard_plugin_also_names_the_dataloader(tmp_path):
    """The plugin's own analysis of the OWLv2 trace recommends more DataLoader workers from
    its DataLoader share of the step; profkit's DataLoader rule, measured on the GPU idle it
    causes, leads on the same trace. The plugin finds the DataLoader among CPU ops only,
    and this trace (like any recent one) writes it as a ``user_annotation``: it is given
    the category the plugin knows, nothing else changes."""
    import json

    data = pytest.importorskip("torch_tb_profiler.profiler.data")
    from tb_reference import adapted

    doc = adapted(DATA / "h100_owlv2_dataloader.json.gz")
    for e in doc["traceEvents"]:
        if e.get("name", "").startswith("enumerate(DataLoader)"):
            e["cat"] = "cpu_op"
    trace = tmp_path / "owlv2.pt.trace.json"
    trace.write_text(json.dumps(doc))
    profile = data.RunProfileData.parse("worker", "span", str(trace), str(tmp_path))
    (text,) = [r for r in profile.recommendations if "DataLoader" in r]
    assert "51.1% of the step time is in DataLoader" in text
    assert analysis("h100_owlv2_dataloader.json.gz").recommendations[0].rule == \
        "dataloader_share"
