"""Rich console output for ``profkit analyze`` and ``profkit compare``. Formats, never computes."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from profiler_kit.analysis.compare import Comparison, Metric
from profiler_kit.analysis.jobs.job_view import JobView
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render import sections
from profiler_kit.render.console.blocks import TABLE, renderables
from profiler_kit.render.console.diff_tables import diff_table, shape_table, waterfall_table
from profiler_kit.render.sections import View
from profiler_kit.render.wording import prediction_checks, units
from profiler_kit.render.wording.diff_views import unpaired_line, verdict_lines
from profiler_kit.render.wording.trace_words import (
    SUMMARY_METRICS,
    WHOLE_TRACE_NOTE,
    trace_groups,
    value,
)


def _row(table: Table, *cells: str | Text) -> None:
    """Add a row whose strings are plain text: names like ``[param|cuda]`` are not markup."""
    table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


def trace_view(a: TraceAnalysis, top: int = 10, width: int = 120) -> Group:
    """One trace's sections, in the presenters' order; ``width`` is the console width the
    name columns must fit."""
    view = View(top, width)
    return Group(*(r for p in sections.PRESENTERS for r in renderables(p.console(a, view))))


def comparison_table(c: Comparison, traces: Sequence[int] | None = None) -> Table:
    """Metrics as rows, the traces (all, or those at ``traces``) as columns."""
    shown = list(range(len(c.labels))) if traces is None else list(traces)
    t = Table(title=Text(f"Comparison (baseline: {c.labels[c.baseline]}; best in bold green)"
                         if traces is None else
                         f"Comparison, {', '.join(c.labels[i] for i in shown[1:3])}"
                         f"{' ...' if len(shown) > 3 else ''} against {c.labels[c.baseline]}"),
              **TABLE)
    t.add_column("metric")
    whole = [i for i, w in enumerate(c.windows) if w == "trace"]
    for i in shown:
        mark = " †" if i in whole else ""
        t.add_column(Text(c.labels[i] + mark + (" (baseline)" if i == c.baseline else "")),
                     justify="right", overflow="fold")
    for m in c.metrics:
        _row(t, m.label, *(_cell(m, i, c.baseline) for i in shown))
    if set(whole) & set(shown):
        t.caption = WHOLE_TRACE_NOTE
        t.caption_justify = "left"
    return t


def _cell(m: Metric, i: int, baseline: int) -> Text:
    text = value(m.values[i], m.unit)
    if i != baseline and m.deltas[i] is not None:
        text += f" ({units.signed_percent(m.deltas[i])})"
    return Text(text, style="bold green" if m.best == i else "")


_COLUMN_WIDTH = 16  # a value and its delta
_METRIC_WIDTH = 28


def columns_that_fit(width: int) -> int:
    """Traces side by side in one table at this console width (at least the baseline and
    one other)."""
    return max(2, (width - _METRIC_WIDTH) // _COLUMN_WIDTH)


def comparison_tables(c: Comparison, width: int = 120) -> list[Table]:
    """The comparison as one table when its traces fit side by side; else a summary (one
    row per trace, the headline metrics as columns) and the full table per group of
    traces (traces of one folder together, the baseline in each)."""
    fits = columns_that_fit(width)
    if len(c.labels) <= fits:
        return [comparison_table(c)]
    tables = [summary_table(c, width)]
    for group in trace_groups(c.labels, c.baseline, fits - 1):
        tables.append(comparison_table(c, (c.baseline, *group)))
    return tables


def summary_table(c: Comparison, width: int = 120) -> Table:
    """One row per trace, the headline metrics as columns (as many as fit)."""
    by_key = {m.key: m for m in c.metrics}
    shown = [by_key[k] for k in SUMMARY_METRICS
             if k in by_key and any(v is not None for v in by_key[k].values)]
    room = max(1, (width - 30) // _COLUMN_WIDTH)
    shown = shown[:room]
    t = Table(title=Text(f"Comparison of {len(c.labels)} traces (baseline: "
                         f"{c.labels[c.baseline]}; best in bold green); details per group "
                         "below"), **TABLE)
    t.add_column("trace", overflow="fold")
    for m in shown:
        t.add_column(Text(m.label), justify="right", overflow="fold")
    whole = {i for i, w in enumerate(c.windows) if w == "trace"}
    for i, label in enumerate(c.labels):
        name = label + (" †" if i in whole else "") + (" (baseline)" if i == c.baseline else "")
        _row(t, name, *(_cell(m, i, c.baseline) for m in shown))
    if whole:
        t.caption = WHOLE_TRACE_NOTE
        t.caption_justify = "left"
    return t


def comparison_view(c: Comparison, top: int = 10, width: int = 120,
                    by_shape: bool = False) -> Group:
    """The comparison table (a summary and tables per group when the traces do not fit
    side by side), then per trace its step-time waterfall, the kernels and ops that
    changed most (``by_shape``: and the ops by input shape), and the verdict lines last,
    where the eye lands."""
    parts: list = list(comparison_tables(c, width))
    if c.steps is not None:
        base = c.labels[c.baseline]
        parts += [waterfall_table(w, w.against or base) for w in c.steps.waterfalls
                  if w is not None]
    for kind in ("kernels", "ops"):
        table = diff_table(c, kind, top, width)
        if table is not None:
            parts.append(table)
    if by_shape:
        shapes = shape_table(c, top, width)
        if shapes is not None:
            parts.append(shapes)
    if c.predictions:
        parts.append(prediction_table(c))
    lines = verdict_lines(c)
    if lines:
        verdict = Text("Verdict\n", style="bold")
        for line in lines:
            verdict.append(f"{line}\n")
        parts.append(verdict)
    if c.unpaired:
        parts.append(Text(unpaired_line(c) + "\n", style="dim"))
    return Group(*parts)


def prediction_table(c: Comparison) -> Table:
    """The baseline's what-if predictions against the other traces' measured steps."""
    t = Table(title="Predicted against measured", caption=prediction_checks.title(c),
              caption_justify="left", **TABLE)
    for i, head in enumerate(prediction_checks.HEAD):
        t.add_column(head, justify="right" if i >= 2 else "left")
    for row in prediction_checks.rows(c):
        _row(t, *row)
    return t


def render(console: Console, analyses: Sequence[TraceAnalysis],
           comparison: Comparison | None = None, top: int = 10,
           jobs: Sequence[JobView] = (), by_shape: bool = False) -> None:
    """Print every analysis, then the comparison when there is one, then the job views."""
    for a in analyses:
        console.print(Panel(trace_view(a, top, console.width), box=box.ROUNDED, expand=True))
    if comparison is not None:
        console.print(comparison_view(comparison, top, console.width, by_shape))
    render_jobs(console, jobs)


def render_jobs(console: Console, jobs: Sequence[JobView]) -> None:
    """The job view of every job of several ranks."""
    if jobs:
        from profiler_kit.render.console.job import job_view

        for j in jobs:
            console.print(job_view(j))
