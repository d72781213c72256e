"""Time per ``record_function`` annotation, on the CPU and of the GPU work launched in it."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import TEXT, Block, Column, Grid
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.trace_words import window_label

_CAPTION = ("CPU time: union of the spans; GPU work: busy time of the GPU activities "
            "launched inside them")


class PhasesPresenter(Presenter):
    fields = ("phases",)
    order = 210

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        if not a.phases.phases:
            return []
        columns = (Column("annotation", overflow="fold"),
                   *(Column(c, justify="right") for c in (
                       "count", "CPU time", "of window", "GPU work", "of GPU window")))
        rows = tuple((short_name(p.name, 60), f"{p.count:,}", units.duration(p.cpu_total_ns),
                      units.percent(p.share_of_window),
                      units.duration(p.gpu_total_ns) if p.gpu_total_ns else "-",
                      units.percent(p.gpu_share_of_window) if p.gpu_total_ns else "-")
                     for p in a.phases.phases[:view.top])
        # narrow: the names break at their dots and words, the headers at their spaces
        return [Grid(f"Phases (record_function; {window_label(a)})", columns, rows, _CAPTION,
                     caption_left=True, fit={"annotation": TEXT})]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        if not a.phases.phases:
            return []
        rows = [[f"`{ph.name}`", f"{ph.count:,}", units.duration(ph.cpu_total_ns),
                 units.percent(ph.share_of_window),
                 units.duration(ph.gpu_total_ns) if ph.gpu_total_ns else "-",
                 units.percent(ph.gpu_share_of_window) if ph.gpu_total_ns else "-"]
                for ph in a.phases.phases[:view.top]]
        return [f"### Phases ({window_label(a)})", ""] + table(
            ["annotation", "count", "CPU time", "of window", "GPU work", "of GPU window"],
            rows) + [_CAPTION + ".", ""]

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"phases": plain(a.phases.phases)}
