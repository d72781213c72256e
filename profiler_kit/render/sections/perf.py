"""The perf model: FLOPs, bytes and achieved rates per class and per op shape, against the
hardware's limits."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import roofline_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines, Styled
from profiler_kit.render.wording import perf_tables
from profiler_kit.render.wording.notes import said


def _titled(title: str, lines: list[str]) -> Lines:
    return Lines((Styled("\n" + title + "\n"), Styled("\n".join(lines) + "\n")), "bold")


class Perf(Presenter):
    fields = ("perf",)
    order = 170

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        """Summary, achieved rate per class, the largest op shapes (as plain fixed-width
        text: a rich Table of these cells would double the report's render time)."""
        perf, width = a.perf, view.width
        parts: list[Block] = [Lines.of("\n".join(perf_tables.summary_lines(perf)))]
        room = width - 4  # inside the panel
        narrow = width < 110
        if perf.families:
            header = perf_tables.family_header(perf)
            keep = [i for i, col in enumerate(header) if not (narrow and col == "FLOPs")]
            rows = [tuple(r[i] for i in keep) for r in perf_tables.family_rows(perf)]
            lines = perf_tables.text_table(tuple(header[i] for i in keep), rows, room,
                                           frozenset({0}), ((0, 8),))
            parts.append(_titled("Achieved rate by class (modelled ops)", lines))
        if perf.groups:
            header = perf_tables.group_header(perf)
            rows = perf_tables.group_rows(perf, view.top)
            details = None
            sm = ("SM eff.", "occ.") if perf_tables.has_sm(perf) else ()
            if narrow:  # no mean, bandwidth or intensity; shapes (and SM figures) on a line
                keep = [i for i, col in enumerate(header) if col not in (
                    "mean", "TB/s", "GB/s", "FLOP/B", "dtype, input shapes", *sm)]
                details = [r[-1] + (f"; SM eff. {r[-3]}, occ. {r[-2]}" if sm else "")
                           for r in rows]
            else:  # below 150 columns the SM figures take the mean's and intensity's room
                keep = [i for i, col in enumerate(header)
                        if not (sm and width < 150 and col in ("mean", "FLOP/B"))]
            n = len(keep)
            cols = tuple(header[i] for i in keep)
            lines = perf_tables.text_table(
                cols, [tuple(r[i] for i in keep) for r in rows], room,
                frozenset({0, n - 1} | ({cols.index("bound: % of peak")} if not narrow
                                        else set())),
                ((n - 1, 28), (0, 20), (n - 1, 12)), details)
            parts.append(_titled(f"Ops by input shape (largest total first, "
                                 f"{min(view.top, len(perf.groups))} of "
                                 f"{len(perf.groups):,})", lines))
        return parts

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        out = ["### Perf model", ""] + [line + "  " for line in perf_tables.summary_lines(a.perf)]
        out.append("")
        if a.perf.families:
            out += table(perf_tables.family_header(a.perf), perf_tables.family_rows(a.perf))
        if a.perf.groups:
            rows = [(f"`{r[0]}`", *r[1:]) for r in perf_tables.group_rows(a.perf, view.top)]
            out += ["#### Ops by input shape (largest total first)", ""] + table(
                perf_tables.group_header(a.perf), rows)
        return out

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"perf": {**plain(a.perf), "notes": said(a.perf.notes)}}

    def charts(self, page: Page) -> list[Chart]:
        return roofline_charts.roofline_charts(page.analyses)
