"""Hotspot classes: which kind of work an op or a kernel is, from its name.

Ops are classed by their ``aten::``/autograd names; kernels by the op that launched
them (see :mod:`profiler_kit.analysis.core.launch_links`) and by these name rules only when
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
COPY = "copy"
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
    COPY,
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
# every match of _COMM holds one of these: names without any skip the regex (a substring
# test is C-fast, the regex's alternatives are tried at each of 400 characters)
_COMM_PARTS = ("ccl", "gloo", "c10d", "record_param_comms", "processgroup", "all", "reduce",
               "send", "barrier")


def _is_comm(lowered: str) -> bool:
    return any(part in lowered for part in _COMM_PARTS) and _COMM.search(lowered) is not None
_ATTENTION = re.compile(
    r"attention|flash|fmha|sdpa|scaled_dot_product|mha_|_attn|^attn_"
)
_BATCHNORM = re.compile(r"batch_?norm|\bbn_|::bn_|bn_fw|bn_bw|miopenbatchnorm")
_NORM = re.compile(
    r"layer_?norm|group_?norm|instance_?norm|rms_?norm|local_response_norm|weight_norm|"
    r"gammabeta|rowwisemoments|computefusedparams|computebackwardfusedparams|"
    r"computeinternalgradients",
)
# Copies, casts and layout changes (AMP's casts, NCHW <-> NHWC, concatenation).
_COPY = re.compile(
    r"copy|transpose|nchwtonhwc|nhwctonchw|nchw2|nhwc2|cnhw2|catarray|\bcat\b|contiguous|"
    r"_to_copy|^to$|^clone$|convert_element_type",
)
_CONV = re.compile(
    r"conv(?!ert)|fprop|dgrad|wgrad|implicit_?gemm|implicit_convolve|igemm_(?:fwd|bwd|wrw)|"
    r"winograd|scudnn|cudnn_(?:infer|train)_|fft2d",
)
_GEMM = re.compile(
    r"gemm|gemv|matmul|\bmm\b|addmm|bmm|baddbmm|addmv|\bmv\b|\bdot\b|linear(?!i[sz]e)|einsum|"
    r"cublas|"
    r"cutlass|^cijk_|nvjet|triton_tem|_scaled_mm",
)
_POOL = re.compile(r"pool")
_REDUCTION = re.compile(
    r"reduce|\bsum\b|\bmean\b|\bamax\b|\bamin\b|\bmax\b|\bmin\b|argmax|argmin|\bnorm\b|"
    r"vector_norm|softmax|cumsum|cumprod|\bprod\b|\bvar\b|\bstd\b|var_mean|std_mean|"
    r"nll_loss|cross_entropy|mse_loss|l1_loss|triton_red|triton_per|topk|sort|\bany\b|\ball\b|"
    r"sum_functor|meanops|scan",
)
_ELEMENTWISE = re.compile(
    r"elementwise|triton_poi|\badd_?\b|\bsub_?\b|\bmul_?\b|\bdiv_?\b|relu|gelu|silu|sigmoid|"
    r"tanh|threshold|hardtanh|leaky|elu|\bexp(?!and)|\blog\b|\bpow|sqrt|rsqrt|clamp|where|\bneg|"
    r"\babs|dropout|addcmul|addcdiv|lerp|_foreach_|multi_tensor_apply|fill_?|zero_|"
    r"masked_fill|\bsign\b|reciprocal|"
    r"\bcos\b|\bsin\b|\berf|\bunary|\bbinary|functor|"
    r"distribution|uniform|normal_|bernoulli|index_put|\bindex\b|index_?select|gather|scatter|"
    r"embedding|"
    r"subtensorop|optensor|_kernel_cuda$",
)

# Names are matched lower-cased and cut to this length: the kernel's own name and its first
# template arguments come first, and the regexes stay fast on 2,000-character lambdas.
MATCH_CHARS = 400
PARSE_CHARS = 2000  # enough for the functor of PyTorch's longest lambdas

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


# Ops that copy, cast or concatenate: their kernels are copies whatever op encloses them.
_COPY_OPS = frozenset({
    "copy_", "copy", "to", "_to_copy", "contiguous", "clone", "cat", "_cat", "concat",
    "concatenate", "stack", "convert_element_type", "_copy_from", "_copy_from_and_resize",
})


def classify_op(name: str) -> str:
    """Class of a CPU op (``aten::conv2d``, ``ConvolutionBackward0``, ``nccl:all_reduce``)."""
    if _is_comm(name[:MATCH_CHARS].lower()):
        return COMMUNICATION
    base = _op_base(name[:MATCH_CHARS])
    if base in _COPY_OPS:
        return COPY
    for pattern, cls in _SPECIFIC_RULES:
        if pattern.search(base):
            return cls
    if _REDUCTION.search(base):
        return REDUCTION
    if _ELEMENTWISE.search(base):
        return ELEMENTWISE
    return OTHER


# cuDNN's tensor-core convolutions, named for their instruction shape
# (``volta_fp16_s884cudnn_fp16_..._relu_..._nhwc2nchw_tn_v1``, ``turing_fp16_s1688cudnn_...``):
# their names also hold an activation and an output layout.
_CUDNN_TENSOR_OP = re.compile(r"[hsi]\d{3,6}cudnn")

# Kernel-name rules, most specific first; each is tried on the kernel's own name, then on
# its functor (see :func:`kernel_parts`). Copies come before the rest: a copy kernel's
# name often also says ``elementwise``.
KERNEL_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (_CUDNN_TENSOR_OP, CONVOLUTION),
    (_COPY, COPY),
    *_SPECIFIC_RULES,
    (_REDUCTION, REDUCTION),
    (_ELEMENTWISE, ELEMENTWISE),
)

# Template arguments that are types or numbers, never the work a kernel does.
_TYPE_ARG = re.compile(
    r"^(?:-?\d+[a-z]*|true|false|\(.*\)-?\d+|(?:unsigned |signed |const )*"
    r"(?:void|bool|char|short|int|long|long long|float|double|half|__half|__nv_bfloat16|"
    r"__nv_fp8\w*|int\d+_t|uint\d+_t|size_t)(?: const)?\*?)$"
    r"|^(?:std|c10|cub|at::detail|at_cuda_detail|torch::headeronly)::"
    r"|^(?:at::native::)?(?:anon::)?(?:opaquetype|array|tensorinfo|genericpackedtensoraccessor)",
)
_IDENT_END = re.compile(r"[A-Za-z_]\w*\Z")
_WRAPPERS = frozenset({"lambda", "operator", "gpu_kernel_impl", "gpu_kernel_impl_nocast",
                       "gpu_kernel", "func_wrapper_t", "decltype"})
_ANON = "(anonymous namespace)"


_ANGLES = re.compile(r"[<>]")
_PARENS = re.compile(r"[()]")
_DELIMS = re.compile(r"[<>(){},]")
_NAME_STOP = re.compile(r"[ (<]")


def _close(s: str, i: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing the one at ``i`` (``len(s)`` when unbalanced)."""
    depth = 0
    for m in (_ANGLES if open_c == "<" else _PARENS).finditer(s, i):
        if m.group() == open_c:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.start()
    return len(s)


