"""The trace itself: its label, file, devices, rank and events."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines, Styled


class Header(Presenter):
    fields = ("path", "label", "rank", "world_size", "devices", "events")
    order = 20

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        parts = [f"{a.events:,} events"]
        if a.rank is not None:
            parts.insert(0, f"rank {a.rank}" + (f" of {a.world_size}" if a.world_size else ""))
        names = sorted({d.name for d in a.devices if d.name})
        if names:
            parts.insert(0, ", ".join(names))
        elif not a.has_gpu:
            parts.insert(0, "CPU only")
        return [Lines((Styled(a.label), Styled(f"  ({'; '.join(parts)})", "dim")), "bold")]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        return [f"## {a.label}", "", f"`{a.path}` — {a.events:,} events"
                + (f", rank {a.rank}" if a.rank is not None else ""), ""]

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"label": a.label, "path": a.path, "rank": a.rank, "world_size": a.world_size,
                "devices": plain(a.devices), "events": a.events}
