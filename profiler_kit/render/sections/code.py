"""Time by nn.Module and source line, compiled kernels' ops and CUDA graph replays."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import code_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter


class Code(Presenter):
    fields = ("code",)
    order = 190

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        """Only the keys the trace has something for (so traces without module events,
        stacks, compiled kernels or graph replays keep their document)."""
        c = a.code
        if c is None:
            return {}
        out: dict[str, Any] = {}
        if c.modules:
            out["modules"] = plain(c.modules)
            out["module_steps"] = c.steps
            out["backward_links"] = {"backward_ops": c.backward_ops,
                                     "linked": c.backward_linked}
            out["module_coverage"] = plain(c.coverage)
        if c.lines:
            out["source_lines"] = plain(c.lines)
        if c.compiled:
            out["compiled_kernels"] = plain(c.compiled)
        if c.graph_replays is not None:
            out["graph_replays"] = plain(c.graph_replays)
        return out

    def charts(self, page: Page) -> list[Chart]:
        return code_charts.module_charts(page.analyses)
