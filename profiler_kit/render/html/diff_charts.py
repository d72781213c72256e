"""Why one strategy's step differs from the baseline's: the comparison's step-time
waterfall, term by term (each class's busy time, overlap, idle), per step."""

from __future__ import annotations

from profiler_kit.analysis.compare import Comparison
from profiler_kit.render.html.figures import Chart, axis, ms

STEP_CHANGE = "Why the step time differs"


def waterfall_charts(comparison: Comparison | None) -> list[Chart]:
    """One waterfall per trace against the baseline, or against the same strategy of the
    other side when two sides are paired (none where the sides differ)."""
    if comparison is None or comparison.steps is None:
        return []
    charts = []
    for fall in comparison.steps.waterfalls:
        if fall is None:
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
                "text": [f"{ms(fall.before_ns):.4g} ms",
                         *(f"{ms(t.delta_ns):+.4g} ms" for t in moved),
                         f"{ms(fall.after_ns):.4g} ms"],
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
