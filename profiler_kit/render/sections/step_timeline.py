"""One representative step as intervals on lanes: the report's mini trace view."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter


class StepTimelinePresenter(Presenter):
    fields = ("step_timeline",)
    order = 180

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"step_timeline": {**plain(a.step_timeline),
                                  "downsampled": a.step_timeline.downsampled}}

    def charts(self, page: Page) -> list[Chart]:
        return trace_charts.timeline_charts(page.analyses)
