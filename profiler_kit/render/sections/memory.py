"""Memory: the peak per device, the ops that allocated most, memory over time."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Column, Grid, Lines
from profiler_kit.render.wording import units
from profiler_kit.render.wording.memory_lines import IN_TRACE_ONLY
from profiler_kit.render.wording.names import short_name


class MemoryPresenter(Presenter):
    fields = ("memory", "memory_timeline")
    order = 200

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        m = a.memory
        if not m.recorded:
            return [Lines.of("Memory: not recorded (no [memory] events; profile with "
                             "profile_memory=True)")]
        columns = tuple(Column(c, justify="left" if c == "device" else "right") for c in (
            "device", "peak allocated", "peak reserved", "allocations", "capacity"))
        rows = tuple((d.device, units.nbytes(d.peak_allocated_bytes),
                      units.nbytes(d.peak_reserved_bytes), f"{d.allocations:,}",
                      units.nbytes(d.capacity_bytes)) for d in m.devices)
        in_trace = [d.device for d in m.devices if not d.counts_before_trace]
        out: list[Block] = [Grid("Memory", columns, rows,
                                 f"{', '.join(in_trace)}: {IN_TRACE_ONLY}" if in_trace else None)]
        if m.top_ops:
            out.append(Grid("Ops that allocated most", (
                Column("op", overflow="fold"), Column("allocations", justify="right"),
                Column("bytes", justify="right")), tuple(
                (short_name(o.name), f"{o.allocations:,}", units.nbytes(o.allocated_bytes))
                for o in m.top_ops[:5])))
        return out

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        m = a.memory
        if not m.recorded:
            return ["Memory: not recorded.", ""]
        rows = [[d.device, units.nbytes(d.peak_allocated_bytes),
                 units.nbytes(d.peak_reserved_bytes), units.nbytes(d.capacity_bytes)]
                for d in m.devices]
        out = ["### Memory", ""] + table(["device", "peak allocated", "peak reserved",
                                          "capacity"], rows)
        in_trace = [d.device for d in m.devices if not d.counts_before_trace]
        if in_trace:
            out += [f"Peak allocated on {', '.join(in_trace)}: {IN_TRACE_ONLY}.", ""]
        if m.top_ops:
            out += ["Allocated most: " + ", ".join(
                f"`{o.name}` {units.nbytes(o.allocated_bytes)}" for o in m.top_ops[:5]), ""]
        return out

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"memory": plain(a.memory), "memory_timeline": plain(a.memory_timeline)}

    def charts(self, page: Page) -> list[Chart]:
        return trace_charts.memory_charts(page.analyses, page.trace_colors or None)
