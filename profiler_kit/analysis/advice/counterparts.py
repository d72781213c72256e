"""Which what-if change models doing what each rule advises: rule id -> the change, as
``profkit whatif`` names it (None: no change models the advice, and the rule gets no
predicted gain).

Every rule of the tables in this room is listed (``tests/analysis/test_predicted_gains.py``
reads the rule ids from the source and checks it), so a new rule states whether the
replay can price it. ``precision bf16`` becomes ``precision fp16`` on a device without a
bf16 matrix rate (a V100).
"""

from __future__ import annotations

CHANGE_OF_RULE: dict[str, str | None] = {
    # the causes of GPU idle time
    "launch_bound": "cuda-graphs",  # the launch calls collapse to one graph launch per step
    # the host's ops that launch GPU work (the model code the GPU waits for) collapse to one
    # graph launch per step, the remedy its advice leads with; Python between ops and ops
    # that launch nothing stay, so the gain is what graphs alone would give
    "host_bound": "cuda-graphs",
    "dataloader_share": "no-dataloader-wait",  # the host's wait for the next batch removed
    "idle_after_synchronization": "no-sync",  # the blocking calls in the steps no longer wait
    "idle_in_optimizer": None,  # no change models a fused or foreach optimizer
    "low_gpu_utilization": None,  # a symptom: its causes have rules (and changes) of their own
    # 32-bit GEMMs and convolutions: autocast's 16-bit matrix rate
    "reduced_precision_unused": "precision bf16",
    # TF32, its advice, is not modeled; autocast (its alternative) is: the gain of bf16
    "fp32_matmul_on_tensor_core_gpu": "precision bf16",
    "exposed_communication": "overlap-comm",  # collectives off the compute streams
    # torch.compile's fusion: each run of elementwise/normalization kernels one kernel
    "elementwise_chain_between_gemms": "fusion",
    # the job's rules: no-straggler needs the traces of two or more ranks
    "waiting_for_late_rank": "no-straggler",
    "slow_transfer": None,
    "exposed_transfer": None,
    # no change models these: copies, memory, layouts, shapes, occupancy
    "memcpy_share": None,
    "memory_near_capacity": None,
    "conv_bias_before_batchnorm": None,
    "gemm_unaligned_dims": None,
    "small_gemms": None,
    "conv_channels_last": None,
    "small_kernels_underfill_gpu": None,
    # CPU-only traces: the replay keeps the recorded host time (nothing models oneDNN's bf16
    # rate, fusion on the CPU or free cores)
    "cpu_ops_waiting": None,
    "cpu_fp32_matmul_conv": None,
    "cpu_small_elementwise_ops": None,
}

# Why a rule no change models has no predicted gain, as the code of the note said beside it
# in every format (``Recommendation.no_prediction``; a rule not listed:
# ``no_change_models_advice``).
WHY_NO_PREDICTION: dict[str, str] = {
    "idle_in_optimizer": "optimizer_not_modeled",
    "low_gpu_utilization": "symptom_of_other_rules",
    "slow_transfer": "link_speed_not_modeled",
    "exposed_transfer": "transfer_overlap_not_modeled",
    "memcpy_share": "copies_not_modeled",
    "memory_near_capacity": "memory_is_not_time",
    "conv_bias_before_batchnorm": "dropped_bias_not_timed",
    "gemm_unaligned_dims": "padded_shapes_need_a_run",
    "small_gemms": "batched_gemms_need_a_run",
    "conv_channels_last": "channels_last_measured_only",
    "small_kernels_underfill_gpu": "priced_by_fusion_or_graphs",
    "cpu_ops_waiting": "free_cores_not_modeled",
    "cpu_fp32_matmul_conv": "cpu_bf16_measured_only",
    "cpu_small_elementwise_ops": "cpu_fusion_not_modeled",
}
