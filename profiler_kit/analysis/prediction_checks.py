"""The baseline's what-if predictions against the steps the other traces measured.

Where a trace is the run that made a change the baseline's recommendations priced (a
DataLoader-bound script rerun with workers, a model rerun under autocast), the prediction
meets its measurement. Every priced change is set beside every other trace: the reader
knows which change a trace made; profkit does not guess it.

The predicted gain is applied to the baseline's *measured* step (the headline step the
comparison shows), so a replay a little off its own trace does not count as an error of
the prediction: ``predicted = measured_baseline × predicted_replay / replayed``.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from profiler_kit.analysis.core.note import Note
from profiler_kit.analysis.core.recommendation import priced_by_change
from profiler_kit.analysis.trace_analysis import TraceAnalysis


class PredictionCheck(msgspec.Struct, frozen=True):
    """One change the baseline's replay priced, against one other trace's step."""

    label: str  # the trace whose step is the measurement
    change: str  # as ``profkit whatif`` names it
    rules: tuple[str, ...]  # the baseline's rules that advise it
    baseline_step_ns: int  # the baseline's measured step
    predicted_step_ns: int  # that step with the predicted gain
    measured_step_ns: int  # the other trace's measured step
    error: float  # (predicted - measured) / measured
    trusted: bool  # whether the baseline's replay matched its measurement
    caveat: Note | None  # the prediction's caveat, e.g. a lower bound


def check_predictions(analyses: Sequence[TraceAnalysis], base: int,
                      against: Sequence[int | None] | None = None
                      ) -> tuple[PredictionCheck, ...]:
    """Each change priced on the baseline's trace (or, with two sides, on the trace each
    one is paired with: ``against``) beside each other trace's measured step."""
    checks: list[PredictionCheck] = []
    for i, a in enumerate(analyses):
        ref = base if against is None else against[i]
        if ref is None or i == ref or a.window != analyses[ref].window:
            continue  # unpaired, the reference itself, or steps against a whole window
        b = analyses[ref]
        measured, before = a.steps.headline_median_ns, b.steps.headline_median_ns
        if not measured or not before:
            continue
        for change, rules in priced_by_change((*b.recommendations, *b.held_back)).items():
            r = rules[0]
            assert r.step_ns and r.predicted_step_ns is not None
            predicted = before * r.predicted_step_ns / r.step_ns
            checks.append(PredictionCheck(
                label=a.label, change=change, rules=tuple(x.rule for x in rules),
                baseline_step_ns=int(before), predicted_step_ns=round(predicted),
                measured_step_ns=int(measured), error=(predicted - measured) / measured,
                trusted=bool(r.prediction_trusted), caveat=r.prediction_caveat))
    return tuple(checks)
