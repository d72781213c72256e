"""SM efficiency and achieved occupancy: per GPU under its busy time, over time as the
TensorBoard plugin's trace view draws them, and in full in the JSON. The figures come from
:mod:`profiler_kit.analysis.perf.sm_occupancy`; its columns in the tables of GPU time and
kernels are those tables' (:mod:`.gpu_time`, :mod:`.kernels`)."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import Chart, axis, ms, series_color
from profiler_kit.render.html.trace_charts import name_of, trace_colors
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines
from profiler_kit.render.wording.notes import say
from profiler_kit.render.wording.sm_figures import sm_line

SECTION = "Below the busy line"


class SmOccupancyPresenter(Presenter):
    fields = ("sm",)
    order = 60

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        line = sm_line(a.sm)
        return [Lines.of(line)] if line else []

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        line = sm_line(a.sm)
        return [line + ".", ""] if line else []

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        """In full (per step, per kernel, over time) for traces with GPU kernels."""
        sm = a.sm
        if sm is None or (not sm.available and sm.note is None):
            return {}
        return {"sm_occupancy": {**plain(sm),
                                 "note": None if sm.note is None else say(sm.note)}}

    def charts(self, page: Page) -> list[Chart]:
        """One chart of every trace's GPUs: SM efficiency (solid), achieved occupancy
        (dashed). A trace of one GPU takes its (strategy's) colour; one of several GPUs, a
        colour per GPU that no strategy has."""
        colors = page.trace_colors or trace_colors(page.analyses)
        data: list[dict[str, Any]] = []
        for i, a in enumerate(page.analyses):
            if a.sm is None or not a.sm.available:
                continue
            for j, series in enumerate(a.sm.over_time):
                color = (colors[a.path] if len(a.sm.over_time) == 1
                         else series_color(i * 2 + j))
                x = [ms(t - series.start_ns[0]) for t in series.start_ns]
                label = f"{name_of(a)} gpu:{series.device}"
                data.append({
                    "type": "scatter", "mode": "lines", "name": f"{label} SM efficiency",
                    "legendgroup": label, "x": x,
                    "y": [100 * v for v in series.sm_efficiency],
                    "line": {"color": color, "width": 2, "shape": "hv"},
                    "hovertemplate": "%{y:.1f} % SM efficiency at %{x:.4g} ms<extra>"
                                     f"{label}</extra>"})
                data.append({
                    "type": "scatter", "mode": "lines", "name": f"{label} achieved occupancy",
                    "legendgroup": label, "x": x,
                    "y": [None if v is None else 100 * v for v in series.achieved_occupancy],
                    "line": {"color": color, "width": 1.5, "dash": "dash", "shape": "hv"},
                    "hovertemplate": "%{y:.1f} % occupancy at %{x:.4g} ms<extra>"
                                     f"{label}</extra>"})
        if not data:
            return []
        return [Chart(
            id="sm-efficiency", section=SECTION,
            title="SM efficiency and occupancy over time",
            caption="Est. SM efficiency (solid: each kernel's blocks per SM, capped at 1, "
                    "over each bucket's time) and est. achieved occupancy (dashed: Kineto's "
                    "estimate weighted by kernel time) as the TensorBoard plugin estimates "
                    "them, in 100 buckets of the GPU busy window; a gap: no kernel in the "
                    "bucket.",
            data=data,
            layout={"xaxis": axis("ms from the window's start"),
                    "yaxis": axis("%", range=[0, 105])})]
