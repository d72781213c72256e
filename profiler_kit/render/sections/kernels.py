"""The GPU kernels with the largest total time, with their SM figures where the trace
records them, and the kernels that leave most SMs idle while the GPU reads busy."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import Block, Column, Grid
from profiler_kit.render.sections.breakdown import WIDE_CONSOLE, name_width
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.sm_figures import idle_kernel_lines, limiter_text, occupancy_text


class Kernels(Presenter):
    fields = ("kernels", "attribution")
    order = 110

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        if not a.has_gpu:
            return []
        width = view.width
        sm = {k.name: k for k in a.sm.kernels} if a.sm is not None and a.sm.available \
            else None
        # the SM figures need room: below WIDE_CONSOLE the class (in the table above) and
        # the limiter (in the idle-SM lines below) give theirs to the kernel's name
        wide = sm is None or width >= WIDE_CONSOLE
        room = name_width(width) - (6 if sm is None else 36 if wide else 8)
        columns = [Column("kernel", overflow="ellipsis", no_wrap=True, max_width=room)]
        if wide:
            columns.append(Column("class", no_wrap=True, min_width=13))
        columns += [Column("count", justify="right", no_wrap=True, min_width=5),
                    Column("total", justify="right", no_wrap=True, min_width=7),
                    Column("mean", justify="right", no_wrap=True, min_width=7)]
        if sm is not None:
            columns += [Column(col, justify="left" if col == "limiter" else "right",
                               no_wrap=True, min_width=w)
                        for col, w in (("SM eff.", 7), ("occ.", 6),
                                       ("limiter", 13))[:3 if wide else 2]]
        rows = []
        for k in a.kernels[:view.top]:
            cells = [short_name(k.name, room - 2), *([k.klass] if wide else []),
                     f"{k.count:,}", units.duration(k.total_ns),
                     units.duration(k.total_ns / k.count if k.count else None)]
            if sm is not None:
                f = sm.get(k.name)
                # a kernel Kineto could not estimate (0) reads n/a
                occupancy = occupancy_text(f.achieved_occupancy) if f is not None and \
                    f.achieved_occupancy is not None else "n/a"
                figures = [units.percent(f.sm_efficiency), occupancy,
                           limiter_text(f)] if f is not None else ["-", "-", "-"]
                cells += figures if wide else figures[:2]
            rows.append(tuple(cells))
        idle = idle_kernel_lines(a.sm, max(30, width - 70))
        return [Grid(f"Top GPU kernels (of {len(a.kernels):,} names)", tuple(columns),
                     tuple(rows), "\n".join(idle) if idle else None, caption_left=bool(idle))]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        if not a.has_gpu:
            return []
        rows = [[f"`{short_name(k.name)}`", k.klass, f"{k.count:,}", units.duration(k.total_ns)]
                for k in a.kernels[:view.top]]
        return ["### Top GPU kernels", ""] + table(["kernel", "class", "count", "total"],
                                                   rows) + _idle_kernels(a)

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"kernels": plain(a.kernels), "attribution": plain(a.attribution)}


def _idle_kernels(a: TraceAnalysis) -> list[str]:
    """The kernels that leave most SMs idle while the GPU reads busy, with their launch."""
    sm = a.sm
    if sm is None or not sm.available or not sm.idle_kernels:
        return []
    out = ["SMs left idle while busy (time × (1 − SM efficiency)):", ""]
    for k in sm.idle_kernels:
        config = f"; grid {k.grid_blocks:,} × {k.block_threads}" \
            if k.grid_blocks is not None and k.block_threads is not None else ""
        launch = ", ".join(f"`{x}`" for x in (k.op, k.source) if x)
        out.append(f"- {units.duration(k.idle_sm_ns)} `{short_name(k.name, 80)}` (SM eff. "
                   f"{units.percent(k.sm_efficiency)}, {limiter_text(k)}{config})"
                   + (f", launched by {launch}" if launch else ""))
    return out + [""]