def _first_called(arg: str) -> str:
    """The first function named in ``arg`` that is not a wrapper: the identifier before a
    ``(`` (its template arguments, if any, skipped)."""
    for m in _PARENS.finditer(arg):
        if m.group() != "(":
            continue
        j = m.start()
        if j and arg[j - 1] == ">":  # name<...>(
            depth = 0
            while j > 0:
                j -= 1
                if arg[j] == ">":
                    depth += 1
                elif arg[j] == "<":
                    depth -= 1
                    if depth == 0:
                        break
        ident = _IDENT_END.search(arg, max(j - 120, 0), j)
        if ident and ident.group() not in _WRAPPERS:
            return ident.group()
    return ""


def _split_args(s: str) -> list[str]:
    """Top-level comma-separated template arguments."""
    out, depth, start = [], 0, 0
    for m in _DELIMS.finditer(s):
        c = m.group()
        if c in "<({":
            depth += 1
        elif c in ">)}":
            depth -= 1
        elif depth == 0:
            out.append(s[start:m.start()].strip())
            start = m.end()
    out.append(s[start:].strip())
    return [a for a in out if a]


def _base(qualified: str) -> str:
    """Last component of a qualified name, template arguments dropped."""
    cut = qualified.find("<")
    if cut >= 0:
        qualified = qualified[:cut]
    return qualified.rsplit("::", 1)[-1].strip()


