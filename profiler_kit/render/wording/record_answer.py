"""The first line of a ``profkit record`` folder's report, as a run's report starts with
its answer: how long the script's step takes, where it goes, and what to try first.
Words only: every figure comes from the trace's analysis."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.wording import rules, units
from profiler_kit.render.wording.recommendation_gain import gain_line


def lead(analyses: Sequence[TraceAnalysis]) -> TraceAnalysis:
    """The trace the answer is of: rank 0 (the lowest rank) of a job, else the first."""
    return min(analyses, key=lambda a: (a.rank is None, a.rank or 0))


def answer(analyses: Sequence[TraceAnalysis], label: str = "") -> str | None:
    """``Answer: a step takes 41.2 ms (CPU-side median of 3 recorded steps), convolution
    the most of the CPU op self time (45.1 %); first recommendation: ...``, or None
    without a trace; ``label`` names the recording where a page has several."""
    if not analyses:
        return None
    a = lead(analyses)
    where = f" [{label}]" if label else ""
    if len(analyses) > 1 and a.rank is not None:
        where += f" (rank {a.rank} of {a.world_size or len(analyses)})"
    parts = [_step(a)]
    share = _share(a)
    if share:
        parts.append(share)
    text = f"Answer{where}: " + ", ".join(parts)
    if not a.recommendations:
        return text + "; no recommendation fired"
    first = a.recommendations[0]
    gain = gain_line(first) if first.predicted_gain_pct is not None else None
    return text + f"; first recommendation: {rules.title(first)}" + (f" ({gain})" if gain else "")


def _step(a: TraceAnalysis) -> str:
    s = a.steps
    if s.source == "window" or not s.count:
        return f"no step was found; the recorded window took {units.duration(s.median_ns)}"
    side = "device-side" if s.headline == "device" else "CPU-side"
    return (f"a step takes {units.duration(s.headline_median_ns)} ({side} median of "
            f"{s.count} recorded step{'s' if s.count != 1 else ''})")


def _share(a: TraceAnalysis) -> str:
    """The GPU's busy share of the step where known, and the class that takes the most of
    the time the trace leads with (GPU time on GPU traces, CPU op self time otherwise)."""
    parts = []
    if a.has_gpu and a.step_gpu_busy_share is not None:
        parts.append(f"the GPU busy {units.percent(a.step_gpu_busy_share)} of it")
    bd, what = (a.gpu, "GPU time") if a.has_gpu else (a.cpu, "CPU op self time")
    if bd.classes:
        top = max(bd.classes, key=lambda c: c.share)
        parts.append(f"{top.klass} the most of the {what} ({units.percent(top.share)})")
    return ", ".join(parts)
