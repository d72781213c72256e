"""The what-ifs as charts of predicted steps: per trace, the replayed step beside the step
predicted with each change its recommendations advise; per run, each strategy's step as
predicted from its counterpart's trace beside the step it measured. Formats only: the
predictions come from :mod:`profiler_kit.analysis.predicted_gains` (recommendations) and
:mod:`profiler_kit.sources.run_predictions` (run.json's ``prediction``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profiler_kit.analysis.core.recommendation import priced_by_change
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import Chart, axis, ms, series_color
from profiler_kit.render.html.trace_charts import name_of
from profiler_kit.render.wording.predictions import starting_step_ns
from profiler_kit.render.wording.recommendation_gain import gain_line
from profiler_kit.results import OK, RunResult

WHATIF = "What if: predicted steps"
_REPLAYED = "#79706e"  # the step every prediction starts from
_NOT_TRUSTED = "#bab0ac"  # a prediction not to read as fact


def whatif_charts(analyses: Sequence[TraceAnalysis], runs: Sequence[RunResult] = ()
                  ) -> list[Chart]:
    """The recommendations' predicted steps of every trace, then each run's predictions."""
    charts = [c for c in (_recommendations_chart(a, i) for i, a in enumerate(analyses)) if c]
    charts += [c for c in (_run_chart(r, i) for i, r in enumerate(runs)) if c]
    return charts


def _recommendations_chart(a: TraceAnalysis, i: int) -> Chart | None:
    by_change = priced_by_change(a.recommendations)
    if not by_change:
        return None
    first = next(iter(by_change.values()))[0]
    labels = ["replayed, no change"] + [f"{change} ({', '.join(r.rule for r in rs)})"
                                        for change, rs in by_change.items()]
    steps = [ms(first.step_ns)] + [ms(rs[0].predicted_step_ns) for rs in by_change.values()]
    colors = [_REPLAYED] + [series_color(0) if rs[0].prediction_trusted else _NOT_TRUSTED
                            for rs in by_change.values()]
    hover = ["the replay of the unchanged trace: the step each prediction starts from"] + [
        gain_line(rs[0]) or "" for rs in by_change.values()]
    data: list[dict[str, Any]] = [{
        "type": "bar", "orientation": "h", "name": name_of(a),
        # top to bottom in rank order: Plotly draws the first category at the bottom
        "y": labels[::-1], "x": steps[::-1], "marker": {"color": colors[::-1]},
        "text": [f"{s:.4g} ms" for s in steps[::-1]], "textposition": "auto",
        "customdata": hover[::-1],
        "hovertemplate": "%{x:.4g} ms: %{customdata}<extra></extra>"}]
    return Chart(
        id=f"whatif-{i}", section=WHATIF, title=f"Predicted step per advised change: {name_of(a)}",
        caption="The trace's dependency graph replayed with its recorded durations (top), "
                "and with the change each recommendation advises, alone (median over the "
                "steps). Grey: a prediction not to read as fact (the replay of the unchanged "
                "trace is off by more than 3 %); a caveat, such as a lower bound, on hover. "
                "profkit whatif tries other changes.",
        data=data,
        layout={"xaxis": axis("step (ms)", rangemode="tozero"), "yaxis": axis(""),
                "showlegend": False, "height": 160 + 40 * len(labels)})


def _run_chart(run: RunResult, i: int) -> Chart | None:
    rows = [s for s in run.strategies if s.status == OK and s.prediction is not None
            and s.prediction.predicted_ns is not None and s.prediction.measured_ns is not None]
    if not rows:
        return None
    labels = [s.label for s in rows]
    predictions = [s.prediction for s in rows if s.prediction is not None]
    data: list[dict[str, Any]] = [
        {"type": "bar", "name": "counterpart, measured", "x": labels,
         "y": [ms(starting_step_ns(run, s.point, p)) for s, p in zip(rows, predictions,
                                                                     strict=True)],
         "marker": {"color": _REPLAYED},
         "customdata": [p.source or "" for p in predictions],
         "hovertemplate": "%{customdata}: %{y:.4g} ms<extra></extra>"},
        {"type": "bar", "name": "predicted with the change", "x": labels,
         "y": [ms(p.timed_ns if p.timed_ns is not None else p.predicted_ns)
               for p in predictions],
         "marker": {"color": [series_color(0) if p.trusted else _NOT_TRUSTED
                              for p in predictions]},
         "customdata": [f"{p.change} on {p.source}" for p in predictions],
         "hovertemplate": "%{customdata}: %{y:.4g} ms predicted<extra></extra>"},
        {"type": "bar", "name": "measured", "x": labels,
         "y": [ms(p.measured_ns) for p in predictions],
         "marker": {"color": series_color(1)},
         "customdata": [f"{100 * p.error:+.1f} %" if p.error is not None else ""
                        for p in predictions],
         "hovertemplate": "measured %{y:.4g} ms (prediction off by %{customdata})"
                          "<extra></extra>"},
    ]
    return Chart(
        id=f"whatif-run-{i}", section=WHATIF, title="Predicted against measured, per strategy",
        caption="For each strategy with a what-if counterpart: the counterpart's timed median "
                "step, the timed step predicted with the change (that median times the "
                "replay's ratio), and the strategy's timed median step. Grey: a prediction "
                "not trusted.",
        data=data,
        layout={"barmode": "group", "yaxis": axis("step (ms)", rangemode="tozero"),
                "xaxis": axis("")})
