"""Tensor cores recognised from the kernel families that use them (the table
``tensor_cores.FAMILIES``): real kernel names with their expected class, reduced
precision, tensor-core use and whether fp32 work on them is TF32, for NVIDIA sm70 to sm100
and AMD MI200/MI300; then the precision breakdown and the MFU peak of real traces,
which follow the table. The TensorBoard plugin's own list is the reference where it has
an opinion."""

from __future__ import annotations

import functools
import gzip
import json
import re
from pathlib import Path

import pytest

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.perf.precision import (
    analyze_precision,
    eligible_mask,
    is_low_precision,
    is_tensor_core,
    tf32_kernel,
)
from profiler_kit.analysis.perf.roofline import analyze_roofline
from profiler_kit.analysis.perf.tensor_cores import FAMILIES, family_of
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"


@functools.cache
def kernel_names(trace: str) -> frozenset[str]:
    with gzip.open(DATA / f"{trace}.json.gz", "rt") as fh:
        return frozenset(e["name"] for e in json.load(fh)["traceEvents"]
                         if e.get("cat") in ("kernel", "Kernel"))


def real(trace: str, prefix: str, contains: str = "") -> str:
    """The (first, sorted) kernel name of ``trace`` that starts with ``prefix``: the long
    library names are written in full only in the trace."""
    return sorted(n for n in kernel_names(trace) if n.startswith(prefix) and contains in n)[0]


# cuDNN's CUTLASS weight-gradient convolution on an A100 (mangled, 1644 characters): its
# operands are ``cutlass::tfloat32_t`` and its tile a ``TensorOp`` one
A100_CUDNN_WGRAD = real("a100_ddp_nccl_rank0", "_ZN19cutlass_cudnn_train",
                        "GemmShapeILi128ELi128ELi32")

