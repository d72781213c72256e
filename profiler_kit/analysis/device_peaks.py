"""Peak dense compute and memory bandwidth of common GPUs, matched from ``deviceProperties`` names.

Every figure is the vendor's own, from the document named beside it, without
sparsity (NVIDIA and AMD print "with sparsity" figures at twice the dense rate;
those are halved here). ``matrix_tflops`` are tensor-core / matrix-core rates per
dtype; ``vector_tflops`` the plain FP32/FP64 rates (what an fp32 op gets when TF32 is
not in use, and what elementwise work runs on). Memory bandwidth is in bytes/s.
A GPU not in the table gets rates without "% of peak", and the analysis says so.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

T = 1e12


class DevicePeak(msgspec.Struct, frozen=True):
    name: str  # the table's name for the part ("H100 SXM")
    memory_bytes_per_s: float
    fp32_flops_per_s: float  # vector (CUDA core / SIMD) FP32
    fp64_flops_per_s: float | None
    # dense matrix (tensor-core / matrix-core) peaks by dtype: tf32, fp16, bf16, fp8, fp64
    matrix_flops_per_s: dict[str, float]
    source: str


def _peak(name: str, tb_s: float, vector_fp32: float, vector_fp64: float | None, source: str,
          **matrix: float) -> DevicePeak:
    """Figures as datasheets print them: TB/s and TFLOP/s."""
    return DevicePeak(name, tb_s * T, vector_fp32 * T,
                      vector_fp64 * T if vector_fp64 is not None else None,
                      {k: v * T for k, v in matrix.items()}, source)


# (pattern on the lower-cased deviceProperties name, minimum memory in GiB or 0, peak)
# Ordered: the first match wins (so "a100 ... 80gb" comes before "a100").
_V100 = ("NVIDIA V100 datasheet (volta-v100-datasheet-update-us-1165301-r5), "
         "https://images.nvidia.com/content/technologies/volta/pdf/"
         "volta-v100-datasheet-update-us-1165301-r5.pdf")
_A100 = ("NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web), "
         "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
         "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_H100 = ("NVIDIA H100 Tensor Core GPU datasheet, "
         "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet")
_H200 = ("NVIDIA H200 Tensor Core GPU datasheet, "
         "https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446")
_B200 = ("NVIDIA HGX B200 specifications (8-GPU figures divided by 8), "
         "https://www.nvidia.com/en-us/data-center/hgx/")
_L4 = ("NVIDIA L4 Tensor Core GPU datasheet, "
       "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet")
_L40S = ("NVIDIA L40S datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413")
_ADA = ("NVIDIA Ada Lovelace GPU architecture whitepaper v2.1, appendix A, table 2 "
        "(GeForce RTX 4090; tensor rates with FP32 accumulate, as PyTorch uses), "
        "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf")
_MI210 = ("AMD Instinct MI210 specifications, "
          "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html")
_MI250 = ("AMD Instinct MI250 / MI250X specifications, "
          "https://www.amd.com/en/products/accelerators/instinct/mi200.html")
_MI300 = ("AMD Instinct MI300X data sheet, "
          "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
          "amd-instinct-mi300x-data-sheet.pdf")
_MI325 = ("AMD Instinct MI325X data sheet, "
          "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/product-briefs/"
          "instinct-mi325x-datasheet.pdf")

TABLE: tuple[tuple[re.Pattern[str], float, DevicePeak], ...] = tuple(
    (re.compile(p), gib, peak) for p, gib, peak in (
        # NVIDIA data center: memory TB/s, FP32, FP64, then dense tensor-core TFLOP/s
        (r"v100.*(pcie|pci-e)", 0, _peak("V100 PCIe", 0.9, 14.0, 7.0, _V100, fp16=112.0)),
        (r"v100", 0, _peak("V100 SXM2", 0.9, 15.7, 7.8, _V100, fp16=125.0)),
        (r"a100.*(pcie|pci-e)", 70, _peak("A100 80GB PCIe", 1.935, 19.5, 9.7, _A100,
                                          fp64=19.5, tf32=156.0, fp16=312.0, bf16=312.0)),
        (r"a100.*(pcie|pci-e)", 0, _peak("A100 40GB PCIe", 1.555, 19.5, 9.7, _A100,
                                         fp64=19.5, tf32=156.0, fp16=312.0, bf16=312.0)),
        (r"a100", 70, _peak("A100 80GB SXM", 2.039, 19.5, 9.7, _A100,
                            fp64=19.5, tf32=156.0, fp16=312.0, bf16=312.0)),
        (r"a100", 0, _peak("A100 40GB SXM", 1.555, 19.5, 9.7, _A100,
                           fp64=19.5, tf32=156.0, fp16=312.0, bf16=312.0)),
        (r"h100.*(pcie|pci-e)", 0, _peak("H100 PCIe", 2.0, 51.0, 26.0, _H100, fp64=51.0,
                                         tf32=378.0, fp16=756.0, bf16=756.0, fp8=1513.0)),
        (r"h100", 0, _peak("H100 SXM", 3.35, 67.0, 34.0, _H100, fp64=67.0, tf32=494.5,
                           fp16=989.5, bf16=989.5, fp8=1979.0)),
        (r"h200", 0, _peak("H200 SXM", 4.8, 67.0, 34.0, _H200, fp64=67.0, tf32=494.5,
                           fp16=989.5, bf16=989.5, fp8=1979.0)),
        (r"b200", 0, _peak("B200", 8.0, 75.0, 37.0, _B200, fp64=37.0, tf32=1125.0,
                           fp16=2250.0, bf16=2250.0, fp8=4500.0)),
        (r"l40s", 0, _peak("L40S", 0.864, 91.6, None, _L40S, tf32=183.0, fp16=362.05,
                           bf16=362.05, fp8=733.0)),
        (r"\bl4\b", 0, _peak("L4", 0.3, 30.3, None, _L4, tf32=60.0, fp16=121.0, bf16=121.0,
                             fp8=242.5)),
        (r"rtx 4090", 0, _peak("GeForce RTX 4090", 1.008, 82.6, None, _ADA, tf32=82.6,
                               fp16=165.2, bf16=165.2, fp8=330.3)),
        # AMD Instinct: memory TB/s, FP32 vector, FP64 vector, then dense matrix TFLOP/s
        (r"mi210", 0, _peak("MI210", 1.6384, 22.6, 22.6, _MI210, fp64=45.3, fp32=45.3,
                            fp16=181.0, bf16=181.0)),
        (r"mi250x", 0, _peak("MI250X", 3.2768, 47.9, 47.9, _MI250, fp64=95.7, fp32=95.7,
                             fp16=383.0, bf16=383.0)),
        (r"mi250", 0, _peak("MI250", 3.2768, 45.3, 45.3, _MI250, fp64=90.5, fp32=90.5,
                            fp16=362.1, bf16=362.1)),
        (r"mi325x", 0, _peak("MI325X", 6.0, 163.4, 81.7, _MI325, fp64=163.4, fp32=163.4,
                             tf32=653.7, fp16=1307.4, bf16=1307.4, fp8=2614.9)),
        (r"mi300x", 0, _peak("MI300X", 5.3, 163.4, 81.7, _MI300, fp64=163.4, fp32=163.4,
                             tf32=653.7, fp16=1307.4, bf16=1307.4, fp8=2614.9)),
    )
)


def match_device(name: str | None, memory_bytes: int | None = None) -> DevicePeak | None:
    """The table's entry for a ``deviceProperties`` name (None when not in the table)."""
    if not name:
        return None
    lower = name.lower()
    gib = (memory_bytes or 0) / 2**30
    for pattern, min_gib, peak in TABLE:
        if pattern.search(lower) and (not min_gib or gib >= min_gib):
            return peak
    return None


