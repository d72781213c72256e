"""The title and advice of each rule (:class:`~profiler_kit.analysis.core.recommendation.
Recommendation`), by its code and, where its words depend on the branch it took, its
variant (``"rule/variant"``): every format says a recommendation with :func:`title` and
:func:`advice`, from its measured figure and its figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.analysis.jobs import comm_context as cc

Say = Callable[[Recommendation], str]


class Words(NamedTuple):
    title: Say
    advice: Say


def _said(text: str) -> Say:
    """Words that need no figure."""
    return lambda r: text


# how to hide exposed transfer, by what the collectives are for (jobs.comm_context)
COMM_ADVICE = {
    cc.DDP_GRADIENT: "DDP's gradient all-reduce overlaps the backward pass bucket by bucket: "
                     "tune bucket_cap_mb (smaller buckets start sooner behind the backward), "
                     "accumulate gradients over micro-batches under no_sync() so it runs "
                     "once every N steps, or halve its bytes with a DDP comm hook "
                     "(bf16_compress_hook).",
    cc.DDP_BUFFERS: "DDP broadcasts module buffers (batch-norm statistics) at every forward: "
                    "broadcast_buffers=False if the ranks need not share them.",
    cc.EMBEDDING: "Hide the embeddings' all-to-all behind the dense compute: TorchRec's "
                  "TrainPipelineSparseDist runs the next batch's input all-to-all during "
                  "this batch's forward and backward; send pooled embeddings in fp16/bf16 "
                  "(quantized comms); or shard tables so fewer lookups cross ranks.",
    cc.MOE: "Overlap the token dispatch/combine with expert (or shared-expert) compute by "
            "chunking it, send fewer tokens (capacity factor), or keep expert parallelism "
            "within one node's NVLink.",
    cc.FSDP: "Prefetch the next unit's all-gather (forward_prefetch=True, "
             "backward_prefetch=BACKWARD_PRE; FSDP2: set_modules_to_forward_prefetch), keep "
             "parameters gathered between forward and backward (reshard_after_forward=False) "
             "if memory allows, or wrap larger units.",
    cc.OPTIMIZER: "The optimizer's collectives run with nothing beside them: overlap them "
                  "with the next forward (ZeroRedundancyOptimizer(overlap_with_ddp=True)), "
                  "or communicate less often or in lower precision.",
    cc.TENSOR_PARALLEL: "Tensor-parallel collectives sit between each layer's GEMMs: overlap "
                        "them with the GEMMs (async tensor parallelism: "
                        "torch._inductor.config._micro_pipeline_tp, or sequence parallelism's "
                        "reduce-scatter/all-gather), keep the tensor-parallel group inside "
                        "one node's NVLink, or use a smaller tensor-parallel degree.",
    cc.POINT_TO_POINT: "Pipeline stages wait on send/recv: more micro-batches or an "
                       "interleaved schedule fill the bubble (see the pipeline view).",
    cc.OTHER: "Issue the collective with async_op=True and wait only where its result is "
              "needed, so independent computation runs beside it.",
}


def _contexts(r: Recommendation) -> str:
    return ", ".join(cc.LABELS[c] for c in r.figures["contexts"])


def _comm_advice(r: Recommendation) -> str:
    return " ".join(COMM_ADVICE[c] for c in r.figures["contexts"])


_LOADER = ("Use more DataLoader workers (num_workers), pin_memory=True, "
           "persistent_workers=True and prefetching, or move preprocessing to the GPU.")


def _reduced_precision(r: Recommendation) -> str:
    compiled = "and compile it under autocast " if r.figures["compiled"] else ""
    return (f"Run the model under torch.autocast (bf16, or fp16 with a GradScaler) "
            f"{compiled}so these ops use tensor/matrix cores at 16 bits: they are "
            f"{r.measured:.0%} of the GPU time, the most autocast can speed up; the rest of "
            "the GPU time (elementwise, custom and Triton kernels, communication) stays as "
            "it is.")


def _late_rank_title(r: Recommendation) -> str:
    if r.figures["straggler"] is None:
        return "Ranks wait for late ranks (no single straggler)"
    rank, last, instances = r.figures["straggler"]
    return f"Ranks wait for rank {rank} (last in {last} of {instances} collectives where a " \
           "rank waited)"


def _late_rank(what: Say) -> Words:
    """The late-rank rule's words: what to do about what the late rank did, then that the
    others only wait."""
    return Words(_late_rank_title, lambda r: what(r) + (
        " The others only wait: a faster interconnect or other collective settings do not "
        "help until the late rank arrives sooner."))


def _range(r: Recommendation) -> str:
    return r.figures["range"] or "Python or untraced code"


def _host_work(r: Recommendation) -> str:
    share = r.figures["gpu_share"]
    busy = "" if share is None else " (its GPU idle)" if share <= 0 else \
        f" (its GPU computing {share:.0%} of that time)"
    return (f"Rank {r.figures['rank']}'s CPU is still in {_range(r)}{busy} when the others "
            "arrive: its host work there takes longer (more work on that rank, or a slower or "
            "busier host).")


WORDS: dict[str, Words] = {
    # one trace's rules (advice.recommend)
    "low_gpu_utilization": Words(
        _said("GPU mostly idle"),
        _said("The GPU waits on the host: batch more work per launch, overlap data loading, "
              "use CUDA graphs or torch.compile, or run independent work on more streams.")),
    "reduced_precision_unused": Words(
        _said("Matmul/convolution/attention time autocast could run in 16 bits"),
        _reduced_precision),
    "host_bound": Words(
        _said("GPU waits while the CPU runs model code (host-bound)"),
        _said("The CPU spends longer issuing each piece of work than the GPU spends running "
              "it: cut the host work per step where it is (the regions and ops below): "
              "torch.compile removes Python and per-op dispatch, CUDA graphs replay a whole "
              "step's launches at once, larger batches give each op more work, and data "
              "movement or Python-side bookkeeping can leave the step.")),
    "launch_bound": Words(
        _said("GPU waits for the launch calls themselves (launch-bound)"),
        _said("Each kernel runs in less time than the runtime call that launches it: launch "
              "fewer, larger kernels. CUDA graphs (torch.compile with mode='reduce-overhead', "
              "or torch.cuda.graphs) replay many launches for the cost of one; fusing ops "
              "(torch.compile) or larger batches cuts the number of launches.")),
    "idle_after_synchronization": Words(
        _said("GPU idle after the CPU waited for it (synchronization)"),
        _said("A call that waits for the GPU (.item(), .cpu(), .tolist(), printing a tensor, "
              "torch.cuda.synchronize()) drains the queue, and the GPU then idles while the "
              "CPU launches again: keep such values on the device, read them every N steps, "
              "or copy with non_blocking=True into pinned memory and wait on an event "
              "later.")),
    "idle_in_optimizer": Words(
        _said("GPU idle while the CPU runs the optimizer"),
        _said("The optimizer launches many small kernels per parameter: use a fused or "
              "foreach implementation (fused=True or foreach=True), or compile the step "
              "(torch.compile on optimizer.step).")),
    "dataloader_share/gpu_idle": Words(
        _said("GPU idle while the DataLoader loads the next batch"), _said(_LOADER)),
    "dataloader_share/cpu_time": Words(
        _said("Large share of time waiting for data"), _said(_LOADER)),
    "memcpy_share": Words(
        _said("Large share of GPU time in memory copies"),
        _said("Keep tensors on the device, create inputs there, and use pinned memory with "
              "non_blocking=True for the copies that remain.")),
    "exposed_communication": Words(
        lambda r: f"Communication not hidden behind computation: {_contexts(r)}",
        lambda r: (_comm_advice(r) + " From one rank's trace, waiting for a late rank and "
                   "transferring look the same: analyze the traces of all ranks together "
                   "for the split.").strip()),
    "fp32_matmul_on_tensor_core_gpu": Words(
        _said("fp32 matmuls on a GPU with TF32 tensor cores"),
        _said("Allow TF32 for matmuls: torch.set_float32_matmul_precision('high') (or use "
              "autocast).")),
    "memory_near_capacity": Words(
        _said("Memory near device capacity"),
        _said("Reduce activation memory (activation checkpointing, smaller batch, reduced "
              "precision) before the next allocation fails.")),
    "conv_bias_before_batchnorm": Words(
        _said("Convolution bias followed by batch norm"),
        _said("Batch norm subtracts the mean right after, so the convolution's bias does "
              "nothing: build those convolutions with bias=False.")),
    # CPU-only traces (advice.cpu_advice)
    "cpu_ops_waiting": Words(
        _said("CPU ops took far longer than their work needs (threads waiting for cores)"),
        _said("The same op with the same inputs ran many times faster elsewhere in the "
              "trace, or its FLOPs and bytes need a fraction of its time: the ops waited. The "
              "CPU was shared with other processes, or this process runs more threads than "
              "there are free cores, and the intra-op threads wait for each other at every "
              "parallel loop. Profile on an otherwise idle machine, and set "
              "torch.set_num_threads (OMP_NUM_THREADS) to the cores this process can use, "
              "fewer where other processes share them; until then the op shares of this "
              "trace measure the waiting, not the work.")),
    "cpu_fp32_matmul_conv/bf16_units": Words(
        _said("fp32 GEMM/convolution take most of the CPU time"),
        lambda r: f"This CPU has {r.figures['bf16']} (the trace's oneDNN kernel names say "
                  "so): run the model under torch.autocast('cpu', dtype=torch.bfloat16), "
                  "which runs GEMMs and convolutions in bf16 on those units at several times "
                  "the fp32 rate."),
    "cpu_fp32_matmul_conv/cpu_unknown": Words(
        _said("fp32 GEMM/convolution take most of the CPU time"),
        _said("bf16 (torch.autocast('cpu', dtype=torch.bfloat16)) pays off only on CPUs with "
              "AMX or AVX-512 BF16 and is slower without them, and this trace does not show "
              "which CPU ran it (no oneDNN kernel names in it): check the CPU's flags "
              "(lscpu: amx_bf16, avx512_bf16) before trying it.")),
    "cpu_small_elementwise_ops": Words(
        _said("Many small elementwise ops take much of the CPU time"),
        _said("Each op reads and writes its whole tensor and pays the dispatch cost for a few "
              "microseconds of work: torch.compile fuses such chains into a few loops (one "
              "pass over the data, no per-op dispatch).")),
    # SM fill (advice.sm_rules)
    "small_kernels_underfill_gpu": Words(
        _said("Small kernels leave most SMs idle while the GPU reads busy"),
        _said("Kernels launched with fewer blocks than the GPU has SMs keep the rest idle: "
              "give each kernel more work (a larger batch), fuse the small ops into fewer "
              "kernels (torch.compile), and replay the launches as a CUDA graph "
              "(torch.compile mode='reduce-overhead') so their launch cost does not stretch "
              "them apart.")),
    # the perf model (advice.perf_rules)
    "gemm_unaligned_dims": Words(
        _said("GEMMs far below peak with sizes tensor cores do not tile"),
        _said("Pad or choose sizes that are multiples of 8 for fp16/bf16 (16 for fp8): "
              "hidden sizes, vocabulary, sequence length or batch (e.g. pad the vocabulary to "
              "a multiple of 64, the sequence to a multiple of 8).")),
    "small_gemms": Words(
        _said("Many small GEMMs"),
        _said("Each GEMM is too small to fill the GPU: batch independent ones into one bmm "
              "(or a grouped GEMM), use a larger batch, or torch.compile / CUDA graphs to "
              "cut the launch cost between them.")),
    "elementwise_chain_between_gemms": Words(
        _said("Memory-bound elementwise chains between GEMMs"),
        _said("Each op reads and writes the whole tensor: torch.compile fuses such chains "
              "into one kernel (or into the GEMM's epilogue), so the data moves once.")),
    "conv_channels_last": Words(
        _said("fp16/bf16 convolutions in NCHW on a GPU with tensor cores"),
        _said("Convert the model and its inputs to channels_last "
              "(model.to(memory_format=torch.channels_last), and the same for inputs): "
              "tensor-core convolution kernels work in NHWC, so NCHW costs layout "
              "conversions or slower kernels.")),
    # the job's rules (advice.job_rules); the late rank's by what it did meanwhile
    "waiting_for_late_rank/no_lead_ins": _late_rank(_said(
        "Find what the late ranks do before their collectives (their lead-ins are not "
        "recorded here) and even it out across ranks.")),
    "waiting_for_late_rank/gpu_bound": _late_rank(
        lambda r: f"Rank {r.figures['rank']}'s GPU is still computing work launched in "
                  f"{_range(r)} when the others arrive: its work is larger than theirs. "
                  "Balance it: shard embedding tables by cost (TorchRec's planner), give every "
                  "rank batches of similar size and sequence length (pad or bucket them), "
                  "balance experts' load, or check that GPU for a lower clock or another "
                  "process."),
    "waiting_for_late_rank/loading_data": _late_rank(
        lambda r: f"Rank {r.figures['rank']} is still loading data ({_range(r)}) when the "
                  "others arrive: give its DataLoader more workers or prefetching, or look "
                  "for a slower disk or busier host under it."),
    "waiting_for_late_rank/optimizer": _late_rank(
        lambda r: f"Rank {r.figures['rank']} is still in the optimizer ({_range(r)}) when the "
                  "others arrive: its share of the optimizer's work (sharded states, per-rank "
                  "parameters) is larger; balance it."),
    "waiting_for_late_rank/untraced": _late_rank(
        lambda r: f"Rank {r.figures['rank']} runs Python or untraced code (no record_function "
                  "range open) while the others wait: work only that rank does (logging, "
                  "checkpointing, evaluation, a sleep or a host-side wait); move it off the "
                  "step or spread it over every rank, and wrap it in record_function to name "
                  "it."),
    "waiting_for_late_rank/host_work": _late_rank(_host_work),
    "slow_transfer": Words(
        lambda r: f"Collectives transfer far below the link: {r.figures['kind']} at "
                  f"{r.measured:.0%} of {r.figures['link']}",
        _said("Large collectives move their bytes at a fraction of what the link carries: "
              "check the path NCCL chose (NCCL_DEBUG=INFO: rings through PCIe or the network "
              "instead of NVLink, NCCL_P2P_DISABLE or NCCL_P2P_LEVEL set, GPUs split across "
              "sockets), whether another job shares the GPUs' links, and the NCCL version "
              "and its algorithm/protocol choice (NCCL_ALGO, NCCL_PROTO).")),
    "exposed_transfer": Words(
        lambda r: f"Transfers not hidden behind computation: {_contexts(r)}",
        _comm_advice),
}


def key(r: Recommendation) -> str:
    """The entry of the rule's words: its code, and its variant where it has several."""
    return f"{r.rule}/{r.variant}" if r.variant else r.rule


def title(r: Recommendation) -> str:
    return WORDS[key(r)].title(r)


def advice(r: Recommendation) -> str:
    return WORDS[key(r)].advice(r)
