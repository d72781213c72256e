"""Which GEMM and convolution kernels run on tensor / matrix cores, read from their names.

One table, :data:`FAMILIES`, read top to bottom on the lower-cased kernel name (its first
:data:`~profiler_kit.analysis.core.classify.PARSE_CHARS` characters); the first row whose
pattern matches decides. Each row says whether the family uses tensor (NVIDIA) or
matrix (AMD MFMA) cores, and whether fp32 operands on it are computed as TF32. A row may
say "the name does not tell" (``tensor_core=None``, Triton's ``tl.dot`` kernels): then
the data type decides, as for a name no row matches (16 bits or fewer: tensor cores).

The order matters where families share words: FFMA and CUTLASS SIMT kernels come first
(GH200's ``sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma`` is plain FP32 FMA on SIMT cores,
although ``xmma`` names most tensor-core kernels); the instruction shapes
(``s1688``, ``h884``) before the SIMT ``sgemm``/``scudnn`` words; AMD's MFMA tokens
before the Tensile ``Cijk_`` prefix that VALU kernels share.

``tests/analysis/test_analysis_tensor_cores.py`` holds real kernel names of every family, taken
from traces of V100, A100, H100, GH200, B200, MI250 and MI300X, with the answer each
must get.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from profiler_kit.analysis.core import classify


class KernelFamily(NamedTuple):
    family: str  # what the row stands for
    pattern: re.Pattern[str]  # searched in the lower-cased kernel name
    tensor_core: bool | None  # None: the name does not say; the data type decides
    tf32: bool  # fp32 operands on this family run as TF32 (tensor cores, fp32 in and out)


def _row(family: str, pattern: str, tensor_core: bool | None, tf32: bool) -> KernelFamily:
    return KernelFamily(family, re.compile(pattern), tensor_core, tf32)


FAMILIES: tuple[KernelFamily, ...] = (
    # --- plain FP32 FMA, whatever else the name says
    _row("FFMA and CUTLASS SIMT kernels (cuBLAS sm80 xmma ..._ffma, cutlass_*_simt_*)",
         r"ffma|_simt_|opclasssimt", False, False),
    _row("MIOpen SubTensorOp helpers (bias, casts: no matrix math)", r"subtensorop",
         False, False),
    # --- NVIDIA tensor cores
    _row("Hopper warpgroup MMA (wgmma/gmma: sm90 xmma with warpgroupsize, CUTLASS 3 sm90)",
         r"wgmma|gmma|warpgroupsize", True, True),
    _row("cuBLAS nvjet kernels (Hopper, Blackwell; tst/hsh/qqtst... all tensor-core)",
         r"^nvjet", True, True),
    _row("TF32 in the name (cuDNN/cuBLAS xmma tf32f32, CUTLASS tfloat32_t, *_tf32_*; "
         "AMD's xf32)", r"tf32|tfloat32|xf32", True, True),
    _row("tensor-core instruction shapes of cuBLAS, cuDNN and CUTLASS "
         "(volta_h884gemm, s884cudnn, turing_s1688, i8816, ampere_s16816, s161616, i16832)",
         r"[hsicz](?:884|1688|8816|16816|161616|16832)(?:gemm|cudnn|fprop|dgrad|wgrad|_|$)",
         True, True),
    _row("CUTLASS/cuDNN tensor-op and WMMA kernels, HMMA/IMMA/DMMA",
         r"tensorop|wmma|(?:^|_)[hid]mma", True, True),
    _row("Blackwell kernels named for sm100 (TensorRT-LLM bmm_*_sm100f, tcgen05)",
         r"sm_?100|tcgen05", True, True),
    _row("xmma kernels computing fp32 operands in fp32 (f32f32_f32f32: FFMA)",
         r"xmma\w*?f32f32_f32f32", False, False),
    _row("xmma kernels in 16-/8-bit types (sm80/sm86/sm89/sm90 xmma bf16/f16/i8/e4m3)",
         r"xmma", True, True),
    # --- AMD matrix cores (fp32 on MFMA is fp32, not TF32)
    _row("AMD MFMA in rocBLAS/hipBLASLt (Tensile) names: MI<m>x<n>x<k>",
         r"_mi\d+x\d+x\d+", True, False),
    _row("AMD MFMA named: mfma, Composable Kernel xdlops/xdl, MIOpen igemm gtcx",
         r"mfma|xdlops|_xdl|xdl_|gtcx", True, False),
    # --- SIMT / VALU
    _row("AMD Tensile (rocBLAS/hipBLASLt) kernels without an MI token: VALU",
         r"^cijk_", False, False),
    _row("MIOpen convolutions without xdlops (igemm gtc, naive, im2col)",
         r"igemm_\w+?_gtc_|naive_conv|miopenconv|im2d2col", False, False),
    _row("cuBLAS/cuDNN SIMT kernels: sgemm/dgemm/hgemm/complex gemm, scudnn, gemv, dot, "
         "Winograd, FFT and direct convolutions",
         r"sgemm|dgemm|hgemm|[cz]gemm|[shd]cudnn|gemv|gemmk1|dot_kernel|winograd|fft|"
         r"wgrad_alg|dgrad_engine|grouped_direct|im2col",
         False, False),
    # --- the name does not say
    _row("Triton kernels (tl.dot: tensor cores for 16-bit inputs; fp32 as allow_tf32 says)",
         r"^triton_", None, False),
)


@lru_cache(maxsize=8192)  # sixteen searches of up to 2,000 characters; names repeat
def family_of(kernel_name: str) -> KernelFamily | None:
    """The first row of :data:`FAMILIES` that matches ``kernel_name`` (None: no row)."""
    name = kernel_name[:classify.PARSE_CHARS].lower()
    for row in FAMILIES:
        if row.pattern.search(name):
            return row
    return None


def uses_tensor_cores(kernel_name: str) -> bool | None:
    """True / False as the kernel's family says; None when the name does not tell."""
    row = family_of(kernel_name)
    return None if row is None else row.tensor_core