def device_of(props: list[dict[str, Any]]) -> tuple[str | None, DevicePeak | None]:
    """The first GPU's name in ``deviceProperties`` and its peaks (a trace's GPUs are alike)."""
    for p in props:
        name = p.get("name")
        if isinstance(name, str) and name:
            mem = p.get("totalGlobalMem")
            return name, match_device(name, mem if isinstance(mem, int) else None)
    return None, None


def compute_peak(peak: DevicePeak, dtype: str, matrix: bool, tf32: bool) -> float | None:
    """The peak a ``dtype`` op can reach: the dense matrix rate for matrix work (GEMM,
    convolution, attention) in 16 bits or fewer, TF32 for fp32 matrix work whose
    kernels use it, else the FP32 (or FP64) rate; elementwise work gets the vector rate."""
    m = peak.matrix_flops_per_s
    if dtype == "fp64":
        return m.get("fp64", peak.fp64_flops_per_s) if matrix else peak.fp64_flops_per_s
    if not matrix:
        return peak.fp32_flops_per_s
    if dtype in ("fp16", "bf16", "fp8"):
        # no fp8 (or bf16) units: those run at the next wider rate the part has
        for key in {"fp8": ("fp8", "fp16"), "bf16": ("bf16",), "fp16": ("fp16",)}[dtype]:
            if key in m:
                return m[key]
        return m.get("fp32", peak.fp32_flops_per_s)
    if dtype == "fp32":
        if tf32 and "tf32" in m:
            return m["tf32"]
        return m.get("fp32", peak.fp32_flops_per_s)
    return None
