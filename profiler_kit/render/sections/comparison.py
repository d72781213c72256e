"""The comparison's metrics: one table with a column per trace (a summary row per trace
first, then a table per group of traces, when they do not fit side by side), with the
baseline's JSON keys; the report's table also shows the what-if predictions checked."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.compare import Comparison, Metric
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.markup import e, table
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table as md_table
from profiler_kit.render.sections.base import Body, Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Column, Grid, Styled
from profiler_kit.render.wording import prediction_checks, units
from profiler_kit.render.wording.trace_words import (
    SUMMARY_METRICS,
    WHOLE_TRACE_NOTE,
    trace_groups,
    value,
)

_COLUMN_WIDTH = 16  # a value and its delta
_METRIC_WIDTH = 28

# traces side by side in one Markdown table; with more, a summary row per trace comes
# first and the full tables follow per group of traces (the baseline in each)
MAX_COLUMNS = 8


class ComparisonTable(Presenter):
    """Each metric of every trace against the baseline, the best in bold."""
    order = 270

    def comparison_console(self, c: Comparison, view: View) -> list[Block]:
        return list(comparison_tables(c, view.width))

    def comparison_markdown(self, c: Comparison, view: View) -> list[str]:
        whole = _whole(c)
        out = ["## Comparison", "", "Best value in bold.", ""]
        groups = markdown_groups(c)
        if len(groups) > 1:
            shown = _summary_metrics(c)
            rows = [[_trace_name(c, i, whole), *(_md_cell(c, m, i) for m in shown)]
                    for i in range(len(c.labels))]
            out += [f"{len(c.labels)} traces: one row each, then every metric per group of "
                    "traces.", ""] + md_table(["trace", *(m.label for m in shown)], rows)
        for group in groups:
            header = ["metric"] + [_trace_name(c, i, whole) for i in group]
            rows = [[m.label, *(_md_cell(c, m, i) for i in group)] for m in c.metrics]
            out += md_table(header, rows)
        return out + ([WHOLE_TRACE_NOTE + ".", ""] if whole else [])

    def comparison_json(self, c: Comparison) -> dict[str, Any]:
        return {
            "labels": list(c.labels),
            "windows": list(c.windows),
            "baseline": c.labels[c.baseline],
            "metrics": [{**plain(m), "best": c.labels[m.best] if m.best is not None else None}
                        for m in c.metrics],
        }

    def body(self, page: Page) -> Body | None:
        c = page.comparison
        if c is None:
            return None
        names = {a.label: trace_charts.name_of(a) for a in page.analyses}
        whole = _whole(c)
        header = ["metric"] + [names.get(lab, lab) + (" †" if i in whole else "")
                               + (" (baseline)" if i == c.baseline else "")
                               for i, lab in enumerate(c.labels)]
        rows = []
        for m in c.metrics:
            cells = [e(m.label)]
            for i in range(len(m.values)):
                text = _text(c, m, i)
                cells.append(f"<strong>{e(text)}</strong>" if m.best == i else e(text))
            rows.append(cells)
        checks = ""
        if c.predictions:
            checks = (f'<h3>Predicted against measured</h3><p class="muted">'
                      f"{e(prediction_checks.title(c))}.</p>"
                      + table(prediction_checks.HEAD,
                              [[e(x) for x in row] for row in prediction_checks.rows(c)],
                              numeric_from=2))
        return Body("comparison", "Comparison",
                    '<p class="muted">Each trace against the baseline; the best value of a '
                    "row is in bold.</p>" + table(header, rows)
                    + (f'<p class="muted">{e(WHOLE_TRACE_NOTE)}.</p>' if whole else "")
                    + checks)


def _whole(c: Comparison) -> set[int]:
    """The traces whose figures cover the whole trace (no steps)."""
    return {i for i, w in enumerate(c.windows) if w == "trace"}


def _text(c: Comparison, m: Metric, i: int) -> str:
    text = value(m.values[i], m.unit)
    if i != c.baseline and m.deltas[i] is not None:
        text += f" ({units.signed_percent(m.deltas[i])})"
    return text


def _summary_metrics(c: Comparison) -> list[Metric]:
    by_key = {m.key: m for m in c.metrics}
    return [by_key[k] for k in SUMMARY_METRICS
            if k in by_key and any(v is not None for v in by_key[k].values)]


def _trace_name(c: Comparison, i: int, whole: set[int]) -> str:
    return (c.labels[i] + (" †" if i in whole else "")
            + (" (baseline)" if i == c.baseline else ""))


def _md_cell(c: Comparison, m: Metric, i: int) -> str:
    text = _text(c, m, i)
    return f"**{text}**" if m.best == i else text


def _cell(c: Comparison, m: Metric, i: int) -> Styled:
    return Styled(_text(c, m, i), "bold green" if m.best == i else "")


def markdown_groups(c: Comparison) -> list[tuple[int, ...]]:
    """The traces of each side-by-side Markdown table: all of them when they fit, else the
    baseline with each group of a folder's traces."""
    if len(c.labels) <= MAX_COLUMNS:
        return [tuple(range(len(c.labels)))]
    return [(c.baseline, *g) for g in trace_groups(c.labels, c.baseline, MAX_COLUMNS - 1)]


def columns_that_fit(width: int) -> int:
    """Traces side by side in one console table at this width (at least the baseline and
    one other)."""
    return max(2, (width - _METRIC_WIDTH) // _COLUMN_WIDTH)


def comparison_tables(c: Comparison, width: int = 120) -> list[Grid]:
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


def comparison_table(c: Comparison, traces: tuple[int, ...] | None = None) -> Grid:
    """Metrics as rows, the traces (all, or those at ``traces``) as columns."""
    shown = list(range(len(c.labels))) if traces is None else list(traces)
    title = (f"Comparison (baseline: {c.labels[c.baseline]}; best in bold green)"
             if traces is None else
             f"Comparison, {', '.join(c.labels[i] for i in shown[1:3])}"
             f"{' ...' if len(shown) > 3 else ''} against {c.labels[c.baseline]}")
    whole = _whole(c)
    columns = [Column("metric")] + [
        Column(_trace_name(c, i, whole), justify="right", overflow="fold")
        for i in shown]
    return Grid(Styled(title), tuple(columns),
                tuple((m.label, *(_cell(c, m, i) for i in shown)) for m in c.metrics),
                caption=WHOLE_TRACE_NOTE if whole & set(shown) else None, caption_left=True)


def summary_table(c: Comparison, width: int = 120) -> Grid:
    """One row per trace, the headline metrics as columns (as many as fit)."""
    shown = _summary_metrics(c)[:max(1, (width - 30) // _COLUMN_WIDTH)]
    whole = _whole(c)
    columns = [Column("trace", overflow="fold")] + [
        Column(m.label, justify="right", overflow="fold") for m in shown]
    return Grid(Styled(f"Comparison of {len(c.labels)} traces (baseline: "
                       f"{c.labels[c.baseline]}; best in bold green); details per group "
                       "below"), tuple(columns),
                tuple((_trace_name(c, i, whole), *(_cell(c, m, i) for m in shown))
                      for i in range(len(c.labels))),
                caption=WHOLE_TRACE_NOTE if whole else None, caption_left=True)
