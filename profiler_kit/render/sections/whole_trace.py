"""Which window the window figures cover, and the whole trace's figures where that window
is the steps' (in the JSON; the console and Markdown say the whole trace's GPU busy time
under the GPU timeline)."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Presenter
from profiler_kit.render.sections.launches import launches_json
from profiler_kit.render.sections.timeline import timeline_json


class WholeTrace(Presenter):
    fields = ("window", "trace_gpu", "trace_timeline", "trace_phases", "trace_launches")
    order = 230

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"window": a.window, "trace": {
            "gpu_hotspots": plain(a.trace_gpu),
            "timeline": timeline_json(a.trace_timeline),
            "phases": plain(a.trace_phases.phases) if a.trace_phases else [],
            "launches": launches_json(a.trace_launches),
        }}

