"""Do two strategies compute the same thing? Compared before anything is timed.

float32 strategies must match the baseline with ``allclose`` (scaled by the output's
magnitude: random-weight networks produce large logits). AMP twins compute in
float16/bfloat16, where element-wise closeness is meaningless after a hundred
layers, so they are held to a relative error of the norm fit for their dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from profiler_kit.results import Equivalence

FLOAT32_RTOL = 1e-3
FLOAT32_ATOL_OF_MAX = 1e-4  # absolute tolerance, as a fraction of max |reference|
AMP_REL_NORM_TOL = {"float16": 2e-2, "bfloat16": 8e-2}


def snapshot(outputs: Sequence[Any]) -> list[torch.Tensor]:
    """Detached float32 CPU copies, so the reference outlives the baseline's workload."""
    return [torch.as_tensor(t).detach().to("cpu", torch.float32).clone() for t in outputs]


def compare(reference: Sequence[torch.Tensor], outputs: Sequence[Any],
            amp_dtype: str | None, amp_tolerance: float | None = None,
            float32_tolerance: float | None = None) -> Equivalence:
    """``amp_tolerance`` overrides the dtype's: a workload whose reduced-precision error
    grows with depth (e.g. training through batch statistics) declares its own.
    ``float32_tolerance`` holds float32 strategies to that relative error of norm instead
    of ``allclose`` (gradients whose kernels sum in another order)."""
    got = snapshot(outputs)
    by_norm = bool(amp_dtype) or float32_tolerance is not None
    criterion = "relative error of norm" if by_norm else "allclose"
    tol = AMP_REL_NORM_TOL.get(amp_dtype, 1e-1) if amp_dtype else FLOAT32_RTOL
    if amp_dtype and amp_tolerance is not None:
        tol = amp_tolerance
    if not amp_dtype and float32_tolerance is not None:
        tol = float32_tolerance
    if len(got) != len(reference):
        return Equivalence(True, False, None, tol, criterion,
                           f"{len(got)} outputs, the baseline has {len(reference)}")
    worst = 0.0
    for i, (ref, out) in enumerate(zip(reference, got, strict=True)):
        if ref.shape != out.shape:
            return Equivalence(True, False, None, tol, criterion,
                               f"output {i} has shape {tuple(out.shape)}, "
                               f"the baseline's is {tuple(ref.shape)}")
        if not torch.isfinite(out).all():
            return Equivalence(True, False, None, tol, criterion,
                               f"output {i} has non-finite values")
        ref_norm = float(ref.norm())
        rel = float((out - ref).norm()) / ref_norm if ref_norm > 0 else float((out - ref).norm())
        worst = max(worst, rel)
        if by_norm:
            if rel > tol:
                return Equivalence(True, False, worst, tol, criterion,
                                   f"output {i} differs from the baseline by {rel:.3g} "
                                   f"(relative error of norm; "
                                   f"{amp_dtype or 'float32'} allows {tol:g})")
        else:
            atol = FLOAT32_ATOL_OF_MAX * float(ref.abs().max()) if ref.numel() else 0.0
            if not torch.allclose(out, ref, rtol=FLOAT32_RTOL, atol=atol):
                diff = float((out - ref).abs().max())
                return Equivalence(True, False, worst, tol, criterion,
                                   f"output {i} differs from the baseline by up to {diff:.3g} "
                                   f"(allclose rtol={FLOAT32_RTOL:g}, atol={atol:.3g})")
    return Equivalence(True, True, worst, tol, criterion, "")
