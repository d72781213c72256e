"""The HTML report's charts of one trace as plotly figures, which show inline in Jupyter and
VS Code: the same builders (:mod:`profiler_kit.render.html`), so a figure in a notebook
and the report's chart draw the same numbers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from profiler_kit.render.html import (
    code_charts,
    diff_charts,
    roofline_charts,
    trace_charts,
)
from profiler_kit.render.html.figures import Chart, class_color
from profiler_kit.render.sections import Page
from profiler_kit.render.sections.sm_occupancy import SmOccupancyPresenter

NEEDS_PLOTLY = "the notebook's figures need plotly: pip install 'profkit[notebook]'"
TIMELINE_MAX_ACTIVITIES = 20_000  # a browser draws this many bars at ease


def _first(charts: list[Chart]) -> Chart | None:
    return charts[0] if charts else None


def _colors(a: Any) -> dict[str, str]:
    return trace_charts.trace_colors([a])


# figure name -> the report's chart of one analysis (None: the trace has no data for it)
CHARTS: dict[str, Callable[[Any], Chart | None]] = {
    "steps": lambda a: (trace_charts.step_breakdown_chart([a])
                        or trace_charts.profiled_steps_chart([a], _colors(a))),
    "hotspots": lambda a: trace_charts.class_breakdown_chart([a], "gpu" if a.has_gpu
                                                             else "cpu"),
    "idle": lambda a: trace_charts.idle_causes_chart([a]),
    "memory": lambda a: _first(trace_charts.memory_charts([a], _colors(a))),
    "roofline": lambda a: _first(roofline_charts.roofline_charts([a])),
    "sm": lambda a: _first(SmOccupancyPresenter().charts(Page([a], trace_colors=_colors(a)))),
    "modules": lambda a: _first(code_charts.module_charts([a])),
}
NAMES = (*CHARTS, "timeline")


def _go() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError:
        from profiler_kit.errors import MissingDependency

        raise MissingDependency(NEEDS_PLOTLY) from None
    return go


def to_figure(chart: Chart) -> Any:
    """A report chart as a ``plotly.graph_objects.Figure``, titled, its caption beneath."""
    go = _go()
    layout = {**chart.layout, "title": {"text": chart.title}}
    fig = go.Figure(data=chart.data, layout=layout)
    caption = " ".join(x for x in (chart.caption, chart.note) if x)
    if caption:
        fig.add_annotation(text=caption, xref="paper", yref="paper", x=0, y=-0.2,
                           showarrow=False, align="left", xanchor="left", yanchor="top")
    return fig


def figure(name: str, analysis: Any, kernels: Callable[[], Any]) -> Any:
    """The figure ``name`` of one trace; ``kernels`` gives its kernels' DataFrame (the
    timeline draws it). A name the trace has no data for raises ValueError, saying why."""
    if name == "timeline":
        return timeline(kernels())
    if name not in CHARTS:
        raise ValueError(f"no figure named {name!r}: one of {', '.join(NAMES)}")
    chart = CHARTS[name](analysis)
    if chart is None:
        raise ValueError(f"{analysis.label}: no {name} figure (the trace has nothing it "
                         f"draws: no GPU, steps, memory events or modules, as it may be)")
    return to_figure(chart)


def waterfall(comparison: Any) -> Any:
    """The step-time change of a comparison, term by term, as the report draws it."""
    charts = diff_charts.waterfall_charts(comparison, {})
    if not charts:
        raise ValueError("no waterfall: the comparison has no step-time change to explain")
    return to_figure(charts[0])


def timeline(kernels: Any) -> Any:
    """The GPU activities on a time axis, one row per device and stream, coloured by
    class (the first ``TIMELINE_MAX_ACTIVITIES``; the title says when there are more)."""
    go = _go()
    shown = kernels.head(TIMELINE_MAX_ACTIVITIES)
    origin = int(kernels["start_ns"].min()) if len(kernels) else 0
    fig = go.Figure()
    for klass, part in shown.groupby("class", sort=False):
        fig.add_trace(go.Bar(
            name=klass, orientation="h",
            y=[f"gpu:{d} stream {s}" for d, s in zip(part["device"], part["stream"],
                                                       strict=True)],
            base=(part["start_ns"] - origin) / 1e6, x=part["dur_ns"] / 1e6,
            marker_color=class_color(klass), hovertext=part["name"],
            hovertemplate="%{hovertext}<br>%{x:.3f} ms<extra>" + klass + "</extra>"))
    more = len(kernels) - len(shown)
    title = "GPU activities" + (f" (the first {len(shown):,} of {len(kernels):,})"
                                if more > 0 else "")
    fig.update_layout(title=title, barmode="overlay", xaxis_title="ms from the first",
                      legend_title="class", yaxis={"autorange": "reversed"})
    return fig

