"""CPU op self time by class."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block
from profiler_kit.render.sections.breakdown import breakdown_grid, breakdown_markdown


class CpuTime(Presenter):
    fields = ("cpu",)
    order = 120

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        if not a.cpu.count:
            return []
        return [breakdown_grid("CPU ops by self time", a.cpu, "ops", view.width)]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        if not a.cpu.count:
            return []
        return breakdown_markdown("CPU ops by self time", a.cpu, "ops")

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"cpu_hotspots": plain(a.cpu)}

    def charts(self, page: Page) -> list[Chart]:
        chart = trace_charts.class_breakdown_chart(page.analyses, "cpu")
        return [chart] if chart else []
