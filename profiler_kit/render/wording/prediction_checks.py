"""The baseline's what-if predictions against the other traces' measured steps, as text
cells (the comparison's ``predictions``), shared by the console and the HTML report."""

from __future__ import annotations

from profiler_kit.analysis.compare import Comparison
from profiler_kit.render.wording import units

HEAD = ["trace", "what-if", "baseline step", "predicted", "measured", "error"]


def title(c: Comparison) -> str:
    return (f"Predicted from {c.labels[c.baseline]}'s trace (each change its "
            "recommendations priced, the gain applied to its measured step), against each "
            "trace's measured step: the trace that made the change checks the prediction")


def rows(c: Comparison) -> list[list[str]]:
    """One row per trace and change; a prediction not trusted or a lower bound says so."""
    out = []
    for p in c.predictions:
        predicted = units.duration(p.predicted_step_ns)
        if not p.trusted:
            predicted += " (not trusted)"
        elif p.caveat is not None and p.caveat.code == "prediction_lower_bound":
            predicted += " (lower bound)"
        out.append([p.label, f"{p.change} ({', '.join(p.rules)})",
                    units.duration(p.baseline_step_ns), predicted,
                    units.duration(p.measured_step_ns), units.signed_percent(p.error)])
    return out
