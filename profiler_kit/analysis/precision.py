"""Precision: how much GEMM and convolution time runs in reduced precision or on tensor cores.

Kernel names carry the data type and the instruction family: ``bf16``/``f16``/``half``/
``tf32``/``fp8`` (reduced precision), ``tensorop``/``xmma``/``hmma``/``s1688`` (NVIDIA
tensor cores), ``MFMA``/``xdlops``/``_MI16x16`` and Tensile's ``HHS``/``BBS`` (AMD
matrix cores). A name that says none of these is taken as plain fp32 (SIMT) math.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis import classify
from profiler_kit.analysis.attribution import GpuActivity
from profiler_kit.trace.table import EventTable

# Data types of 16 bits or fewer in kernel names: what autocast (AMP) gives.
_LOW = re.compile(
    r"bf16|fp16|f16|half|bfloat16|c10::Half|fp8|f8f8|e4m3|e5m2|int8|i8816|hgemm|"
    r"h884|h1688|h16816|_(?:HHS|BBS|HSS|BSS)_",
    re.IGNORECASE,
)
# TF32 and instruction families that run on tensor/matrix cores whatever the data type.
_TENSOR_CORE = re.compile(
    r"tf32|tensorop|xmma|hmma|wmma|\bmma|_mma|s1688|s16816|s884|mfma|xdlops|_xdl_|"
    r"_MI\d+x\d+x\d+|nvjet|gmma|wgmma|sm90_",
    re.IGNORECASE,
)


class Precision(msgspec.Struct, frozen=True):
    """GEMM + convolution kernel time, split by what the kernel names say."""

    eligible_ns: int  # GEMM + convolution kernel time
    low_precision_ns: int  # 16-bit or narrower types (fp16, bf16, fp8, int8)
    tensor_core_ns: int  # low precision, tf32, or a tensor/matrix-core instruction family
    fp32_simt_ns: int  # eligible time in kernels that name neither
    gemm_ns: int
    gemm_fp32_simt_ns: int  # GEMM kernels with no tf32/f16/bf16/tensor-core marker
    fp32_simt_top: tuple[tuple[str, int], ...]  # (kernel name, total ns), largest first
    gemm_fp32_simt_top: tuple[tuple[str, int], ...]  # the same, GEMM kernels only

    @property
    def low_precision_share(self) -> float | None:
        return self.low_precision_ns / self.eligible_ns if self.eligible_ns else None

    @property
    def tensor_core_share(self) -> float | None:
        return self.tensor_core_ns / self.eligible_ns if self.eligible_ns else None


def is_low_precision(kernel_name: str) -> bool:
    return bool(_LOW.search(kernel_name))


def is_tensor_core(kernel_name: str) -> bool:
    return bool(_LOW.search(kernel_name) or _TENSOR_CORE.search(kernel_name))


def analyze_precision(table: EventTable, gpu: GpuActivity, top: int = 5) -> Precision:
    """Share of GEMM and convolution kernel time in low-precision and tensor-core kernels."""
    gemm = classify.CLASS_INDEX[classify.GEMM]
    conv = classify.CLASS_INDEX[classify.CONVOLUTION]
    sel = (gpu.klass == gemm) | (gpu.klass == conv)
    rows = gpu.row[sel]
    dur = table.dur_ns[rows]
    is_gemm = gpu.klass[sel] == gemm
    uniq, inverse = np.unique(table.name[rows], return_inverse=True)
    inverse = inverse.reshape(-1)
    low_lut = np.array([is_low_precision(table.names[int(u)]) for u in uniq], dtype=bool)
    tc_lut = np.array([is_tensor_core(table.names[int(u)]) for u in uniq], dtype=bool)
    low = low_lut[inverse] if len(uniq) else np.zeros(0, dtype=bool)
    tensor = tc_lut[inverse] if len(uniq) else np.zeros(0, dtype=bool)
    simt = ~tensor
    simt_top = _top(table, uniq, inverse, dur, simt, top)
    gemm_top = _top(table, uniq, inverse, dur, simt & is_gemm, top)
    return Precision(
        eligible_ns=int(dur.sum()),
        low_precision_ns=int(dur[low].sum()),
        tensor_core_ns=int(dur[tensor].sum()),
        fp32_simt_ns=int(dur[simt].sum()),
        gemm_ns=int(dur[is_gemm].sum()),
        gemm_fp32_simt_ns=int(dur[is_gemm & simt].sum()),
        fp32_simt_top=simt_top,
        gemm_fp32_simt_top=gemm_top,
    )


def _top(table: EventTable, uniq: np.ndarray, inverse: np.ndarray, dur: np.ndarray,
         mask: np.ndarray, top: int) -> tuple[tuple[str, int], ...]:
    """The ``top`` kernel names by total time among the rows in ``mask``."""
    if not len(uniq):
        return ()
    totals = np.rint(np.bincount(inverse[mask], weights=dur[mask], minlength=len(uniq)))
    order = np.argsort(-totals, kind="stable")[:top]
    return tuple((table.names[int(uniq[i])], int(totals[i])) for i in order.tolist()
                 if totals[i] > 0)
