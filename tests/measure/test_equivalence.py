"""The check that a strategy computes what the baseline computes."""

from __future__ import annotations

import torch

from profiler_kit.measure.equivalence import compare, snapshot


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
