"""GPU time by class (kernels, memcpy, memset), with the SM figures per class where the
trace records them, and per GPU where it has several."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block
from profiler_kit.render.sections.breakdown import breakdown_grid, breakdown_markdown
from profiler_kit.render.wording.sm_figures import class_figures
from profiler_kit.render.wording.trace_words import window_label


class GpuTime(Presenter):
    fields = ("gpu", "gpu_by_device")
    order = 100

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        if not a.has_gpu:
            return []
        return [breakdown_grid(f"GPU time by class ({window_label(a)})", a.gpu, "kernels",
                               view.width, class_figures(a.sm))] + [
            breakdown_grid(f"GPU time by class, gpu:{dev}", bd, "kernels", view.width)
            for dev, bd in a.gpu_by_device]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        if not a.has_gpu:
            return []
        return breakdown_markdown(f"GPU time by class ({window_label(a)})", a.gpu, "kernels",
                                  class_figures(a.sm))

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"gpu_hotspots": plain(a.gpu), "gpu_hotspots_by_device": [
            {"device": dev, **plain(bd)} for dev, bd in a.gpu_by_device]}

    def charts(self, page: Page) -> list[Chart]:
        chart = trace_charts.class_breakdown_chart(page.analyses, "gpu")
        return [chart] if chart else []

