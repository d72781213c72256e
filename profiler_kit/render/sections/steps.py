"""The steps: how many, how long, how steady, and what they spent."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines, Styled
from profiler_kit.render.wording import units
from profiler_kit.render.wording.trace_words import step_breakdown_line


class Steps(Presenter):
    fields = ("steps", "step_gpu_busy_share", "step_device_ns", "step_terms")
    order = 30

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        s = a.steps
        if s.source == "window":
            return [Lines.of("Steps: no ProfilerStep# spans; whole trace window "
                             f"{units.duration(s.median_ns)}")]
        h = s.headline_stats
        spread = f", IQR/median {units.percent(h.spread)}" if s.count > 1 else ""
        side = "device-side" if s.headline == "device" else "CPU-side"
        cpu = f"; CPU-side median {units.duration(s.median_ns)}" if s.headline == "device" \
            else ""
        pieces = [Styled(
            f"Steps: {s.count} × ProfilerStep, {side} median {units.duration(h.median_ns)} "
            f"(min {units.duration(h.min_ns)}, max {units.duration(h.max_ns)}{spread}){cpu}")]
        if a.step_gpu_busy_share is not None and a.step_device_ns:
            pieces.append(Styled(
                f"\nGPU busy {units.percent(a.step_gpu_busy_share)} of the device-side step "
                f"time ({units.duration(a.timeline.busy_ns)} in "
                f"{units.duration(a.step_device_ns)})"))
        if s.breakdown is not None:
            pieces.append(Styled("\n" + step_breakdown_line(s.breakdown), "dim"))
        return [Lines(tuple(pieces))]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        s = a.steps
        if s.source == "window":
            return [f"No `ProfilerStep#` spans: whole trace window "
                    f"{units.duration(s.median_ns)}.", ""]
        h = s.headline_stats
        side = "device-side" if s.headline == "device" else "CPU-side"
        cpu = f"; CPU-side median {units.duration(s.median_ns)}" if s.headline == "device" \
            else ""
        out = [f"Steps: {s.count}, {side} median {units.duration(h.median_ns)} (min "
               f"{units.duration(h.min_ns)}, max {units.duration(h.max_ns)}){cpu}.", ""]
        if s.breakdown is not None:
            out += [step_breakdown_line(s.breakdown) + ".", ""]
        return out

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"steps": plain(a.steps), "step_gpu_busy_share": a.step_gpu_busy_share,
                "step_device_ns": a.step_device_ns, "step_terms": plain(a.step_terms)}

    def charts(self, page: Page) -> list[Chart]:
        """Each profiled step (where no run.json times the strategies) and what the steps
        spent."""
        charts = [] if page.runs else [trace_charts.profiled_steps_chart(
            page.analyses, page.trace_colors)]
        charts.append(trace_charts.step_breakdown_chart(page.analyses))
        return [c for c in charts if c is not None]