def kernel_parts(name: str) -> tuple[str, str]:
    """A demangled kernel name's own name and its functor, without namespaces or types.

    ``void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda(
    ...)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, ...)`` gives
    ``("vectorized_elementwise_kernel", "bfloat16_copy_kernel_cuda")``; a library
    kernel wrapped in a template (``cutlass::Kernel2<cutlass_80_tensorop_...gemm...>``)
    gives the wrapped kernel as the functor. Names that are not demangled C++
    (``nvjet_...``, ``Cijk_...``, Triton's) are their own kernel name, with no functor.
    """
    s = name[:PARSE_CHARS].replace(_ANON, "anon")
    if s.startswith("_Z"):  # still mangled: no structure to read
        return s[:MATCH_CHARS], ""
    start, i, n = 0, 0, len(s)
    args = ""
    while i < n:
        m = _NAME_STOP.search(s, i)
        if m is None:
            i = n
            break
        i = m.start()
        c = m.group()
        if c == " ":
            start = i + 1
        elif c == "(":
            break
        else:  # "<"
            j = _close(s, i, "<", ">")
            if s.startswith("::", j + 1):  # a templated scope: the name goes on
                i = j + 1
                continue
            if s[j + 1:j + 2] == " ":  # a templated return type (std::enable_if<...>::type)
                start = i = j + 2
                continue
            args = s[i + 1:j]
            break
        i += 1
    kernel = _base(s[start:i]) or s[:MATCH_CHARS]
    return kernel, _functor(args)


def _functor(args: str, depth: int = 0) -> str:
    """The first template argument that names work: a function whose lambda is passed
    (``direct_copy_kernel_cuda``), or a functor or wrapped kernel's own name; wrappers
    (``gpu_kernel_impl_nocast<...>``) are looked through."""
    for arg in _split_args(args):
        if _TYPE_ARG.search(arg.lower()):
            continue
        called = _first_called(arg)
        if called:
            return called
        base = _base(arg)
        if base in _WRAPPERS and depth < 3:
            cut = arg.find("<")
            inner = _functor(arg[cut + 1:_close(arg, cut, "<", ">")], depth + 1) if cut >= 0 else ""
            if inner:
                return inner
            continue
        if base:
            return base
    return ""


def classify_kernel_name(name: str) -> str:
    """Class of a GPU kernel from its own name and functor (never its namespaces, template
    arguments or parameter types)."""
    lowered = name[:MATCH_CHARS].lower()
    if _is_comm(lowered):
        return COMMUNICATION
    kernel, functor = kernel_parts(name)
    kernel, functor = kernel.lower(), functor.lower()
    for pattern, cls in KERNEL_RULES:
        if pattern.search(kernel) or (functor and pattern.search(functor)):
            return cls
    return OTHER


def classify_annotation(name: str) -> str:
    """A ``record_function`` span only speaks for communication (``nccl:all_reduce``)."""
    return COMMUNICATION if _is_comm(name[:MATCH_CHARS].lower()) else OTHER
