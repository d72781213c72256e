"""Do two strategies compute the same thing? Compared before anything is timed.

Two rules, chosen by what the baseline's outputs hold:

- **Against the baseline** (``profkit run``): float32 strategies must match the baseline
  with ``allclose`` (scaled by the output's magnitude: random-weight networks produce large
  logits). AMP twins compute in float16/bfloat16, where element-wise closeness is
  meaningless after a hundred layers, so they are held to a relative error of the norm fit
  for their dtype.
- **Against float64** (``profkit tune``, whose baseline also runs in float64: an
  :class:`Outputs`): the rule of PyTorch's benchmark harness (``torch._dynamo.utils.same``
  with ``fp64_ref``, as ``benchmarks/dynamo/common.py`` calls it), written out here. An
  output equal to the float32 baseline's within ``allclose`` passes; else its error against
  the float64 output may be at most a few times (the multiplier) the float32 baseline's own
  error against it, plus a slack by dtype. Outputs of ``COSINE_MIN_NUMEL`` values or more,
  and every output when the model does not run in float64, are held to a cosine similarity
  of 0.99 instead. So an output the float32 baseline itself cannot compute accurately (a
  cancellation, gradients through batch statistics) does not reject a knob that is no
  worse, and one that float32 computes exactly rejects a knob that is wrong.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from profiler_kit.results import Equivalence

FLOAT32_RTOL = 1e-3
FLOAT32_ATOL_OF_MAX = 1e-4  # absolute tolerance, as a fraction of max |reference|
AMP_REL_NORM_TOL = {"float16": 2e-2, "bfloat16": 8e-2}
# float32 on a CUDA device where TF32 is allowed (PyTorch's default for cuDNN convolutions,
# not for matmuls): tensor cores round the inputs to float16's 10 mantissa bits, so a
# strategy whose kernels take TF32 (a Conv1d) differs from one whose kernels do not (a
# Linear) by that rounding. Held to float16's relative error of norm instead of allclose.
TF32_REL_NORM_TOL = AMP_REL_NORM_TOL["float16"]

# ---- the float64 rule (the harness's ``same`` with ``fp64_ref``)
# tol by the candidate's dtype, as the harness's runners set it (float32 1e-4; --amp and
# --float16 1e-3): allclose to the baseline with rtol = tol (atol = tol times the float64
# output's RMS, where the harness's is absolute), and tol / 10 of slack over the multiplier
FLOAT64_RULE_TOL = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 1e-3}
# what reduced precision may add, relative to the float64 output's RMS: the harness compares
# autocast with autocast eager, tune compares it with float32 eager, so the rounding of the
# dtype itself must be allowed for (the relative error of norm the AMP twins are held to)
REDUCED_PRECISION_SLACK = AMP_REL_NORM_TOL
MULTIPLIER = 2.0  # float32: error at most twice the baseline's (plus the slack)
MULTIPLIER_REDUCED = 3.0  # float16/bfloat16, small outputs and 1x1 spatial maps (harness)
SMALL_NUMEL = 1000  # fewer values than this: noise may dominate the RMSE (harness)
COSINE_MIN_NUMEL = 1 << 20  # outputs this large: cosine similarity instead of the RMSE
COSINE_MIN_SIMILARITY = 0.99

ALLCLOSE, RMSE, COSINE = "allclose", "RMSE", "cosine similarity"


class Outputs(list):
    """A baseline's outputs with the same computed in float64, the reference of the float64
    rule. ``float64`` is None when the model did not run in float64 (``float64_note`` says
    why; the outputs are then held to the cosine similarity); ``names`` names each output
    (``output 0``, ``gradient of fc.weight``) for the messages."""

    def __init__(self, tensors: Sequence[Any], float64: Sequence[Any] | None = None,
                 float64_note: str = "", names: Sequence[str] = ()) -> None:
        super().__init__(tensors)
        self.float64 = None if float64 is None else list(float64)
        self.float64_note = float64_note
        self.names = list(names)

    def name(self, i: int) -> str:
        return self.names[i] if i < len(self.names) else f"output {i}"


class Float64Equivalence(Equivalence, frozen=True):
    """The float64 rule's verdict. ``max_rel_error``, ``tolerance`` and ``criterion``
    describe the output that decided (the first that failed, or the one closest to its
    bound): its error (the RMSE over the float64 output's RMS, or 1 - cosine similarity),
    the bound the error was held to, and the comparison; ``baseline_error`` is the float32
    baseline's own error on that output, the same way (None without float64)."""

    baseline_error: float | None = None
    output: str = ""  # the output that decided


@dataclasses.dataclass(frozen=True)
class OutputCheck:
    """One output under the float64 rule."""

    ok: bool
    criterion: str  # ALLCLOSE, RMSE or COSINE
    error: float | None  # the candidate's: RMSE / RMS of the float64 output, or 1 - cosine
    baseline_error: float | None  # the float32 baseline's, the same way
    bound: float  # the most ``error`` may be (allclose: tol)
    rule: str  # the comparison, e.g. "RMSE against float64 <= 2 x the baseline's + 1e-05"
    multiplier: float | None = None  # RMSE: bound = multiplier x baseline_error + slack
    slack: float | None = None


def tf32_tolerance(devices: Sequence[Any]) -> float | None:
    """The float32 tolerance of work on ``devices`` where it may run in TF32, else None."""
    if not any(torch.device(d).type == "cuda" for d in devices):
        return None
    allowed = torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32
    return TF32_REL_NORM_TOL if allowed else None


def snapshot(outputs: Sequence[Any]) -> list[torch.Tensor]:
    """Detached float32 CPU copies, so the reference outlives the baseline's workload (an
    :class:`Outputs` keeps its float64 results, as float64 CPU copies)."""
    copies = [torch.as_tensor(t).detach().to("cpu", torch.float32).clone() for t in outputs]
    if not isinstance(outputs, Outputs):
        return copies
    f64 = None if outputs.float64 is None else [
        torch.as_tensor(t).detach().to("cpu", torch.float64).clone() for t in outputs.float64]
    return Outputs(copies, f64, outputs.float64_note, outputs.names)


def compare(reference: Sequence[torch.Tensor], outputs: Sequence[Any],
            amp_dtype: str | None, amp_tolerance: float | None = None,
            float32_tolerance: float | None = None) -> Equivalence:
    """``amp_tolerance`` overrides the dtype's: a workload whose reduced-precision error
    grows with depth (e.g. training through batch statistics) declares its own.
    ``float32_tolerance`` holds float32 strategies to that relative error of norm instead
    of ``allclose`` (gradients whose kernels sum in another order). Against an
    :class:`Outputs` the float64 rule judges instead (:func:`compare_to_float64`)."""
    if isinstance(reference, Outputs):
        return compare_to_float64(reference, outputs, amp_dtype, amp_tolerance,
                                  float32_tolerance)
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


def _mismatch(reference: Outputs, got: Sequence[torch.Tensor]) -> str:
    """Why ``got`` cannot be compared with ``reference`` (count, shape, non-finite), or ""."""
    if len(got) != len(reference):
        return f"{len(got)} outputs, the baseline has {len(reference)}"
    for i, (ref, out) in enumerate(zip(reference, got, strict=True)):
        name = reference.name(i)
        if ref.shape != out.shape:
            return (f"{name} has shape {tuple(out.shape)}, "
                    f"the baseline's is {tuple(ref.shape)}")
        if not torch.isfinite(out).all():
            return f"{name} has non-finite values"
    return ""


# ---------------------------------------------------------------- the float64 rule


def float64_tolerances(dtype: str, tol: float | None = None,
                       slack: float | None = None) -> tuple[float, float]:
    """The rule's ``tol`` and slack for a candidate computing in ``dtype``: float32's slack
    is tol / 10 (the harness's), reduced precision's the rounding it may add."""
    tol = FLOAT64_RULE_TOL.get(dtype, FLOAT64_RULE_TOL["float32"]) if tol is None else tol
    if slack is None:
        slack = REDUCED_PRECISION_SLACK[dtype] if dtype in REDUCED_PRECISION_SLACK else tol / 10
    return tol, slack


def multiplier(dtype: str, shape: Sequence[int], numel: int, tol: float) -> float:
    """How many times the baseline's error a candidate's may be (the harness's choice)."""
    if (dtype in REDUCED_PRECISION_SLACK or numel < SMALL_NUMEL or tol >= 2e-2
            or (len(shape) == 4 and shape[-1] == shape[-2] == 1)):
        return MULTIPLIER_REDUCED
    return MULTIPLIER


def check_output(baseline: torch.Tensor, candidate: torch.Tensor,
                 float64: torch.Tensor | None, dtype: str = "float32",
                 tol: float | None = None, slack: float | None = None) -> OutputCheck:
    """One output of a candidate computing in ``dtype`` (``float32``, ``bfloat16`` or
    ``float16``) against the float32 baseline's and the float64 one (None when the model
    did not run in float64: cosine similarity to the baseline). Shapes must match and the
    candidate must be finite (see :func:`_mismatch`)."""
    tol, slack = float64_tolerances(dtype, tol, slack)
    b, c = baseline.detach().double().cpu(), candidate.detach().double().cpu()
    r = None if float64 is None else float64.detach().double().cpu()
    if c.numel() == 0:
        return OutputCheck(True, ALLCLOSE, 0.0, 0.0, tol, "no values")
    scale = _rms(r if r is not None else b) or 1.0
    error = None if r is None else _rms(c - r) / scale
    base_error = None if r is None else _rms(b - r) / scale
    if torch.allclose(c, b, rtol=tol, atol=tol * scale):  # the harness's first try
        return OutputCheck(True, ALLCLOSE, error, base_error, tol,
                           f"allclose to the baseline (rtol {tol:g}, atol {tol:g} x RMS)")
    if r is None or c.numel() >= COSINE_MIN_NUMEL:
        target = r if r is not None else b
        cos = _cosine(c, target)
        base_cos = None if r is None else _cosine(b, r)
        return OutputCheck(cos >= COSINE_MIN_SIMILARITY, COSINE, 1.0 - cos,
                           None if base_cos is None else 1.0 - base_cos,
                           1.0 - COSINE_MIN_SIMILARITY,
                           f"cosine similarity to the {'float64' if r is not None else 'baseline'}"
                           f" result >= {COSINE_MIN_SIMILARITY:g}")
    assert error is not None and base_error is not None
    m = multiplier(dtype, tuple(c.shape), c.numel(), tol)
    bound = m * base_error + slack
    return OutputCheck(error <= bound, RMSE, error, base_error, bound,
                       f"RMSE against float64 <= {m:g} x the baseline's + {slack:g}", m, slack)


def _rms(t: torch.Tensor) -> float:
    return float(t.square().mean().sqrt()) if t.numel() else 0.0


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a.flatten(), b.flatten(), dim=0,
                                                       eps=1e-6))