# (trace it comes from, kernel name, class, 16-bit or narrower, tensor cores, TF32 for fp32)
KERNELS = [
    # --- NVIDIA sm70 (V100): SIMT sgemm and cuDNN scudnn / Winograd / implicit-GEMM
    ("v100_resnet50_train", "volta_sgemm_64x64_nt", "gemm", False, False, False),
    ("v100_resnet50_train", "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1",
     "convolution", False, False, False),
    ("v100_resnet50_train", "void cudnn::winograd_nonfused::winogradForwardData4x4<float, "
     "float>(cudnn::winograd_nonfused::WinogradDataParams<float, float>)",
     "convolution", False, False, False),
    ("v100_resnet50_tb_sample_step", real("v100_resnet50_tb_sample_step",
                                          "void implicit_convolve_sgemm<float, float, 1024"),
     "convolution", False, False, False),
    # --- sm80 (A100): TF32 on CUTLASS s1688 and cuDNN xmma, SIMT sgemm/gemv/FFT
    ("a100_recsys_8gpu_rank3", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4"
     "_nn_align1>(cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1::Params)",
     "gemm", False, True, True),  # s1688: CUTLASS's TF32 tensor-op tile
    ("a100_recsys_16gpu_rank0", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_"
     "32x3_nn_align1>(cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1::Params)",
     "gemm", False, True, True),
    ("a100_recsys_16gpu_rank0", "ampere_sgemm_128x64_nn", "gemm", False, False, False),
    ("a100_alexnet", "ampere_sgemm_32x32_sliced1x4_tn", "gemm", False, False, False),
    ("a100_alexnet", "ampere_gcgemm_64x64_nt", "gemm", False, False, False),
    ("a100_alexnet", "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "convolution",
     False, False, False),
    ("a100_alexnet", "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_"
     "nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_"
     "cudnn", "convolution", False, True, True),
    ("a100_alexnet", real("a100_alexnet", "void fft2d_r2c_32x32<float, false, 5u"),
     "convolution", False, False, False),
    ("a100_ddp_nccl_rank0", A100_CUDNN_WGRAD, "convolution", False, True, True),
    ("a100_ddp_nccl_rank0", "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_"
     "optimized_tf32_64x128_32x3_nhwc_align4>(cutlass_tensorop_s1688dgrad_optimized_tf32_"
     "64x128_32x3_nhwc_align4::Params)", "convolution", False, True, True),
    ("a100_ddp_nccl_rank0", "void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>"
     "(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)", "gemm", False, False, False),
    ("a100_recsys_8gpu_rank3", real("a100_recsys_8gpu_rank3", "void gemv2N_kernel"), "gemm",
     False, False, False),
    ("a100_recsys_8gpu_rank3", "void linearize_index_kernel<long>(at::GenericPackedTensor"
     "Accessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, "
     "1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, "
     "at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, "
     "at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, "
     # embedding backward's index arithmetic: "linear" in a word, not a GEMM
     "at::RestrictPtrTraits, int>)", "other", False, False, False),
    # --- sm90 (H100): bf16 CUTLASS sm75/sm80 tiles, Hopper xmma (warpgroup MMA), bf16 gemv
    ("h100_owlv2_dataloader", "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16"
     "_256x128_tn_align1>(cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1::Params)",
     "gemm", True, True, False),  # bf16 inputs: not TF32
    ("h100_bert_small", "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_"
     "bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2"
     "_tn_align8::Params)", "gemm", True, True, False),
    ("h100_vit_image_classification", "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_"
     "s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>(cutlass_tensorop_bf16_s16816fprop_"
     "optimized_bf16_256x64_32x4_nhwc_align8::Params)", "convolution", True, True, False),
    ("h100_owlv2_dataloader", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
     "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm", True, True, False),
    # cuBLAS gemv and dot on bf16: reduced precision on SIMT cores, no tensor core
    ("h100_owlv2_dataloader", real("h100_owlv2_dataloader",
                                   "void gemv2T_kernel_val<int, int, __nv_bfloat16"),
     "gemm", True, False, False),
    ("h100_owlv2_dataloader", real("h100_owlv2_dataloader", "void dot_kernel<float, 128, 0, "
                                   "cublasDotParams<cublasGemvTensorStridedBatched<__nv_"
                                   "bfloat16"), "gemm", True, False, False),
    # --- sm100 (B200): cuBLAS nvjet and TensorRT-LLM's sm100 batched GEMMs
    ("b200_vllm_eager", "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm", False, True,
     True),  # cuBLAS's Blackwell/Hopper tensor-core JIT kernels; the type is the op's
    ("b200_vllm_eager", real("b200_vllm_eager", "bmm_Bfloat16_"), "gemm", True, True, False),
    ("b200_vllm_eager", real("b200_vllm_eager", "bmm_MxE4m3_"), "gemm", True, True, False),
    # --- AMD MI250 (gfx90a) and MI300X (gfx942): Tensile MFMA (hipBLASLt and rocBLAS
    # names), Composable Kernel xdlops, MIOpen's xdlops igemm, and its helpers
    ("mi250_minitoy_train", real("mi250_minitoy_train", "Cijk_Alik_Bljk_SB_Bias_AS_SAV_"
                                 "UserArgs_MT64x16x32_MI16x16x1_"),
     "gemm", False, True, False),  # fp32 on MFMA: matrix cores, but no TF32
    ("mi300_bert_small", real("mi300_bert_small", "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_"
                              "UserArgs_MT16x16x128_MI16x16x1_"), "gemm", True, True, False),
    ("mi300_resnet_act_checkpoint", real("mi300_resnet_act_checkpoint",
                                         "Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1_"),
     "gemm", True, True, False),
    ("mi300_resnet_act_checkpoint", real("mi300_resnet_act_checkpoint",
                                         "_ZN2ck16tensor_operation6device37kernel_batched_"
                                         "gemm_xdlops_bwd_weight"), "gemm", False, True, False),
    ("mi300_resnet_act_checkpoint", real("mi300_resnet_act_checkpoint",
                                         "_ZN2ck16tensor_operation6device12_GLOBAL__N_149"
                                         "kernel_grouped_conv_fwd_multiple_abd_xdl_cshuffle"),
     "convolution", False, True, False),
    ("mi300_resnet_act_checkpoint", real("mi300_resnet_act_checkpoint",
                                         "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32"),
     "convolution", True, True, False),
    ("mi300_resnet_act_checkpoint", "SubTensorOpWithCastTensor1d", "elementwise", False,
     False, False),
]

# V100 AMP's tensor-core GEMM and convolution (the TensorBoard plugin's V100 samples,
# pytorch/kineto tb_plugin test data)
VOLTA_H884 = "volta_h884gemm_64x64_nt"
VOLTA_S884_CUDNN = "volta_fp16_s884cudnn_fp16_128x128_ldg8_splitK_relu_f2f_exp_small_nhwc_tn_v1"
# fp32 cuBLAS GEMM on H100/GH200 without TF32 (Nsight Systems kernel summaries): plain FP32
# FMA on SIMT cores, whatever "xmma" suggests
GH200_FFMA = ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize2x2x1_ffma_"
              "aligna4_alignc4_execute_kernel__5x_cublas")

