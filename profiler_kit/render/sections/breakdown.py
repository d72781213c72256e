"""A breakdown by class (GPU time, CPU self time) as a console grid and a Markdown table:
what the presenters of GPU and CPU time share."""

from __future__ import annotations

from profiler_kit.analysis.time.hotspots import Breakdown
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.blocks import Column, Grid
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name

WIDE_CONSOLE = 120  # columns from which the top-kernel table shows class and limiter too


def name_width(console_width: int) -> int:
    """Room left for a name column beside four fixed columns, inside the panel."""
    return max(24, console_width - 46)


def breakdown_grid(title: str, bd: Breakdown, what: str, width: int,
                   sm: dict[str, tuple[str, str]] | None = None) -> Grid:
    """Time per class; with ``sm`` (class -> SM efficiency, occupancy as text) two columns
    more, and below WIDE_CONSOLE the counts give their room to the names."""
    counts = sm is None or width >= WIDE_CONSOLE
    room = max(24, width - 68) if sm is not None and counts else \
        name_width(width) if counts else max(20, width - 60)
    times = counts or room >= 33  # at 80 columns the names keep what room there is
    columns = [Column("class", no_wrap=True, min_width=13)]
    if counts:
        columns.append(Column("count", justify="right", no_wrap=True, min_width=5))
    columns += [Column("time", justify="right", no_wrap=True, min_width=7),
                Column("share", justify="right", no_wrap=True, min_width=6)]
    if sm is not None:
        columns += [Column("SM eff.", justify="right", no_wrap=True, min_width=7),
                    Column("occ.", justify="right", no_wrap=True, min_width=6)]
    columns.append(Column(f"top {what} ({'time, ' if times else ''}"
                          f"{'count, ' if counts else ''}name)",
                          overflow="ellipsis", no_wrap=True, max_width=room))
    rows = []
    for c in bd.classes:
        top = "\n".join(
            (f"{units.duration(n.total_ns):>8} " if times else "")
            + (f"×{n.count:<5} " if counts else "")
            + short_name(n.name, room - (18 if counts else 11 if times else 2))
            for n in c.top[:3]
        )
        figures = [] if sm is None else list(sm.get(c.klass, ("-", "-")))
        rows.append((c.klass, *([f"{c.count:,}"] if counts else []),
                     units.duration(c.total_ns), units.percent(c.share), *figures, top))
    return Grid(title, tuple(columns), tuple(rows),
                caption=f"total {units.duration(bd.total_ns)} in {bd.count:,} {what}")


def breakdown_markdown(title: str, bd: Breakdown, what: str,
                       sm: dict[str, tuple[str, str]] | None = None) -> list[str]:
    rows = [
        [c.klass, f"{c.count:,}", units.duration(c.total_ns), units.percent(c.share),
         *(sm.get(c.klass, ("-", "-")) if sm is not None else ()),
         "; ".join(f"`{short_name(n.name, 60)}` {units.duration(n.total_ns)}"
                   for n in c.top[:3])]
        for c in bd.classes
    ]
    figures = ["SM eff.", "occ."] if sm is not None else []
    return [f"### {title}", ""] + table(["class", "count", "time", "share", *figures,
                                         f"top {what}"], rows)
