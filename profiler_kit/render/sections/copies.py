"""The GPU's copies by direction and memory kind (:mod:`profiler_kit.analysis.time.copies`):
a table of the kinds, and one line where copies go to or from pageable host memory."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.time.copies import Copies, CopyKind
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import Chart, axis, counted_bar
from profiler_kit.render.html.trace_charts import TIME_BY_CLASS, name_of
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import NAMES, WHOLE, Block, Column, Grid, Lines
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.trace_words import window_label

# short headers: the table fits 80 columns with the memory kinds whole (the longest copy:
# in the JSON)
HEADER = ("copy", "count", "/ step", "GPU time", "launched by")


def _label(k: CopyKind) -> str:
    """``HtoD Pageable → Device``; a name not in Kineto's form as it is, cut to fit."""
    return f"{k.direction} {k.source} → {k.destination}" if k.source \
        else short_name(k.direction, 24)


def _rows(c: Copies) -> list[tuple[str, ...]]:
    return [(_label(k), f"{k.count:,}",
             f"{k.count / c.steps:.3g}" if c.steps else "-", units.duration(k.total_ns),
             ", ".join(short_name(op, 32) for op, _ in k.ops) or "-")
            for k in c.kinds]


def _title(a: TraceAnalysis) -> str:
    return f"GPU copies (memcpy) by direction and memory ({window_label(a)})"


def pageable_line(c: Copies) -> str | None:
    """What the copies to or from pageable host memory cost, and what to do (None: none)."""
    kinds = c.pageable
    if not kinds:
        return None
    count, ns = sum(k.count for k in kinds), sum(k.total_ns for k in kinds)
    return (f"{count:,} copies to or from pageable host memory ({units.duration(ns)} on the "
            f"GPU): the driver stages each through a pinned buffer, and one to pageable "
            f"memory makes the host wait; pin the host side (DataLoader(pin_memory=True), "
            f"Tensor.pin_memory()) and copy with non_blocking=True")


class CopiesPresenter(Presenter):
    fields = ("copies",)
    order = 95  # after the idle gaps: copies are among what the GPU waits on

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        if a.copies is None:
            return []
        columns = tuple(Column(h, justify="right" if 1 <= i <= 3 else "left")
                        for i, h in enumerate(HEADER))
        fit = {h: WHOLE for h in HEADER} | {"copy": NAMES, "launched by": NAMES}
        blocks: list[Block] = [Grid(_title(a), columns, tuple(_rows(a.copies)), fit=fit)]
        line = pageable_line(a.copies)
        return blocks + ([Lines.of(line)] if line else [])

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        if a.copies is None:
            return []
        line = pageable_line(a.copies)
        return ([f"### {_title(a)}", ""] + table(HEADER, _rows(a.copies))
                + ([f"- {line}", ""] if line else []))

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"copies": plain(a.copies)}

    def charts(self, page: Page) -> list[Chart]:
        """The copies' GPU time per trace, stacked by direction and memory."""
        rows = [(name_of(a), a.copies.kinds) for a in page.analyses if a.copies is not None]
        if not rows:
            return []
        labels = sorted({_label(k) for _, kinds in rows for k in kinds})
        by_label = [{_label(k): k for k in ks} for _, ks in rows]
        data = []
        for j, label in enumerate(labels):
            kinds = [of_trace.get(label) for of_trace in by_label]
            data.append(counted_bar(j, label, [name for name, _ in rows],
                                    [k.total_ns if k else 0 for k in kinds],
                                    [k.count if k else 0 for k in kinds], label, "copies"))
        return [Chart(
            id="copies", section=TIME_BY_CLASS, title="GPU copies by direction and memory",
            caption="The GPU time of the copies (memcpy) in each trace's window, by "
                    "direction and the memory on either side: copies to or from pageable "
                    "host memory are staged by the driver and make the host wait.",
            data=data,
            layout={"barmode": "stack", "yaxis": axis("GPU time (ms)"), "xaxis": axis("")})]
