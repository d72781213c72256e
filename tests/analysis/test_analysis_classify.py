"""Hotspot classes from op and kernel names (real names from the test traces)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.classify import (
    CLASSES,
    classify_annotation,
    classify_kernel_name,
    classify_op,
    kernel_parts,
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
    ("aten::copy_", "copy"),
    ("aten::to", "copy"),
    ("aten::_to_copy", "copy"),
    ("aten::contiguous", "copy"),
    ("aten::cat", "copy"),
    ("aten::convert_element_type", "copy"),
    ("aten::empty", "other"),
    ("aten::broadcast_tensors", "other"),
    # a view (no kernel, no arithmetic), once read as exp by its first letters
    ("aten::expand", "other"),
    ("ExpandBackward0", "other"),  # the aten::sum inside it is classed by its own name
    ("aten::exp", "elementwise"),
    ("aten::expm1", "elementwise"),
    ("aten::exponential_", "elementwise"),
])
def test_op_classes(name, expected):
    assert classify_op(name) == expected


# One or more real kernel names per family (from the traces in ../shared/traces), with the
# class a reader of the name would give it.
KERNEL_FAMILIES = {
    "cuBLAS": [
        ("ampere_sgemm_32x32_sliced1x4_tn", "gemm"),
        ("ampere_gcgemm_64x64_nt", "gemm"),
        ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, "
         "float, float, false, true, true, false, 7, cublasGemvParams<cublasGemvTensorStrided"
         "Batched<float const>, float> >(cublasGemvParams<float>)", "gemm"),
    ],
    "cuBLASLt": [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
         "execute_segment_k_off_kernel__5x_cublas", "gemm"),
        ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, true, "
         "false, false>(cublasLt::cublasSplitKParams<float>, float const*)", "reduction"),
    ],
    "CUTLASS": [
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>("
         "cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)", "gemm"),
        ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_"
         "align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
         "gemm"),
        ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64"
         "_32x4_nhwc_align8>(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64::Params)",
         "convolution"),
    ],
    "xmma": [
        ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", "convolution"),
        ("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x"
         "64_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train", "convolution"),
    ],
    "nvjet": [("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTT", "gemm")],
    "cuDNN": [
        ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float)",
         "batchnorm"),
        ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>("
         "cudnnTensorStruct, float const*)", "batchnorm"),
        ("cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "convolution"),
        ("void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float,"
         " false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t"
         "<float>, __nv_bfloat16 const*, __nv_bfloat16*)", "copy"),
        ("void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, "
         "(cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, float const*, float*)",
         "copy"),
        ("void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*)", "convolution"),
    ],
    "MIOpen": [
        ("MIOpenBatchNormFwdTrainSpatial", "batchnorm"),
        ("MIOpenBatchNormBwdSpatial", "batchnorm"),
        ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2", "convolution"),
        ("igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt64x32x32_wt16x16x16", "convolution"),
        ("batched_transpose_32x32_half", "copy"),
        ("transpose_NCHW2CNHW_V2_2D_WG_off64", "copy"),
        ("SubTensorOpWithScalar1d", "elementwise"),
        ("SubTensorOpWithCastTensor1d", "elementwise"),
        ("_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3"
         "INS_28GridwiseGemm_xdl_cshuffle_v3", "convolution"),
    ],
    "hipBLASLt/Tensile": [
        ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1", "gemm"),
        ("Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1_SN_1LDSB0_APM1", "gemm"),
    ],
    "rocBLAS": [
        ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN", "gemm"),
        ("rocblas_gemvt_sn_kernel<false, 256, 4, int, float, float>(int, int)", "gemm"),
    ],
    "Triton": [
        ("triton_poi_fused_add_cos_sin_0", "elementwise"),
        ("triton_red_fused_sum_1", "reduction"),
        ("triton_per_fused__softmax_0", "reduction"),
        ("triton_tem_fused_mm_0", "gemm"),
    ],
    "flash/fmha": [
        ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", "attention"),
        ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, "
         "128, 4, false, false, cutlass::bfloat16_t> >(pytorch_flash::Flash_fwd_params)",
         "attention"),
        ("attn_fwd", "attention"),
    ],
    "NCCL/RCCL": [
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
         "communication"),
        ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "communication"),
    ],
    "PyTorch native": [
        ("void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda"
         "(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
         "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::BFloat16)"
         "#1}, std::array<char*, 2ul>)", "copy"),
        ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::"
         "native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
         "const::{lambda()#10}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, "
         "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()"
         "() const::{lambda()#10}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}"
         ">(int, std::array<char*, 2ul>)", "copy"),
        ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, "
         "128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, "
         "unsigned int, 128, 1>)", "copy"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
         "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, "
         "3ul>)", "elementwise"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
         "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
         "elementwise"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps"
         "<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, "
         "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)", "reduction"),
        ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>"
         "(float*, float const*, int, int, int, bool const*, int, bool)", "reduction"),
        ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int)",
         "pooling"),
        ("void at::native::batch_norm_collect_statistics_kernel<at::native::Var, float, float, "
         "float, int>(float)", "batchnorm"),
        ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, "
         "false>(int, float, float const*)", "normalization"),
        ("void at::native::elementwise_kernel_manual_unroll<128, 4, at::native::gpu_kernel_impl_"
         "nocast<at::native::(anonymous namespace)::GroupNormKernelImplInternal<float, float>("
         "at::Tensor const&)::{lambda(float, float, float)#1}>(at::TensorIteratorBase&)::"
         "{lambda(int)#1}>(int)", "normalization"),
        ("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, "
         "unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned "
         "int>)", "elementwise"),
    ],
}


@pytest.mark.parametrize("name,expected", [
    pytest.param(n, c, id=f"{family}:{n[:40]}")
    for family, names in KERNEL_FAMILIES.items() for n, c in names
])
def test_kernel_name_classes(name, expected):
    assert classify_kernel_name(name) == expected


@pytest.mark.parametrize("name,kernel,functor", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda("
     "at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int)",
     "vectorized_elementwise_kernel", "bfloat16_copy_kernel_cuda"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2>(x)",
     "Kernel2", "cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2"),
    ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native"
     "::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&)::{lambda(int)#1}>(int)",
     "elementwise_kernel", "CUDAFunctor_add"),
    ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTT", "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTT", ""),
])
def test_kernel_parts(name, kernel, functor):
    assert kernel_parts(name) == (kernel, functor)


def test_template_arguments_never_class_a_kernel():
    # std::array (``std``), c10::Half (``half``), ``at::native::Var``: types, not work
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::mystery_op(at::"
            "TensorIteratorBase&)::{lambda(c10::Half)#1}, std::array<char*, 2ul> >(int)")
    assert classify_kernel_name(name) == "elementwise"  # from the kernel's own name
    assert classify_kernel_name("void cub::DeviceFoo<std::max<float>>(int)") == "other"


def test_annotations_only_speak_for_communication():
    assert classify_annotation("nccl:all_reduce") == "communication"
    assert classify_annotation("conv_block_forward") == "other"


def test_every_rule_result_is_a_known_class():
    assert len(set(CLASSES)) == 13
    for n in ("aten::mm", "x", "nccl", "Memcpy HtoD"):
        assert classify_op(n) in CLASSES and classify_kernel_name(n) in CLASSES


_PIECES = ["nccl", "rccl", "gloo", "c10d", "record_param_comms", "processgroup", "all",
           "_", "reduce", "gather", "scatter", "to", "send", "recv", "barrier", " ", "::",
           "msccl", "devkernel", "kernel", "a", "l", "c", "ccl", "s"]


@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_the_communication_prefilter_never_changes_the_answer(name: str) -> None:
    """The substring test before the communication regex is a necessary condition."""
    assert classify._is_comm(name) == (classify._COMM.search(name) is not None)
