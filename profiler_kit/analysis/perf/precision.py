"""Precision: how much GEMM and convolution time runs in reduced precision or on tensor cores.

Only kernels that do the GEMM or convolution count (``eligible``): kernels classed GEMM
or convolution whose own name is not a copy, transpose, reduction or helper (a layout
transpose or a split-K reduction inside a convolution or matmul does no matrix math).

The data type comes from the launching op's inputs (``Input type``, recorded with
shapes) when the trace has it, else from the kernel name: ``bf16``/``f16``/``half``/
``fp8``/... (reduced precision). Tensor/matrix cores: what the kernel's family says in
:data:`~profiler_kit.analysis.perf.tensor_cores.FAMILIES` (``s1688``/``tensorop``/``wgmma``/
``nvjet`` on NVIDIA, ``MFMA``/``xdlops``/``_MI16x16x1`` on AMD: yes; ``sgemm``/
``scudnn``/``ffma``/``gemv``, Tensile kernels without an MI token: no); where the name does
not say (Triton, unknown libraries), reduced precision counts as tensor cores, as such
GEMMs and convolutions run on them wherever they exist. ``fp32_simt`` is the time
neither in reduced precision nor on tensor cores: fp32 math on SIMT (CUDA) cores.
"""

from __future__ import annotations

import functools
import re

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.perf import tensor_cores
from profiler_kit.trace.table import INPUT_TYPE_SEP, Cat, EventTable

# Data types of 16 bits or fewer in kernel names: what autocast (AMP) gives.
_LOW = re.compile(
    r"bf16|fp16|f16|half|bfloat16|c10::Half|fp8|f8f8|e4m3|e5m2|int8|i8816|hgemm|"
    r"h884|h1688|h16816|_(?:HHS|BBS|HSS|BSS|B_BS|H_HS)_",
    re.IGNORECASE,
)
# Kernels classed GEMM/convolution by their op that do no matrix math themselves: cuDNN's
# offset computations (computeOffsetsKernel, computeWgradSplitKOffsetsKernel), split-K
# reductions (splitKreduce_kernel; a split-K convolution, ..._splitK_..., does the math),
# cuBLASLt epilogues, MIOpen's SubTensorOp.
_HELPER = re.compile(r"helper|compute\w*offsets|splitkreduce|epilogue|globalkernel|"
                     r"subtensorop", re.IGNORECASE)
# Floating-point types in ``Input type`` lists, and those of 16 bits or fewer.
_FLOAT_TYPE = re.compile(r"float|double|half|bfloat16|float8|complex", re.IGNORECASE)
_LOW_TYPE = re.compile(r"half|bfloat16|float8|qint8|quint8", re.IGNORECASE)
# Kernel-name classes that do the GEMM/convolution work (OTHER: a library kernel with an
# unreadable name, e.g. a mangled one).
_MATH_NAME_CLASSES = (classify.GEMM, classify.CONVOLUTION, classify.OTHER)

_VERDICT = {True: 1, False: 0, None: -1}

INPUT_TYPE = "input_type"
KERNEL_NAME = "kernel_name"


class Precision(msgspec.Struct, frozen=True):
    """GEMM + convolution kernel time, split by data type and instruction family."""

    eligible_ns: int  # GEMM + convolution kernels that do the math
    low_precision_ns: int  # 16-bit or narrower types (fp16, bf16, fp8, int8)
    # kernels whose family runs on tensor/matrix cores (tensor_cores.FAMILIES), and low
    # precision in kernels whose name does not say
    tensor_core_ns: int
    fp32_simt_ns: int  # eligible time neither low precision nor on tensor cores
    gemm_ns: int
    gemm_fp32_simt_ns: int  # GEMM kernels neither low precision nor on tensor cores
    fp32_simt_top: tuple[tuple[str, int], ...]  # (kernel name, total ns), largest first
    gemm_fp32_simt_top: tuple[tuple[str, int], ...]  # the same, GEMM kernels only
    # where the data type came from: eligible time typed from the launching op's
    # ``Input type`` and from kernel names; ``source`` names the one used, or "mixed"
    from_input_type_ns: int = 0
    from_kernel_name_ns: int = 0
    source: str = "none"  # "input_type", "kernel_name", "mixed", "none" (no eligible time)
    # eligible time whose kernel name alone says tensor cores: its family does, or (no
    # family) it names a 16-bit type; the TensorBoard plugin's kind of count, for comparison
    tensor_core_by_name_ns: int = 0
    # GEMM/convolution-class time left out: transposes, copies, reductions and helpers
    excluded_ns: int = 0

    @property
    def low_precision_share(self) -> float | None:
        return self.low_precision_ns / self.eligible_ns if self.eligible_ns else None

    @property
    def tensor_core_share(self) -> float | None:
        return self.tensor_core_ns / self.eligible_ns if self.eligible_ns else None