# Names from published profiles (not in tests/data), each with where it was printed:
# (kernel name, class, 16-bit or narrower, tensor cores, TF32 for fp32)
PUBLISHED = [
    (VOLTA_H884, "gemm", True, True, False),
    (VOLTA_S884_CUDNN, "convolution", True, True, False),
    # the same family with its output layout in the name (an nvprof listing of an AMP run):
    # a convolution, not a copy
    ("volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1",
     "convolution", True, True, False),
    # T4 and A100 AMP profiles (torch.profiler tables, the Triton matmul tutorial's proton
    # output)
    ("turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn", "gemm", True, True, False),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", "gemm", True, True, False),
    # the GH200 FFMA kernel, and the same family with its name cut before "_ffma", as
    # profiler tables print it
    (GH200_FFMA, "gemm", False, False, False),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ff", "gemm",
     False, False, False),
    # cuDNN on an sm86 part (grouped fp16 convolutions) and TensorRT on A100 (bf16 GEMM)
    ("sm86_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage3_"
     "warpsize1x4x1_g8_tensor16x8x16_t1r3s3_execute_kernel__5x_cudnn", "convolution", True,
     True, False),
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x128x32_stage5_warpsize2x2x1_"
     "tensor16x8x16_aligna2_alignc2_execute_kernel_trt", "gemm", True, True, False),
    # the fp32 GEMMs with allow_tf32 on H100: Hopper warpgroup MMA in TF32
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
     "segment_k_off_kernel__5x_cublas", "gemm", False, True, True),
    # cuBLAS's own kernel table (HGMMA fp16) and an H100 fp16 nvjet kernel
    ("sm90_xmma_gemm_f16f16_f16f16_f16_nt_n_tilesize128x128x64_stage4_gmmastage2_"
     "warpgroupsize1x1x1_hgmma64x128x16", "gemm", True, True, False),
    ("nvjet_sm90_hss_320x128_64x3_1x2_h_bz_coopB_NNT", "gemm", True, True, False),
    # CUTLASS 3 (torch.compile's CUTLASS backend on H100; a B200 conv3d profile)
    ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x128x64_2x1x1_0_tnt_align8_"
     "warpspecialized_cooperative_epi_tma", "gemm", True, True, False),
    ("cutlass3x_sm100_tensorop_s32x256x16_conv3d_fprop_weight_stationary_nq_2d_tiled_bf16_"
     "bf16_f32_void_bf16_void_t3xr3xs3_32x256x64_dyn_cga_ndhwc_ndhwc_ndhwc_1sm", "convolution",
     True, True, False),
    # rocBLAS fp32 on MI100/MI200 MFMA (a ROCm debug log), and a VALU Tensile kernel
    ("Cijk_Ailk_Bljk_SB_MT128x96x16_MI32x32x2x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS0_"
     "ASE_ASGT_ASLT_ASM_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_CLR0_DTLA0_DTLB0_DTVA0_DTVB0_DVO0_"
     "ETSP_EPS1_ELFLR0_EMLL0_FSSC10_FL0_GLVWA2_GLVWB2", "gemm", False, True, False),
    ("Cijk_Ailk_Bljk_SB_MT064x128x08_GRVW04_K1_PGR0_PLR0_TT04_08_VW04_WG16_16_01_WGM04", "gemm",
     False, False, False),
    # MIOpen's naive convolution (its naive_conv.cpp kernel symbols)
    ("naive_conv_nonpacked_fwd_nchw_float_double_float", "convolution", False, False, False),
    # Inductor's mm template (tl.dot), as PyTorch's profiler tests name it: the name does
    # not tell, the data type decides
    ("triton_tem_fused_mm_0", "gemm", False, False, False),
]


@pytest.mark.parametrize("trace,name,klass,low,tc,tf32", KERNELS,
                         ids=lambda v: v[:40] if isinstance(v, str) else None)
def test_kernel_family(trace, name, klass, low, tc, tf32):
    assert name in kernel_names(trace)  # a real name, as that trace writes it
    assert classify.classify_kernel_name(name) == klass
    assert is_low_precision(name) == low
    assert is_tensor_core(name) == tc
    assert tf32_kernel(name) == tf32


