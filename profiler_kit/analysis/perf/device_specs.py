"""Peak dense compute and memory bandwidth of common GPUs, matched from the device's name.

Every figure is the vendor's own, from the document named in its ``source``, without
sparsity (NVIDIA and AMD print "with sparsity" figures at twice the dense rate; those
are halved here). ``matrix_flops_per_s`` are tensor-core / matrix-core rates per dtype
(NVIDIA GeForce parts: with FP32 accumulate, as PyTorch runs them); ``fp32_flops_per_s``
and ``fp64_flops_per_s`` the plain vector rates (CUDA cores / SIMD: what an fp32 op gets
without TF32, and what elementwise work runs on); ``int8_ops_per_s`` the dense INT8
tensor rate. Memory bandwidth is in bytes/s.

Names: :data:`NAMES` lists each part under the words its name is printed with, as
``deviceProperties`` (cudaGetDeviceProperties / hipGetDeviceProperties) and ``nvidia-smi``
print them. A name matches an entry when it holds all the entry's words and nothing else
but a vendor word (``NVIDIA``, ``Tesla``, ``GeForce``, ``AMD Instinct``), a memory size
(``80GB``), a memory type (``HBM3``), ``SXM<n>`` or ``VF``; the entry with the longest words
wins. So ``NVIDIA GH200 480GB`` is a GH200 (``H200`` is no word of it), ``NVIDIA H100
PCIe`` the PCIe part and ``NVIDIA H100 80GB HBM3`` the SXM one, while ``NVIDIA H100 NVL``,
``NVIDIA L40`` or ``GeForce RTX 3090 Ti`` match nothing: a part not in the table gets no
peaks (never another part's) and one note says so.

AMD parts whose ``deviceProperties`` has no name, or the generic ``AMD Radeon Graphics``,
are recognised from the gfx target in their kernels' names (Tensile's ``ISA942``, ``gfx942``):
:data:`AMD_TARGETS`, refined by the CU count where the trace records it; the note says the
part was inferred. An MI250X or MI250 shows PyTorch each of its two GCDs as one device:
their figures here are one GCD's, the datasheet's package figures halved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import msgspec

from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.trace.table import Cat, EventTable

T = 1e12


class DevicePeak(msgspec.Struct, frozen=True):
    name: str  # the table's name for the part ("H100 SXM")
    memory_bytes_per_s: float
    fp32_flops_per_s: float  # vector (CUDA core / SIMD) FP32
    fp64_flops_per_s: float | None
    # dense matrix (tensor-core / matrix-core) peaks by dtype: tf32, fp16, bf16, fp8, fp32,
    # fp64, where the part has them
    matrix_flops_per_s: dict[str, float]
    source: str
    int8_ops_per_s: float | None = None  # dense INT8 tensor / matrix-core rate


class Device(msgspec.Struct, frozen=True):
    """The trace's GPU: its name as recorded, the table's peaks for it, and one note when
    the peaks are withheld or were inferred."""

    name: str | None  # deviceProperties name (None when the trace records none)
    peak: DevicePeak | None
    note: Note | None = None


def _peak(name: str, tb_s: float, vector_fp32: float, vector_fp64: float | None, source: str,
          int8: float | None = None, **matrix: float) -> DevicePeak:
    """Figures as datasheets print them: TB/s, TFLOP/s and TOPS."""
    return DevicePeak(name, tb_s * T, vector_fp32 * T,
                      vector_fp64 * T if vector_fp64 is not None else None,
                      {k: v * T for k, v in matrix.items()}, source,
                      int8 * T if int8 is not None else None)


def _gcd(package: DevicePeak, name: str) -> DevicePeak:
    """One GCD of a two-GCD package: every figure halved."""
    return DevicePeak(name, package.memory_bytes_per_s / 2, package.fp32_flops_per_s / 2,
                      package.fp64_flops_per_s / 2 if package.fp64_flops_per_s else None,
                      {k: v / 2 for k, v in package.matrix_flops_per_s.items()},
                      package.source + " (package figures halved: one of its two GCDs, "
                      "as PyTorch sees it)",
                      package.int8_ops_per_s / 2 if package.int8_ops_per_s else None)


_V100 = ("NVIDIA V100 Tensor Core GPU datasheet (volta-v100-datasheet-update-us-1165301-r5), "
         "https://images.nvidia.com/content/technologies/volta/pdf/"
         "volta-v100-datasheet-update-us-1165301-r5.pdf")
_T4 = ("NVIDIA T4 Tensor Core GPU datasheet, "
       "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
       "t4-tensor-core-datasheet-951643.pdf")
_TURING = ("NVIDIA Turing GPU architecture whitepaper (WP-09183-001), table 1, GeForce RTX "
           "2080 Ti reference board (tensor rates with FP32 accumulate), "
           "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/"
           "technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf")
_GA102 = ("NVIDIA Ampere GA102 GPU architecture whitepaper v2.0 (GeForce RTX 3090: appendix A, "
          "tensor rates with FP32 accumulate; RTX A6000: appendix C), "
          "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-"
          "whitepaper-v2.pdf")
_A10 = ("NVIDIA A10 Tensor Core GPU datasheet, "
        "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/"
        "a10-datasheet.pdf")
_A10G = ("NVIDIA A10G (AWS EC2 G5): NVIDIA publishes no datasheet; figures as compiled in "
         "Baseten, 'NVIDIA A10 vs A10G for ML model inference', "
         "https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/")
_A100 = ("NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web), "
         "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
         "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_L4 = ("NVIDIA L4 Tensor Core GPU datasheet, "
       "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet")
_L40S = "NVIDIA L40S datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
_ADA = ("NVIDIA Ada Lovelace GPU architecture whitepaper v2.1, appendix A, table 2 "
        "(GeForce RTX 4090; tensor rates with FP32 accumulate), "
        "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf")
_H100 = ("NVIDIA H100 Tensor Core GPU datasheet, "
         "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet")
_H200 = ("NVIDIA H200 Tensor Core GPU datasheet, "
         "https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446")
_GH200 = ("NVIDIA GH200 Grace Hopper Superchip datasheet, "
          "https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip")
_B200 = ("NVIDIA HGX B200 specifications (8-GPU figures divided by 8), "
         "https://www.nvidia.com/en-us/data-center/hgx/")
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

# NVIDIA: memory TB/s, vector FP32, vector FP64 (None: not on the datasheet), then dense
# tensor-core TFLOP/s by dtype and INT8 TOPS
V100_SXM2 = _peak("V100 SXM2", 0.9, 15.7, 7.8, _V100, fp16=125.0)
V100_PCIE = _peak("V100 PCIe", 0.9, 14.0, 7.0, _V100, fp16=112.0)
V100S_PCIE = _peak("V100S PCIe", 1.134, 16.4, 8.2, _V100, fp16=130.0)
T4 = _peak("T4", 0.32, 8.1, None, _T4, int8=130.0, fp16=65.0)
RTX_2080_TI = _peak("GeForce RTX 2080 Ti", 0.616, 13.4, None, _TURING, int8=215.2, fp16=53.8)
RTX_3090 = _peak("GeForce RTX 3090", 0.936, 35.6, None, _GA102, int8=284.0, tf32=35.6,
                 fp16=71.0, bf16=71.0)
RTX_A6000 = _peak("RTX A6000", 0.768, 38.7, None, _GA102, int8=309.7, tf32=77.4,
                  fp16=154.8, bf16=154.8)
RTX_4090 = _peak("GeForce RTX 4090", 1.008, 82.6, None, _ADA, int8=660.6, tf32=82.6,
                 fp16=165.2, bf16=165.2, fp8=330.3)
A10 = _peak("A10", 0.6, 31.2, None, _A10, int8=250.0, tf32=62.5, fp16=125.0, bf16=125.0)
A10G = _peak("A10G", 0.6, 35.0, None, _A10G, int8=140.0, tf32=35.0, fp16=70.0, bf16=70.0)
A100_40_SXM = _peak("A100 40GB SXM", 1.555, 19.5, 9.7, _A100, int8=624.0, fp64=19.5,
                    tf32=156.0, fp16=312.0, bf16=312.0)
A100_80_SXM = _peak("A100 80GB SXM", 2.039, 19.5, 9.7, _A100, int8=624.0, fp64=19.5,
                    tf32=156.0, fp16=312.0, bf16=312.0)
A100_40_PCIE = _peak("A100 40GB PCIe", 1.555, 19.5, 9.7, _A100, int8=624.0, fp64=19.5,
                     tf32=156.0, fp16=312.0, bf16=312.0)
A100_80_PCIE = _peak("A100 80GB PCIe", 1.935, 19.5, 9.7, _A100, int8=624.0, fp64=19.5,
                     tf32=156.0, fp16=312.0, bf16=312.0)
L4 = _peak("L4", 0.3, 30.3, None, _L4, int8=242.5, tf32=60.0, fp16=121.0, bf16=121.0,
           fp8=242.5)
L40S = _peak("L40S", 0.864, 91.6, None, _L40S, int8=733.0, tf32=183.0, fp16=362.05,
             bf16=362.05, fp8=733.0)
H100_PCIE = _peak("H100 PCIe", 2.0, 51.0, 26.0, _H100, int8=1513.0, fp64=51.0, tf32=378.0,
                  fp16=756.5, bf16=756.5, fp8=1513.0)
H100_SXM = _peak("H100 SXM", 3.35, 67.0, 34.0, _H100, int8=1979.0, fp64=67.0, tf32=494.5,
                 fp16=989.5, bf16=989.5, fp8=1979.0)
H200_SXM = _peak("H200 SXM", 4.8, 67.0, 34.0, _H200, int8=1979.0, fp64=67.0, tf32=494.5,
                 fp16=989.5, bf16=989.5, fp8=1979.0)
GH200_96 = _peak("GH200 (96GB HBM3)", 4.0, 67.0, 34.0, _GH200, int8=1979.0, fp64=67.0,
                 tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979.0)
GH200_144 = _peak("GH200 (144GB HBM3e)", 4.9, 67.0, 34.0, _GH200, int8=1979.0, fp64=67.0,
                  tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979.0)
B200 = _peak("B200", 8.0, 75.0, 37.0, _B200, int8=4500.0, fp64=37.0, tf32=1125.0,
             fp16=2250.0, bf16=2250.0, fp8=4500.0)
# AMD Instinct: memory TB/s, vector FP32, vector FP64, then dense matrix TFLOP/s, INT8 TOPS
MI210 = _peak("MI210", 1.6384, 22.6, 22.6, _MI210, int8=181.0, fp64=45.3, fp32=45.3,
              fp16=181.0, bf16=181.0)
MI250X = _gcd(_peak("MI250X", 3.2768, 47.9, 47.9, _MI250, int8=383.0, fp64=95.7, fp32=95.7,
                    fp16=383.0, bf16=383.0), "MI250X (one GCD)")
MI250 = _gcd(_peak("MI250", 3.2768, 45.3, 45.3, _MI250, int8=362.1, fp64=90.5, fp32=90.5,
                   fp16=362.1, bf16=362.1), "MI250 (one GCD)")
MI300X = _peak("MI300X", 5.3, 163.4, 81.7, _MI300, int8=2614.9, fp64=163.4, fp32=163.4,
               tf32=653.7, fp16=1307.4, bf16=1307.4, fp8=2614.9)
MI325X = _peak("MI325X", 6.0, 163.4, 81.7, _MI325, int8=2614.9, fp64=163.4, fp32=163.4,
               tf32=653.7, fp16=1307.4, bf16=1307.4, fp8=2614.9)


class Name(NamedTuple):
    words: frozenset[str]  # the words of the printed name that pick this part
    peak: DevicePeak
    min_gib: float = 0  # deviceProperties totalGlobalMem at least this many GiB
    cus: int | None = None  # deviceProperties numSms (SMs / CUs) exactly this


def _name(words: str, peak: DevicePeak, min_gib: float = 0, cus: int | None = None) -> Name:
    return Name(frozenset(words.lower().split()), peak, min_gib, cus)


# Each part under the words of its printed names (deviceProperties, nvidia-smi, rocm-smi).
NAMES: tuple[Name, ...] = (
    _name("V100", V100_SXM2),  # Tesla V100-SXM2-16GB, Tesla V100-SXM2-32GB
    _name("V100 DGXS", V100_SXM2),  # Tesla V100-DGXS-32GB: DGX Station's SXM2 modules
    _name("V100 PCIE", V100_PCIE),  # Tesla V100-PCIE-16GB, -32GB
    _name("V100S PCIE", V100S_PCIE),  # Tesla V100S-PCIE-32GB
    _name("T4", T4),  # Tesla T4
    _name("RTX 2080 Ti", RTX_2080_TI),  # NVIDIA GeForce RTX 2080 Ti
    _name("RTX 3090", RTX_3090),  # NVIDIA GeForce RTX 3090
    _name("RTX 4090", RTX_4090),  # NVIDIA GeForce RTX 4090
    _name("RTX A6000", RTX_A6000),  # NVIDIA RTX A6000
    _name("A10", A10),  # NVIDIA A10
    _name("A10G", A10G),  # NVIDIA A10G
    _name("A100", A100_80_SXM, min_gib=70),  # NVIDIA A100-SXM4-80GB
    _name("A100", A100_40_SXM),  # NVIDIA A100-SXM4-40GB
    _name("A100 80GB", A100_80_SXM),
    _name("A100 40GB", A100_40_SXM),
    _name("A100 PG509 200", A100_80_SXM, min_gib=70),  # NVIDIA A100-PG509-200 (SXM4)
    _name("A100 PG509 200", A100_40_SXM),
    _name("A100 PCIE", A100_80_PCIE, min_gib=70),  # NVIDIA A100 80GB PCIe
    _name("A100 PCIE", A100_40_PCIE),  # NVIDIA A100-PCIE-40GB
    _name("A100 PCIE 80GB", A100_80_PCIE),
    _name("A100 PCIE 40GB", A100_40_PCIE),
    _name("L4", L4),  # NVIDIA L4
    _name("L40S", L40S),  # NVIDIA L40S
    _name("H100", H100_SXM),  # NVIDIA H100 80GB HBM3
    _name("H100 PCIE", H100_PCIE),  # NVIDIA H100 PCIe
    _name("H200", H200_SXM),  # NVIDIA H200
    _name("GH200", GH200_144, min_gib=120),  # NVIDIA GH200 144G HBM3e
    _name("GH200", GH200_96),  # NVIDIA GH200 480GB (480 GB: the Grace memory and HBM3)
    _name("GH200 HBM3e", GH200_144),
    _name("GH200 144G", GH200_144),
    _name("B200", B200),  # NVIDIA B200
    _name("MI210", MI210),  # AMD Instinct MI210
    _name("MI250X", MI250X),  # AMD Instinct MI250X
    _name("MI250", MI250),  # AMD Instinct MI250
    # AMD Instinct MI250X/MI250: one name for both; the GCD's CU count tells them apart
    _name("MI250X MI250", MI250X, cus=110),
    _name("MI250X MI250", MI250, cus=104),
    _name("MI300X", MI300X),  # AMD Instinct MI300X, AMD Instinct MI300X VF
    _name("MI325X", MI325X),  # AMD Instinct MI325X
)

# Words a printed name may hold besides an entry's: vendor and product-line words, memory
# size and type, the SXM form factor (the parts' default) and SR-IOV's VF.
_NOISE = re.compile(r"nvidia|tesla|geforce|quadro|amd|instinct|\d+(?:gb|g|gib)|"
                    r"hbm\d*e?|gddr\d+x?|sxm\d*|vf")
_SPLIT = re.compile(r"[\s/_,()-]+")

# Names that do not name the part: the kernels' gfx target decides (AMD_TARGETS).
GENERIC_NAMES = frozenset({"amd radeon graphics"})


class Target(NamedTuple):
    gfx: str  # gfx target as in kernel names ("gfx942")
    cus: int | None  # deviceProperties numSms; None: the trace records none
    min_gib: float
    peak: DevicePeak


# AMD parts by the gfx target in their kernel names (and the CU count where recorded).
AMD_TARGETS: tuple[Target, ...] = (
    Target("gfx942", 304, 200, MI325X),
    Target("gfx942", 304, 0, MI300X),
    Target("gfx942", None, 0, MI300X),  # MI300-class; MI325X has the same compute
    Target("gfx90a", 110, 0, MI250X),
    Target("gfx90a", 104, 0, MI250),  # one MI250 GCD; an MI210 has the same peaks
)
# gfx targets in kernel names: Tensile's ``_ISA942_`` / ``_ISA90a_``, or ``gfx942``
_GFX = re.compile(r"(?:^|_)isa(9\d[0-9a-f]|1[0-2]\d\d)(?:_|$)|gfx(9\d[0-9a-f]|1[0-2]\d\d)")
_MFMA = re.compile(r"_mi\d+x\d+x\d+|mfma|xdlops")


def _words(name: str) -> set[str]:
    return {w for w in _SPLIT.split(name.lower()) if w}


def match_device(name: str | None, memory_bytes: int | None = None,
                 cus: int | None = None) -> DevicePeak | None:
    """The table's part for a printed device name (None when none matches): the entry
    whose words are all in the name, with nothing left but noise words, longest first."""
    if not name:
        return None
    words = _words(name)
    gib = (memory_bytes or 0) / 2**30
    best: tuple[tuple[int, float], DevicePeak] | None = None
    for entry in NAMES:
        if not entry.words <= words:
            continue
        if any(not _NOISE.fullmatch(w) for w in words - entry.words):
            continue
        if entry.min_gib and gib < entry.min_gib:
            continue
        if entry.cus is not None and cus != entry.cus:
            continue
        rank = (sum(map(len, entry.words)), entry.min_gib)
        if best is None or rank > best[0]:
            best = (rank, entry.peak)
    return best[1] if best else None


def _first_gpu(props: list[dict[str, Any]]) -> tuple[str | None, int | None, int | None]:
    """Name, totalGlobalMem and numSms of the first GPU (a trace's GPUs are alike)."""
    for p in props:
        name = p.get("name")
        mem, cus = p.get("totalGlobalMem"), p.get("numSms")
        return (name if isinstance(name, str) and name else None,
                mem if isinstance(mem, int) else None, cus if isinstance(cus, int) else None)
    return None, None, None


def identify(props: list[dict[str, Any]], kernel_names: Iterable[str]) -> Device:
    """The trace's GPU and its peaks: by the ``deviceProperties`` name, else (no name, or
    a generic AMD one) an AMD part by the gfx target in ``kernel_names``."""
    name, mem, cus = _first_gpu(props)
    if name is not None and name.lower() not in GENERIC_NAMES:
        peak = match_device(name, mem, cus)
        if peak is not None:
            return Device(name, peak)
        return Device(name, None, note("device_not_in_peak_table", name=name,
                                       amd_matrix_kernels=False))
    targets, mfma = _targets(kernel_names)
    if not targets:
        return Device(name, None, note("device_not_in_peak_table", name=name,
                                       amd_matrix_kernels=mfma) if name else
                      note("device_unnamed", has_properties=bool(props), amd_matrix_kernels=mfma))
    gfx = sorted(targets)[0]
    gib = (mem or 0) / 2**30
    for t in AMD_TARGETS:
        if t.gfx == gfx and t.cus == cus and gib >= t.min_gib:
            return Device(name, t.peak, note("device_inferred_from_target", name=name,
                                             has_properties=bool(props), part=t.peak.name,
                                             gfx=gfx))
    return Device(name, None, note("device_target_not_in_peak_table", name=name,
                                   has_properties=bool(props), gfx=gfx))


def device_of_table(table: EventTable) -> tuple[str | None, DevicePeak | None, Note | None]:
    """:func:`identify` on a trace: its ``deviceProperties`` and its kernels' names; the
    GPU's name, its peaks, and the one note to show when the trace ran GPU work."""
    ids = distinct(table.name[table.cat == Cat.KERNEL])
    d = identify(table.meta.device_properties, (table.names[int(i)] for i in ids))
    return d.name, d.peak, d.note


def _targets(kernel_names: Iterable[str]) -> tuple[set[str], bool]:
    """The gfx targets named in kernel names, and whether any names an MFMA kernel."""
    found: set[str] = set()
    mfma = False
    for n in kernel_names:
        low = n[:2000].lower()
        for m in _GFX.finditer(low):
            found.add("gfx" + (m.group(1) or m.group(2)))
        mfma = mfma or bool(_MFMA.search(low))
    return found, mfma


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
    if dtype == "int8":
        return peak.int8_ops_per_s
    return None
