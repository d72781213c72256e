"""The what-if predictions of a run's strategies as text cells (run.json's ``prediction``).

Shared by the console, Markdown and HTML renderers so all show the same columns.
"""

from __future__ import annotations

from typing import Any

import msgspec

from profiler_kit.analysis.core.note import Note
from profiler_kit.render.wording import units
from profiler_kit.render.wording.notes import say
from profiler_kit.results import OK, Prediction, RunResult

HEAD = ["strategy", "what-if", "from", "predicted", "measured", "error",
        "own trace", "error vs trace"]
TITLE = ("Predicted by the what-if replay (from: the counterpart's timed median; predicted: "
         "it times the replay's ratio, the counterpart's profiled step replayed with the "
         "change over without; measured: the timed median; own trace: the strategy's "
         "profiled step, against the replay's)")


def starting_step_ns(result: RunResult, point: str, p: Prediction) -> float | None:
    """What the prediction starts from: the counterpart's timed median where the timed
    step is predicted, else (run.json files written before) its profiled step."""
    if p.timed_ns is not None:
        base = next((s for s in result.at(point) if s.name == p.source and s.stats), None)
        if base is not None and base.stats is not None:
            return base.stats.median_ns
    return p.source_step_ns


def prediction_rows(result: RunResult, point: str
                    ) -> tuple[list[list[str]], list[str]] | None:
    """``(rows, notes)``: a row of ``HEAD`` cells per strategy with a prediction record and
    one note line per strategy (why there is no number, whether it is trusted, what the
    change touched). None when no strategy at the point has a what-if counterpart."""
    rows = [s for s in result.at(point) if s.status == OK and s.prediction is not None]
    if not any(s.prediction and s.prediction.change for s in rows):
        return None
    body: list[list[str]] = []
    notes: list[str] = []
    for s in rows:
        p = s.prediction
        assert p is not None
        if p.change is None:
            body.append([s.name, "-", "-", "-", units.duration(p.measured_ns), "-", "-", "-"])
        else:
            what = f"{p.change} on {p.source}"
            step = p.timed_ns if p.timed_ns is not None else p.predicted_ns
            predicted = units.duration(step) if step is not None else "no prediction"
            if p.predicted_ns is not None and p.trusted is False:
                predicted += " (not trusted)"
            body.append([s.name, what, units.duration(starting_step_ns(result, point, p)),
                         predicted,
                         units.duration(p.measured_ns),
                         units.signed_percent(p.error), units.duration(p.trace_step_ns),
                         units.signed_percent(p.trace_error)])
        note = prediction_note(p)
        if note:
            notes.append(f"{s.name}: {note}")
    return body, notes


def _said(n: dict[str, Any]) -> str:
    return say(msgspec.convert(n, Note))


def prediction_note(p: Prediction) -> str:
    """Why there is no prediction, why it is not trusted, what the change touched, and
    where fixed delays hold much of the steps, that the gain is a lower bound."""
    touched = "; ".join(_said(n) for n in p.replay_notes)
    if p.predicted_ns is None:
        return f"{p.note} ({touched})" if touched else p.note
    text = p.note + touched
    if p.untrusted_because is not None:
        text = f"not trusted: {_said(p.untrusted_because)}; {text}"
    if p.lower_bound_share is not None:
        text += (f"; the gain is a lower bound: the fixed delays of the steps' GPU work come "
                 f"to {p.lower_bound_share:.0%} of the steps' time and do not move")
    return text
