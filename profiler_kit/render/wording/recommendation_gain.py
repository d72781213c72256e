"""A recommendation's predicted gain as one line: "step 77.0 → 41.2 ms predicted (−46 %)
with cuda-graphs", or why there is no number to read as fact."""

from __future__ import annotations

from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.render.wording.notes import say
from profiler_kit.render.wording.whatif_notes import replay_miss

_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
# a lower-bound gain under this (percent) is no figure to show: analyze's --min-gain default
MIN_SHOWN_PCT = 2.0


def _steps(a: int, b: int) -> str:
    """Two step times in the unit of the first: ``77.0 → 41.2 ms``."""
    unit, scale = next((u, s) for u, s in _UNITS if abs(a) >= s or u == "ns")
    digits = 1 if abs(a) >= 10 * scale else 2
    return f"{a / scale:.{digits}f} → {b / scale:.{digits}f} {unit}"


def _pct(gain_pct: float) -> str:
    """The step's change: ``−46 %`` for a gain of 46 %, ``+1.5 %`` for a loss."""
    digits = 0 if abs(gain_pct) >= 10 else 1
    text = f"{-gain_pct:+.{digits}f}"
    if float(text) == 0:
        return "±0 %"
    return f"{text} %".replace("-", "−")


def gain_line(r: Recommendation) -> str | None:
    """The predicted step and gain of ``r``, its caveat after it; what stands in for them
    where the change could not be modeled; why there is none for a rule no change models."""
    if r.change is None:
        return f"no prediction: {say(r.no_prediction)}" if r.no_prediction else None
    c = r.prediction_caveat
    caveat = say(c) if c is not None else ""
    if r.predicted_step_ns is None or r.step_ns is None or r.predicted_gain_pct is None:
        return f"no prediction with {r.change}" + (f": {caveat}" if caveat else "")
    if c is not None and c.code == "prediction_lower_bound" \
            and abs(r.predicted_gain_pct) < MIN_SHOWN_PCT:
        # ±0 % as a lower bound reads as "no gain": say what holds the step instead
        return f"no gain the replay can show with {r.change}: {caveat}"
    figures = (f"step {_steps(r.step_ns, r.predicted_step_ns)} predicted "
               f"({_pct(r.predicted_gain_pct)}) with {r.change}")
    if not r.prediction_trusted:
        why = replay_miss(c.figures) if c is not None else ""  # prediction_not_trusted's
        return f"prediction with {r.change} not trusted ({why}); it reads " \
               f"step {_steps(r.step_ns, r.predicted_step_ns)}"
    return figures + (f"; {caveat}" if caveat else "")
