"""The run's short hotspot summary, from the same trace analysis as ``profkit analyze``.

Each strategy's first trace (rank 0 for multi-process strategies) is analyzed; the
summary keeps convolution, batchnorm and GEMM and folds every other class into
``other``. GPU kernel time when the trace has kernels, else CPU op self time.
"""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.core.classify import BATCHNORM, CONVOLUTION, GEMM, OTHER
from profiler_kit.analysis.time.hotspots import Breakdown

CLASSES = (CONVOLUTION, BATCHNORM, GEMM, OTHER)


def shares(breakdown: Breakdown) -> dict[str, float]:
    """Share of the breakdown's time per summary class (empty when it has no time)."""
    if breakdown.total_ns <= 0:
        return {}
    kept = {c: breakdown.ns(c) / breakdown.total_ns for c in CLASSES[:-1]}
    kept[OTHER] = max(0.0, 1.0 - sum(kept.values()))
    return kept


def from_traces(trace_files: Sequence[str]) -> tuple[dict[str, float], str]:
    """``(shares, basis)`` for the first of ``trace_files``; ``({}, "")`` when there is none."""
    if not trace_files:
        return {}, ""
    from profiler_kit.analysis.trace_analysis import analyze_table
    from profiler_kit.trace.loader import load

    analysis = analyze_table(load(trace_files[0]))
    if analysis.has_gpu:
        return shares(analysis.gpu), "GPU time"
    return shares(analysis.cpu), "self CPU time"
