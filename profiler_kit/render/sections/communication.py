"""What one trace alone says of its communication: each kind's calls, sizes and bandwidth,
and the time no computation hid (the job view across ranks is :mod:`.job`'s)."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import Block, Column, Grid, Lines
from profiler_kit.render.wording import units


class Communication(Presenter):
    fields = ("communication",)
    order = 220

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        c = a.communication
        if c is None or not c.calls:
            return []
        where = "GPU kernels" if c.on_device else "backend spans on the CPU"
        columns = tuple(Column(col, justify="left" if col == "type" else "right")
                        for col in ("type", "calls", "bytes", "time", "busbw (median)"))
        rows = tuple((k.kind, f"{k.count:,}", units.nbytes(k.size_bytes),
                      units.duration(k.time_ns), units.link_bandwidth(k.median_busbw_bytes_per_s))
                     for k in c.kinds)
        return [Grid(f"Communication ({where}; bandwidth over each call's own time, "
                     "waiting included)", columns, rows),
                Lines.of("exposed communication (no computation beside it): "
                         f"{units.duration(c.exposed_ns)}")]

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        """The calls themselves are in the summaries that ``--summary-only`` writes."""
        c = a.communication
        if c is None:
            return {"communication": None}
        return {"communication": {"on_device": c.on_device, "calls": len(c.calls),
                                  "exposed_ns": c.exposed_ns, "kinds": plain(c.kinds),
                                  "groups": plain(c.groups)}}