@functools.lru_cache(maxsize=8192)
def is_low_precision(kernel_name: str) -> bool:
    """The name says 16 bits or fewer (cached: a trace asks again for the same names, and
    templated names run to thousands of characters)."""
    return bool(_LOW.search(kernel_name[:classify.PARSE_CHARS]))


def is_tensor_core(kernel_name: str) -> bool:
    """From the name alone: the kernel's family runs on tensor/matrix cores, or (a name
    no family row decides) it names a 16-bit or narrower type."""
    verdict = tensor_cores.uses_tensor_cores(kernel_name)
    return is_low_precision(kernel_name) if verdict is None else verdict


def tf32_kernel(kernel_name: str) -> bool:
    """Whether fp32 matrix math on this kernel runs as TF32 on tensor cores: its family
    says so (CUTLASS ``tensorop_s1688``, cuDNN/cuBLAS ``xmma ... tf32f32``, ``nvjet``,
    Hopper ``wgmma``) and the name has no 16-bit type (``h1688``, ``bf16_s1688``: those
    inputs are not fp32). FFMA kernels (``..._ffma``), SIMT ``sgemm`` and AMD MFMA (fp32
    stays fp32 there) are not."""
    row = tensor_cores.family_of(kernel_name)
    return row is not None and bool(row.tensor_core) and row.tf32 \
        and not is_low_precision(kernel_name)


def names_tensor_core_family(kernel_name: str) -> bool:
    """The kernel's family, in :data:`tensor_cores.FAMILIES`, runs on tensor cores."""
    return tensor_cores.uses_tensor_cores(kernel_name) is True


def input_dtype_is_low(types: str) -> bool | None:
    """From one op's interned ``Input type``: True when a floating input is 16-bit or
    narrower, False when its floating inputs are all wider, None when it has none."""
    floats = [t for t in types.split(INPUT_TYPE_SEP) if _FLOAT_TYPE.search(t)]
    if not floats:
        return None
    return any(_LOW_TYPE.search(t) for t in floats)


def eligible_mask(table: EventTable, gpu: GpuActivity) -> np.ndarray:
    """GPU activities that do GEMM or convolution math (see the module docstring)."""
    gemm = classify.CLASS_INDEX[classify.GEMM]
    conv = classify.CLASS_INDEX[classify.CONVOLUTION]
    math_names = np.array([classify.CLASS_INDEX[c] for c in _MATH_NAME_CLASSES], dtype=np.int8)
    sel = ((gpu.klass == gemm) | (gpu.klass == conv)) & np.isin(gpu.name_klass, math_names)
    sel &= table.cat[gpu.row] == Cat.KERNEL
    if sel.any():
        ids = table.name[gpu.row[sel]]
        uniq, inverse = dense_ids(ids)
        helper = np.array([bool(_HELPER.search(table.names[int(u)][:classify.MATCH_CHARS]))
                           for u in uniq], dtype=bool)
        idx = np.flatnonzero(sel)
        sel[idx[helper[inverse.reshape(-1)]]] = False
    return sel


