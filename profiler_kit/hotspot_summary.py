"""A first look at where time goes, from one strategy's key averages.

The classes come from op names alone: a small set of rules, kept in :func:`classify`
so a finer analysis (kernels linked to ops through the trace) can replace it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

CLASSES = ("convolution", "batchnorm", "gemm", "other")

_GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
             "aten::linear", "aten::_addmm_activation", "aten::addbmm"}


def classify(name: str) -> str:
    """``aten::mkldnn_convolution`` -> ``convolution``; kernels by their names too."""
    n = name.lower()
    if "conv" in n and "convert" not in n:
        return "convolution"
    if "batch_norm" in n or "batchnorm" in n or "bn_fw" in n or "bn_bw" in n:
        return "batchnorm"
    if n in _GEMM_OPS or "gemm" in n or "matmul" in n:
        return "gemm"
    return "other"


def _is_span(row: Mapping[str, Any]) -> bool:
    """Profiler steps and user annotations: on the device their time is their children's."""
    return bool(row.get("is_user_annotation")) or str(row["name"]).startswith("ProfilerStep")


def shares(rows: Iterable[Mapping[str, Any]]) -> tuple[dict[str, float], str]:
    """Share of self time per class, on the device when there is device time, else CPU.

    On the CPU the self time of spans (Python and framework time between ops) counts
    as ``other``; on the device spans are left out, since they repeat their kernels' time.
    """
    rows = list(rows)
    device_total = sum(int(r.get("self_device_time_ns", 0)) for r in rows if not _is_span(r))
    if device_total > 0:
        key, basis = "self_device_time_ns", "self device time"
        rows = [r for r in rows if not _is_span(r)]
    else:
        key, basis = "self_cpu_time_ns", "self CPU time"
    totals = dict.fromkeys(CLASSES, 0)
    for r in rows:
        totals[classify(str(r["name"]))] += int(r.get(key, 0))
    grand = sum(totals.values())
    if grand <= 0:
        return {}, basis
    return {c: totals[c] / grand for c in CLASSES}, basis