@pytest.mark.parametrize("name,klass,low,tc,tf32", PUBLISHED,
                         ids=lambda v: v[:40] if isinstance(v, str) else None)
def test_published_kernel_names(name, klass, low, tc, tf32):
    assert classify.classify_kernel_name(name) == klass
    assert is_low_precision(name) == low
    assert is_tensor_core(name) == tc
    assert tf32_kernel(name) == tf32


def test_every_family_has_a_real_name():
    """Each row of the table decides at least one of the names above (none is dead), and
    the Triton row is the only one that leaves the answer to the data type."""
    names = [k[1] for k in KERNELS] + [p[0] for p in PUBLISHED]
    decided = {family_of(n) for n in names}
    assert [row.family for row in FAMILIES if row not in decided] == []
    assert [row.family for row in FAMILIES if row.tensor_core is None] == \
        [family_of("triton_tem_fused_mm_0").family]


def test_tensorboard_plugin_agrees_where_it_has_an_opinion():
    """The plugin marks a kernel as tensor-core by a list of NVIDIA name fragments. Every
    kernel above it calls tensor-core is one here too, but the sm80 FFMA kernels (their
    names hold its ``xmma_gemm``: plain FP32 on SIMT cores). Those it misses are families
    its list never had: cuDNN's xmma fprop/dgrad/wgrad and mangled CUTLASS convolutions,
    WMMA tiles (``s161616``), cuBLAS ``nvjet``, CUTLASS 3 and sm100 kernels, and AMD's."""
    tc = pytest.importorskip("torch_tb_profiler.profiler.tensor_core")
    rows = [(k[1], k[4]) for k in KERNELS] + [(p[0], p[3]) for p in PUBLISHED]
    theirs = {name for name, _ in rows if name in tc.TC_Allowlist}
    ours = {name for name, tensor in rows if tensor}
    assert sorted(theirs - ours) == sorted(p[0] for p in PUBLISHED
                                           if p[0].startswith("sm80_xmma_gemm_f32f32"))
    never_listed = re.compile(r"xmma_(?:fprop|dgrad|wgrad)|cutlass_cudnn|wmma|^nvjet|"
                              r"cutlass3x|sm100|^cijk_|^_zn2ck|gtcx", re.IGNORECASE)
    assert [n for n in ours - theirs if not never_listed.search(n)] == []


def test_tf32_gemms_are_measured_against_the_tf32_peak():
    """A100 recommendation model: fp32 GEMMs on s1688 kernels run on TF32 tensor cores, so
    their share of a peak is of TF32's (156 TFLOP/s); those on ampere_sgemm kernels (FP32
    SIMT) of FP32's (19.5 TFLOP/s); none is above its peak."""
    from real_traces import analysis

    a = analysis("a100_recsys_8gpu_rank3.json.gz")
    gemms = [g for g in a.perf.groups if g.family == "gemm" and g.dtype == "fp32"]
    tf32 = [g for g in gemms if g.tf32]
    assert tf32 and sum(g.total_ns for g in tf32) > 0.5 * sum(g.total_ns for g in gemms)
    assert {g.peak_flops_per_s for g in gemms} == {156e12, 19.5e12}
    assert all(g.peak_flops_per_s == 156e12 for g in tf32)
    assert max(g.compute_peak_share for g in gemms) < 1
    assert a.precision.tensor_core_share > 0.8
    assert "fp32_matmul_on_tensor_core_gpu" not in {r.rule for r in a.recommendations}


# --- the precision breakdown and the MFU peak of real traces follow the table

def _renamed(trace: str, rename) -> tuple:
    """The trace's table with kernel names replaced by ``rename(name)`` (None: kept): the
    same kernels, times and ops, cut to the case of another library's kernels."""
    table = load(DATA / f"{trace}.json.gz")
    for i, name in enumerate(table.names):
        new = rename(name)
        if new is not None:
            table.names[i] = new
    tree = build_op_tree(table)
    gpu = attribute_gpu(table, tree)
    return table, gpu, analyze_precision(table, gpu), analyze_roofline(table, tree, gpu)


def _eligible_ns(table, gpu, match) -> int:
    sel = eligible_mask(table, gpu)
    return sum(int(table.dur_ns[r]) for r in gpu.row[sel]
               if match(table.names[int(table.name[r])]))


