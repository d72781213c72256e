"""The critical path of the median step: what bounds it and the ops and kernels on it."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import Block, Column, Grid, Styled
from profiler_kit.render.sections.breakdown import name_width
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.trace_words import critical_path_shares, critical_path_title


class CriticalPathPresenter(Presenter):
    fields = ("critical_path",)
    order = 150

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        c = a.critical_path
        if c is None or not c.length_ns:
            return []
        room = name_width(view.width)
        columns = (Column("on the path", overflow="ellipsis", no_wrap=True, max_width=room - 6),
                   Column("kind", no_wrap=True, min_width=13),
                   Column("count", justify="right", no_wrap=True, min_width=5),
                   Column("time", justify="right", no_wrap=True, min_width=7),
                   Column("share", justify="right", no_wrap=True, min_width=6))
        rows = [(Styled(label, "bold"), "", "", units.duration(ns), units.percent(share))
                for label, ns, share in critical_path_shares(a)]
        rows += [(short_name(e.name, room - 8),
                  f"{e.category} {e.klass}" if e.klass != "other" else e.category,
                  f"{e.count:,}", units.duration(e.ns), units.percent(e.ns / c.length_ns))
                 for e in c.entries[:view.top]]
        return [Grid(critical_path_title(a), columns, tuple(rows))]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        c = a.critical_path
        if c is None or not c.length_ns:
            return []
        rows = [[f"**{label}**", "", "", units.duration(ns), units.percent(share)]
                for label, ns, share in critical_path_shares(a)]
        rows += [[f"`{short_name(e.name, 60)}`", e.category, f"{e.count:,}",
                  units.duration(e.ns), units.percent(e.ns / c.length_ns)]
                 for e in c.entries[:view.top]]
        return [f"### {critical_path_title(a)}", ""] + table(
            ["on the path", "kind", "count", "time", "share"], rows)

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"critical_path": plain(a.critical_path)}
