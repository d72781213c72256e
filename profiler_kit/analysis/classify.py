"""Hotspot classes: which kind of work an op or a kernel is, from its name.

Ops are classed by their ``aten::``/autograd names; kernels by the op that launched
them (see :mod:`profiler_kit.analysis.attribution`) and by these name rules only when
no op is linked or the linked ops say nothing (Triton, NCCL, library kernels).
"""

from __future__ import annotations

import re

CONVOLUTION = "convolution"
BATCHNORM = "batchnorm"
NORMALIZATION = "normalization"
GEMM = "gemm"
ATTENTION = "attention"
ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
POOLING = "pooling"
MEMCPY = "memcpy"
MEMSET = "memset"
COMMUNICATION = "communication"
OTHER = "other"

# Display order (and the index of each class in the arrays the analyses build).
CLASSES: tuple[str, ...] = (
    CONVOLUTION,
    BATCHNORM,
    NORMALIZATION,
    GEMM,
    ATTENTION,
    ELEMENTWISE,
    REDUCTION,
    POOLING,
    MEMCPY,
    MEMSET,
    COMMUNICATION,
    OTHER,
)
CLASS_INDEX: dict[str, int] = {c: i for i, c in enumerate(CLASSES)}

_COMM = re.compile(
    r"nccl|rccl|gloo|c10d|record_param_comms|processgroup|all_?reduce|all_?gather|"
    r"reduce_?scatter|all_?to_?all|sendrecv|send_recv|\bbarrier\b|nccldevkernel|msccl",
)
_ATTENTION = re.compile(
    r"attention|flash|fmha|sdpa|scaled_dot_product|mha_|_attn"
)
_BATCHNORM = re.compile(r"batch_?norm|\bbn_|::bn_|bn_fw|bn_bw|miopenbatchnorm")
_NORM = re.compile(
    r"layer_?norm|group_?norm|instance_?norm|rms_?norm|local_response_norm|weight_norm",
)
_CONV = re.compile(
    r"conv(?!ert)|fprop|dgrad|wgrad|implicit_?gemm|implicit_convolve|igemm_(?:fwd|bwd|wrw)|"
    r"winograd|scudnn|cudnn_(?:infer|train)_|fft2d",
)
_GEMM = re.compile(
    r"gemm|gemv|matmul|\bmm\b|addmm|bmm|baddbmm|addmv|\bmv\b|\bdot\b|linear|einsum|cublas|"
    r"cutlass|^cijk_|nvjet|triton_tem|_scaled_mm|tensorop",
)
_POOL = re.compile(r"pool")
_REDUCTION = re.compile(
    r"reduce|\bsum\b|\bmean\b|\bamax\b|\bamin\b|\bmax\b|\bmin\b|argmax|argmin|\bnorm\b|"
    r"vector_norm|softmax|cumsum|cumprod|\bprod\b|\bvar\b|\bstd\b|var_mean|std_mean|"
    r"nll_loss|cross_entropy|mse_loss|l1_loss|triton_red|triton_per|topk|sort|\bany\b|\ball\b",
)
_ELEMENTWISE = re.compile(
    r"elementwise|triton_poi|\badd_?\b|\bsub_?\b|\bmul_?\b|\bdiv_?\b|relu|gelu|silu|sigmoid|"
    r"tanh|threshold|hardtanh|leaky|elu|\bexp|\blog\b|\bpow|sqrt|rsqrt|clamp|where|\bneg|"
    r"\babs|dropout|addcmul|addcdiv|lerp|_foreach_|multi_tensor_apply|fill_?|zero_|copy_|"
    r"direct_copy|\bcat\b|catarray|\bclone\b|_to_copy|masked_fill|\bsign\b|reciprocal|"
    r"\bcos\b|\bsin\b|\berf|transpose|nchwtonhwc|nhwctonchw|\bunary|\bbinary|functor|"
    r"distribution|uniform|normal_|bernoulli|index_put|\bindex\b|gather|scatter|embedding",
)

# Names are matched lower-cased and cut to this length: the kernel's own name and its first
# template arguments come first, and the regexes stay fast on 2,000-character lambdas.
_MATCH_CHARS = 400

# Prefixes that wrap an op name without changing what it does.
_OP_PREFIXES = ("autograd::engine::evaluate_function: ",)


def _op_base(name: str) -> str:
    """``'autograd::engine::evaluate_function: AddmmBackward0'`` -> ``'addmm'``."""
    for prefix in _OP_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    if "::" in name:
        name = name.rsplit("::", 1)[1]
    name = re.sub(r"Backward\d*$", "", name)
    # CamelCase autograd nodes (NativeBatchNormBackward0) -> snake case.
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return name.lower()


# Name rules in order of precedence, shared by ops and kernels (most specific first).
_SPECIFIC_RULES = (
    (_ATTENTION, ATTENTION),
    (_BATCHNORM, BATCHNORM),
    (_NORM, NORMALIZATION),
    (_CONV, CONVOLUTION),
    (_GEMM, GEMM),
    (_POOL, POOLING),
)


def classify_op(name: str) -> str:
    """Class of a CPU op (``aten::conv2d``, ``ConvolutionBackward0``, ``nccl:all_reduce``)."""
    if _COMM.search(name[:_MATCH_CHARS].lower()):
        return COMMUNICATION
    base = _op_base(name[:_MATCH_CHARS])
    for pattern, cls in _SPECIFIC_RULES:
        if pattern.search(base):
            return cls
    if base in {"copy_", "to", "_to_copy", "contiguous", "clone"}:
        # A copy says nothing about the work around it: let its ancestors decide.
        return OTHER
    if _REDUCTION.search(base):
        return REDUCTION
    if _ELEMENTWISE.search(base):
        return ELEMENTWISE
    return OTHER


def classify_kernel_name(name: str) -> str:
    """Class of a GPU kernel from its name alone (the fallback when no op is linked)."""
    name = name[:_MATCH_CHARS].lower()
    if _COMM.search(name):
        return COMMUNICATION
    for pattern, cls in (*_SPECIFIC_RULES, (_REDUCTION, REDUCTION), (_ELEMENTWISE, ELEMENTWISE)):
        if pattern.search(name):
            return cls
    return OTHER


def classify_annotation(name: str) -> str:
    """A ``record_function`` span only speaks for communication (``nccl:all_reduce``)."""
    return COMMUNICATION if _COMM.search(name[:_MATCH_CHARS].lower()) else OTHER
