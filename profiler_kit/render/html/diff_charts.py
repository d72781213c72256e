"""Why one strategy's step differs from the baseline's: the comparison's step-time
waterfall, term by term (each class's busy time, overlap, idle), per step; withheld, as
the console and summary.md withhold it, where the profiled steps contradict the timing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.noise import explanation_conflict
from profiler_kit.render.html.figures import Chart, axis, ms
from profiler_kit.render.html.run_charts import trace_owners
from profiler_kit.render.wording import units
from profiler_kit.render.wording.diff_views import (
    is_withheld,
    signed_duration,
    strategy_verdict,
    withheld_line,
)
from profiler_kit.results import RunResult

STEP_CHANGE = "Why the step time differs"


def waterfall_charts(comparison: Comparison | None,
                     withheld: Mapping[str, str] | None = None) -> list[Chart]:
    """One waterfall per trace against the baseline, or against the same strategy of the
    other side when two sides are paired (none where the sides differ); none for a trace
    in ``withheld`` (its label: the sentence said instead, see ``withheld_explanations``)."""
    if comparison is None or comparison.steps is None:
        return []
    charts = []
    for fall in comparison.steps.waterfalls:
        if fall is None or fall.label in (withheld or {}):
            continue
        base = fall.against or comparison.labels[comparison.steps.baseline]
        moved = [t for t in fall.terms if t.delta_ns != 0]
        side = ("device side (GPU activities)" if fall.side == "device"
                else "CPU side (op self time)")
        charts.append(Chart(
            id=f"waterfall-{len(charts)}", section=STEP_CHANGE,
            title=f"{fall.label} against {base}",
            caption=f"Per step, {side}: {base}'s step time, then what each term adds or "
                    f"takes away (a class's busy time, overlap, idle), to {fall.label}'s.",
            data=[{
                "type": "waterfall", "orientation": "v", "name": fall.label,
                "measure": ["absolute", *(["relative"] * len(moved)), "total"],
                "x": [base, *(t.name for t in moved), fall.label],
                "y": [ms(fall.before_ns), *(ms(t.delta_ns) for t in moved), ms(fall.after_ns)],
                # the console's units: 3 significant digits, the unit fitting each value
                "text": [units.duration(fall.before_ns),
                         *(signed_duration(t.delta_ns) for t in moved),
                         units.duration(fall.after_ns)],
                "textposition": "outside", "cliponaxis": False,
                "increasing": {"marker": {"color": "#e15759"}},
                "decreasing": {"marker": {"color": "#59a14f"}},
                "totals": {"marker": {"color": "#4e79a7"}},
                "connector": {"line": {"color": "rgba(128,128,128,0.6)", "width": 1}},
                "hovertemplate": "%{x}: %{text}<extra></extra>",
            }],
            layout={"yaxis": axis("ms per step"), "xaxis": axis(""), "showlegend": False},
        ))
    return charts


def withheld_explanations(comparison: Comparison | None, analyses: Sequence[TraceAnalysis],
                          runs: Sequence[RunResult]) -> dict[str, str]:
    """The waterfalls not to draw, by trace label, each with the sentence said instead:
    a run strategy's whose explanation run.json withholds (against the run's baseline,
    the comparison the run made), or, where run.json has no verdict for this comparison
    (another baseline, a run recorded before verdicts), whose profiled steps contradict
    the timed medians of the two strategies by ``noise.explanation_conflict``."""
    if comparison is None or comparison.steps is None or not runs:
        return {}
    owners = trace_owners(analyses, runs)
    by_label = {a.label: owners[a.path] for a in analyses if a.path in owners}
    found: dict[str, str] = {}
    for fall in comparison.steps.waterfalls:
        if fall is None:
            continue
        mine = by_label.get(fall.label)
        base = by_label.get(fall.against or comparison.labels[comparison.steps.baseline])
        if mine is None or base is None:
            continue
        (run, s), (base_run, b) = mine, base
        verdict = strategy_verdict(s)
        if (base_run is run and b.name == run.baseline and b.point == s.point
                and verdict is not None):  # the run's own comparison: as run.json says
            if is_withheld(s):
                found[fall.label] = verdict
            continue
        if s.stats and b.stats and b.stats.median_ns > 0 and fall.before_ns > 0:
            conflict = explanation_conflict(s.stats.median_ns / b.stats.median_ns,
                                            fall.after_ns / fall.before_ns)
            if conflict:
                found[fall.label] = withheld_line(s.name, conflict)
    return found
