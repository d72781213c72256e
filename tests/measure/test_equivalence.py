"""The check that a strategy computes what the baseline computes."""

from __future__ import annotations

import torch

from profiler_kit.measure.equivalence import TF32_REL_NORM_TOL, compare, snapshot, tf32_tolerance


def test_float32_allclose_passes_and_catches_a_real_difference() -> None:
    ref = snapshot([torch.randn(8, 10) * 1000])
    assert compare(ref, [ref[0] * (1 + 1e-6)], None).ok
    off = compare(ref, [ref[0] + 50.0], None)
    assert off.checked and not off.ok and "differs from the baseline" in off.detail


def test_shape_and_count_mismatches_are_reported() -> None:
    ref = snapshot([torch.ones(2, 3)])
    assert "shape (3, 2)" in compare(ref, [torch.ones(3, 2)], None).detail
    assert "2 outputs" in compare(ref, [torch.ones(2, 3), torch.ones(1)], None).detail
    assert "non-finite" in compare(ref, [torch.full((2, 3), float("nan"))], None).detail


def test_amp_twins_use_a_relative_error_of_norm_fit_for_their_dtype() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 64)
    w = torch.randn(64, 64)
    ref = snapshot([x @ w])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = x @ w
    result = compare(ref, [low], "bfloat16")
    assert result.ok and 0 < result.max_rel_error < result.tolerance
    assert result.criterion == "relative error of norm"
    assert not compare(ref, [torch.randn(64, 64) * 8], "bfloat16").ok
    # a workload may declare its own tolerance (e.g. training through batch statistics)
    assert compare(ref, [ref[0] * 1.3], "float16", amp_tolerance=0.5).ok
    assert not compare(ref, [ref[0] * 1.3], "float16").ok


def test_float32_on_cuda_with_tf32_allowed_is_held_to_tf32s_rounding() -> None:
    """Seen on an H200: Conv1d (cuDNN, TF32 by default) against Linear (float32 matmuls)
    differed by 7e-4 where allclose allowed 2.4e-4; the relative error of norm TF32's
    10-bit mantissa gives is what float32 strategies on such a device are held to."""
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    saved = cudnn.allow_tf32, matmul.allow_tf32
    try:
        assert tf32_tolerance([torch.device("cpu")]) is None
        cudnn.allow_tf32 = True
        assert tf32_tolerance([torch.device("cuda", 0)]) == TF32_REL_NORM_TOL
        cudnn.allow_tf32 = matmul.allow_tf32 = False
        assert tf32_tolerance([torch.device("cuda", 0)]) is None
    finally:
        cudnn.allow_tf32, matmul.allow_tf32 = saved
    torch.manual_seed(0)
    x, w = torch.randn(64, 256), torch.randn(256, 64)
    ref = snapshot([x @ w])
    tf32 = x.half().float() @ w.half().float()  # inputs rounded to 10 mantissa bits
    assert not compare(ref, [tf32], None).ok
    assert compare(ref, [tf32], None, float32_tolerance=TF32_REL_NORM_TOL).ok