def test_v100_resnet50_simt_and_tensor_core_kernels():
    """V100 ResNet-50 in fp32: every GEMM and convolution kernel is SIMT (``volta_sgemm``,
    ``volta_scudnn``, Winograd, implicit GEMM), so none of its time is on tensor cores.
    The same trace with its ``volta_sgemm`` kernels named as the AMP run's tensor-core
    GEMM (``volta_h884gemm``) and its ``scudnn`` kernels as its tensor-core convolution
    (``volta_fp16_s884cudnn``) moves exactly their time to tensor cores."""
    table, gpu, p, _ = _renamed("v100_resnet50_train", lambda n: None)
    assert p.eligible_ns > 0 and p.tensor_core_ns == 0 and p.tensor_core_by_name_ns == 0
    assert p.fp32_simt_ns == p.eligible_ns
    assert p.gemm_fp32_simt_top and all(n.startswith("volta_sgemm") for n, _ in
                                        p.gemm_fp32_simt_top)
    sgemm = _eligible_ns(table, gpu, lambda n: n.startswith("volta_sgemm"))
    scudnn = _eligible_ns(table, gpu, lambda n: "_volta_scudnn_" in n)
    assert sgemm > 0 and scudnn > 0

    def amp(name: str) -> str | None:
        if name.startswith("volta_sgemm"):
            return VOLTA_H884
        if "_volta_scudnn_" in name:
            return VOLTA_S884_CUDNN
        return None

    _table, _gpu, q, _ = _renamed("v100_resnet50_train", amp)
    assert q.eligible_ns == p.eligible_ns
    assert q.tensor_core_ns == sgemm + scudnn == q.tensor_core_by_name_ns
    assert q.fp32_simt_ns == p.eligible_ns - sgemm - scudnn
    assert q.gemm_fp32_simt_ns == 0


def test_bf16_gemv_runs_on_simt_cores():
    """H100 OWLv2 in bf16: every GEMM is reduced precision (the ops' Input type), but
    cuBLAS's gemv and dot kernels (and the dot's reduction, ``reduce_1Block_kernel<...,
    cublasGemvTensorStridedBatched<...>>``) run it on SIMT cores: tensor-core time is the
    rest."""
    table, gpu, p, _ = _renamed("h100_owlv2_dataloader", lambda n: None)
    simt = _eligible_ns(table, gpu, lambda n: bool(re.search(r"gemv|dot_kernel", n, re.I)))
    assert p.source == "input_type" and p.low_precision_ns == p.eligible_ns
    assert simt > 0 and p.tensor_core_ns == p.eligible_ns - simt
    assert p.fp32_simt_ns == 0  # bf16 on SIMT cores is not fp32


def test_ffma_kernels_are_fp32_simt_in_precision_and_mfu():
    """The A100 recommendation model with its CUTLASS TF32 GEMMs (``tensorop_s1688gemm``)
    named as GH200's fp32 cuBLAS kernel (``sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma``):
    their time leaves the tensor-core share, their groups are measured against FP32's
    19.5 TFLOP/s instead of TF32's 156, and so is MFU (its dtype is fp32)."""
    table, gpu, p, perf = _renamed("a100_recsys_8gpu_rank3", lambda n: None)
    tf32_ns = _eligible_ns(table, gpu, lambda n: "tensorop_s1688gemm" in n)
    assert tf32_ns > 0 and p.tensor_core_ns == tf32_ns
    assert perf.mfu_dtype == "fp32" and perf.mfu_peak_flops_per_s == 156e12
    _table, _gpu, q, ffma = _renamed(
        "a100_recsys_8gpu_rank3",
        lambda n: GH200_FFMA if "tensorop_s1688gemm" in n else None)
    assert q.eligible_ns == p.eligible_ns
    assert q.tensor_core_ns == 0 and q.fp32_simt_ns == q.eligible_ns
    assert q.gemm_fp32_simt_ns == p.gemm_fp32_simt_ns + tf32_ns
    assert not any(g.tf32 for g in ffma.groups)
    assert {g.peak_flops_per_s for g in ffma.groups if g.family == "gemm"} == {19.5e12}
    assert ffma.mfu_dtype == "fp32" and ffma.mfu_peak_flops_per_s == 19.5e12
    assert ffma.model_flops_utilization == pytest.approx(
        perf.model_flops_utilization * 156 / 19.5)