def analyze_precision(table: EventTable, gpu: GpuActivity, top: int = 5) -> Precision:
    """Share of GEMM and convolution kernel time in low precision and on tensor cores."""
    gemm = classify.CLASS_INDEX[classify.GEMM]
    conv = classify.CLASS_INDEX[classify.CONVOLUTION]
    sel = eligible_mask(table, gpu)
    classed = ((gpu.klass == gemm) | (gpu.klass == conv)) & (table.cat[gpu.row] == Cat.KERNEL)
    excluded = int(table.dur_ns[gpu.row[classed & ~sel]].sum())
    rows = gpu.row[sel]
    dur = table.dur_ns[rows]
    is_gemm = gpu.klass[sel] == gemm
    uniq, inverse = dense_ids(table.name[rows])
    inverse = inverse.reshape(-1)
    name_low = np.array([is_low_precision(table.names[int(u)]) for u in uniq], dtype=bool)
    # per name: 1 its family runs on tensor cores, 0 it does not, -1 the name does not say
    verdict = np.array([_VERDICT[tensor_cores.uses_tensor_cores(table.names[int(u)])]
                        for u in uniq], dtype=np.int8)
    low = name_low[inverse] if len(uniq) else np.zeros(0, dtype=bool)
    says = verdict[inverse] if len(uniq) else np.zeros(0, dtype=np.int8)
    typed = _low_from_input_types(table, gpu.op_row[sel])
    from_types = typed >= 0
    low = np.where(from_types, typed == 1, low)
    tensor = np.where(says < 0, low, says == 1)
    simt = ~tensor & ~low
    from_types_ns = int(dur[from_types].sum())
    from_names_ns = int(dur[~from_types].sum())
    if not len(dur) or int(dur.sum()) == 0:
        source = "none"
    elif from_names_ns == 0:
        source = INPUT_TYPE
    elif from_types_ns == 0:
        source = KERNEL_NAME
    else:
        source = "mixed"
    return Precision(
        eligible_ns=int(dur.sum()),
        low_precision_ns=int(dur[low].sum()),
        tensor_core_ns=int(dur[tensor].sum()),
        fp32_simt_ns=int(dur[simt].sum()),
        gemm_ns=int(dur[is_gemm].sum()),
        gemm_fp32_simt_ns=int(dur[is_gemm & simt].sum()),
        fp32_simt_top=_top(table, uniq, inverse, dur, simt, top),
        gemm_fp32_simt_top=_top(table, uniq, inverse, dur, simt & is_gemm, top),
        from_input_type_ns=from_types_ns,
        from_kernel_name_ns=from_names_ns,
        source=source,
        tensor_core_by_name_ns=int(dur[(says == 1) | ((says < 0) & (
            name_low[inverse] if len(uniq) else low))].sum()),
        excluded_ns=excluded,
    )


def _low_from_input_types(table: EventTable, op_rows: np.ndarray) -> np.ndarray:
    """Per activity: 1 when its op's inputs are 16-bit or narrower, 0 when wider, -1 when
    the op recorded no floating ``Input type`` (then the kernel name decides)."""
    out = np.full(len(op_rows), -1, dtype=np.int8)
    if table.input_type is None or not len(op_rows):
        return out
    linked = op_rows >= 0
    types = np.full(len(op_rows), -1, dtype=np.int64)
    types[linked] = table.input_type[op_rows[linked]]
    has = types >= 0
    if not has.any():
        return out
    uniq, inverse = dense_ids(types[has])
    lut = np.array([{None: -1, False: 0, True: 1}[input_dtype_is_low(table.names[int(u)])]
                    for u in uniq], dtype=np.int8)
    out[has] = lut[inverse.reshape(-1)]
    return out


def _top(table: EventTable, uniq: np.ndarray, inverse: np.ndarray, dur: np.ndarray,
         mask: np.ndarray, top: int) -> tuple[tuple[str, int], ...]:
    """The ``top`` kernel names by total time among the rows in ``mask``."""
    if not len(uniq):
        return ()
    totals = np.rint(np.bincount(inverse[mask], weights=dur[mask], minlength=len(uniq)))
    order = np.argsort(-totals, kind="stable")[:top]
    return tuple((table.names[int(uniq[i])], int(totals[i])) for i in order.tolist()
                 if totals[i] > 0)
