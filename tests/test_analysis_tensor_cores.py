"""Tensor cores recognised from the kernel families that use them: real kernel names (each
taken from a trace in tests/data) with their expected class, reduced precision, tensor-core
use and whether fp32 work on them is TF32; the TensorBoard plugin's own list is the
reference where it has an opinion."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler_kit.analysis import classify
from profiler_kit.analysis.precision import is_low_precision, is_tensor_core, tf32_kernel

DATA = Path(__file__).parent / "data"


def kernel_names(trace: str) -> set[str]:
    with gzip.open(DATA / f"{trace}.json.gz", "rt") as fh:
        return {e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"}


# cuDNN's CUTLASS weight-gradient convolution on an A100 (mangled, 1644 characters): its
# operands are ``cutlass::tfloat32_t`` and its tile a ``TensorOp`` one
A100_CUDNN_WGRAD = next(n for n in kernel_names("a100_ddp_nccl_rank0")
                        if n.startswith("_ZN19cutlass_cudnn_train") and "tfloat32_t" in n
                        and "GemmShapeILi128ELi128ELi32" in n)

# (trace it comes from, kernel name, class, 16-bit or narrower, tensor cores, TF32 for fp32)
KERNELS = [
    ("a100_recsys_8gpu_rank3", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x4"
     "_nn_align1>(cutlass_80_tensorop_s1688gemm_64x64_32x4_nn_align1::Params)",
     "gemm", False, True, True),  # s1688: CUTLASS's TF32 tensor-op tile
    ("a100_recsys_16gpu_rank0", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_"
     "32x3_nn_align1>(cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1::Params)",
     "gemm", False, True, True),
    ("a100_recsys_16gpu_rank0", "ampere_sgemm_128x64_nn", "gemm", False, False, False),
    ("a100_alexnet", "ampere_sgemm_32x32_sliced1x4_tn", "gemm", False, False, False),
    ("h100_owlv2_dataloader", "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16"
     "_256x128_tn_align1>(cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1::Params)",
     "gemm", True, True, False),  # bf16 inputs: not TF32
    ("h100_owlv2_dataloader", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
     "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm", True, True, False),
    ("v100_resnet50_train", "volta_sgemm_64x64_nt", "gemm", False, False, False),
    ("v100_resnet50_train", "void cudnn::winograd_nonfused::winogradForwardData4x4<float, "
     "float>(cudnn::winograd_nonfused::WinogradDataParams<float, float>)",
     "convolution", False, False, False),
    ("b200_vllm_eager", "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm", False, True,
     True),  # cuBLAS's Blackwell/Hopper tensor-core JIT kernels; the type is the op's
    ("a100_ddp_nccl_rank0", A100_CUDNN_WGRAD, "convolution", False, True, True),
    ("a100_recsys_8gpu_rank3", "void linearize_index_kernel<long>(at::GenericPackedTensor"
     "Accessor<long, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, "
     "1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, "
     "at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, "
     "at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, "
     # embedding backward's index arithmetic: "linear" in a word, not a GEMM
     "at::RestrictPtrTraits, int>)", "other", False, False, False),
]


@pytest.mark.parametrize("trace,name,klass,low,tc,tf32", KERNELS,
                         ids=lambda v: v[:40] if isinstance(v, str) else None)
def test_kernel_family(trace, name, klass, low, tc, tf32):
    assert name in kernel_names(trace)  # a real name, as that trace writes it
    assert classify.classify_kernel_name(name) == klass
    assert is_low_precision(name) == low
    assert is_tensor_core(name) == tc
    assert tf32_kernel(name) == tf32


def test_tensorboard_plugin_agrees_where_it_has_an_opinion():
    """The plugin marks a kernel as tensor-core by a list of name fragments; it agrees on
    every kernel above but those it does not know: ``nvjet`` (cuBLAS 12.8's kernels, after
    the plugin's last release) and cuDNN's CUTLASS convolutions (``cutlass_cudnn_train``,
    TF32 ``TensorOp`` tiles), which it calls no tensor core. (The Hopper ``sm90_xmma`` name
    agrees: its list has ``xmma_gemm``, which ``sm90_xmma_gemm`` contains.)"""
    tc = pytest.importorskip("torch_tb_profiler.profiler.tensor_core")
    for _trace, name, _klass, _low, expected, _tf32 in KERNELS:
        if name.startswith(("nvjet", "_ZN19cutlass_cudnn_train")):
            assert name not in tc.TC_Allowlist
            continue
        assert (name in tc.TC_Allowlist) == expected, name


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
