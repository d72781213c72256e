"""Why the GPU idled and how the kernels were launched."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.time.launches import Launches
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines, Styled
from profiler_kit.render.wording.trace_words import launch_lines, window_label


def launches_json(launches: Launches | None) -> dict[str, Any] | None:
    """The launch statistics with the totals derived from them."""
    if launches is None:
        return None
    return {**plain(launches), "idle_ns": launches.idle_ns,
            "host_wait_share": launches.host_wait_share}


class LaunchesPresenter(Presenter):
    fields = ("launches", "idle")
    order = 80

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        lines = launch_lines(a) if a.has_gpu else []
        if not lines:
            return []
        return [Lines((Styled(f"GPU idle causes and kernel launches ({window_label(a)})\n"),
                       Styled("\n".join(lines))), "bold")]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        lines = launch_lines(a)
        if not lines:
            return []
        return [f"### GPU idle causes and kernel launches ({window_label(a)})", ""] + [
            f"- {line}" for line in lines] + [""]

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"launches": launches_json(a.launches), "idle_attribution": plain(a.idle)}

    def charts(self, page: Page) -> list[Chart]:
        chart = trace_charts.idle_causes_chart(page.analyses)
        return [chart] if chart else []
