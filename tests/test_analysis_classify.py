"""Hotspot classes from op and kernel names (real names from the test traces)."""

from __future__ import annotations

import pytest

from profiler_kit.analysis.classify import (
    CLASSES,
    classify_annotation,
    classify_kernel_name,
    classify_op,
)


@pytest.mark.parametrize("name,expected", [
    ("aten::conv2d", "convolution"),
    ("aten::cudnn_convolution", "convolution"),
    ("autograd::engine::evaluate_function: ConvolutionBackward0", "convolution"),
    ("aten::native_batch_norm", "batchnorm"),
    ("CudnnBatchNormBackward0", "batchnorm"),
    ("aten::layer_norm", "normalization"),
    ("aten::group_norm", "normalization"),
    ("aten::addmm", "gemm"),
    ("AddmmBackward0", "gemm"),
    ("aten::bmm", "gemm"),
    ("aten::linear", "gemm"),
    ("aten::scaled_dot_product_attention", "attention"),
    ("aten::add_", "elementwise"),
    ("aten::threshold_backward", "elementwise"),
    ("aten::_foreach_add_", "elementwise"),
    ("aten::sum", "reduction"),
    ("aten::max_pool2d_with_indices", "pooling"),
    ("MaxPool2DWithIndicesBackward0", "pooling"),
    ("record_param_comms", "communication"),
    ("c10d::allreduce_", "communication"),
    ("nccl:all_reduce", "communication"),
    ("aten::copy_", "other"),
    ("aten::empty", "other"),
    ("aten::broadcast_tensors", "other"),
    ("aten::convert_element_type", "other"),
])
def test_op_classes(name, expected):
    assert classify_op(name) == expected


@pytest.mark.parametrize("name,expected", [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "communication"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "communication"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", "convolution"),
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32", "convolution"),
    ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float)", "batchnorm"),
    ("void at::native::batch_norm_collect_statistics_kernel<float>(int)", "batchnorm"),
    ("ampere_sgemm_32x32_sliced1x4_tn", "gemm"),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN", "gemm"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(x)", "gemm"),
    ("triton_poi_fused_add_cos_sin_0", "elementwise"),
    ("triton_red_fused_sum_1", "reduction"),
    ("void at::native::reduce_kernel<128, 4>(int)", "reduction"),
    ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int)",
     "pooling"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", "attention"),
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>", "attention"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)",
     "elementwise"),
    ("some_unknown_kernel", "other"),
])
def test_kernel_name_classes(name, expected):
    assert classify_kernel_name(name) == expected


def test_annotations_only_speak_for_communication():
    assert classify_annotation("nccl:all_reduce") == "communication"
    assert classify_annotation("conv_block_forward") == "other"


def test_every_rule_result_is_a_known_class():
    assert len(set(CLASSES)) == 12
    for n in ("aten::mm", "x", "nccl", "Memcpy HtoD"):
        assert classify_op(n) in CLASSES and classify_kernel_name(n) in CLASSES