def compare_to_float64(reference: Outputs, outputs: Sequence[Any], amp_dtype: str | None,
                       amp_tolerance: float | None = None,
                       float32_tolerance: float | None = None) -> Float64Equivalence:
    """Every output of a candidate under the float64 rule (:func:`check_output`);
    ``amp_tolerance`` replaces the reduced-precision slack, ``float32_tolerance`` the
    float32 tol. The verdict records the output that decided: the first that failed, or
    the one closest to its bound."""
    dtype = amp_dtype or "float32"
    tol, slack = float64_tolerances(dtype, None if amp_dtype else float32_tolerance,
                                    amp_tolerance if amp_dtype else None)
    got = snapshot(outputs)
    f64 = reference.float64
    usable = f64 is not None and len(f64) == len(reference) and all(
        a.shape == b.shape for a, b in zip(f64, reference, strict=True))
    mismatch = _mismatch(reference, got)
    if mismatch:
        return Float64Equivalence(True, False, None, None, "float64 rule", mismatch)
    decided: tuple[float, int, OutputCheck] | None = None
    for i, (ref, out) in enumerate(zip(reference, got, strict=True)):
        check = check_output(ref, out, f64[i] if usable and f64 is not None else None,
                             dtype, tol, slack)
        if not check.ok:
            decided = (math.inf, i, check)
            break
        closeness = 0.0 if check.criterion == ALLCLOSE or not check.bound else (
            (check.error or 0.0) / check.bound)
        if decided is None or closeness > decided[0]:
            decided = (closeness, i, check)
    if decided is None:
        return Float64Equivalence(True, True, None, None, "float64 rule", "no outputs")
    _, i, check = decided
    name = reference.name(i)
    note = "" if usable else f" ({reference.float64_note or 'no float64 result'})"
    return Float64Equivalence(
        True, check.ok, check.error, check.bound, f"float64 rule: {check.rule}",
        _detail(name, check, dtype) + note, baseline_error=check.baseline_error, output=name)


def _detail(name: str, c: OutputCheck, dtype: str) -> str:
    def g(v: float | None) -> str:
        return "-" if v is None else f"{v:.2g}"

    if c.criterion == ALLCLOSE:
        return f"every output allclose to the baseline's (rtol {c.bound:g})"
    if c.criterion == COSINE:
        what = f"{name}: cosine similarity {1 - (c.error or 0):.4f} ({dtype})"
        if c.baseline_error is not None:
            what += f", the float32 baseline's {1 - c.baseline_error:.4f}"
        if c.ok:
            return f"closest to its bound: {what}; at least {COSINE_MIN_SIMILARITY:g}"
        return f"{what}: below {COSINE_MIN_SIMILARITY:g}"
    what = (f"{name}: error {g(c.error)} against float64 ({dtype}; RMSE / RMS), the "
            f"baseline's {g(c.baseline_error)}")
    bound = f"{c.multiplier:g} x {g(c.baseline_error)} + {c.slack:g} = {g(c.bound)}"
    if c.ok:
        return f"closest to its bound: {what}; allowed {bound}"
    return f"{what}: more than {bound}"
