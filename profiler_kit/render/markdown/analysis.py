"""Markdown report for ``profkit analyze --markdown``. Formats, never computes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render import sections
from profiler_kit.render.markdown.tables import table as _table
from profiler_kit.render.sections import View
from profiler_kit.render.wording import units
from profiler_kit.render.wording.diff_views import (
    delta_cell,
    per_step_cell,
    signed_duration,
    verdict_lines,
)
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.trace_words import (
    SUMMARY_METRICS,
    WHOLE_TRACE_NOTE,
    trace_groups,
    value,
)
from profiler_kit.trace.source import Unreadable

if TYPE_CHECKING:
    from profiler_kit.analysis.jobs.job_view import JobView


def trace_section(a: TraceAnalysis, top: int = 10) -> list[str]:
    """One trace's sections, in the presenters' order."""
    view = View(top)
    return [line for p in sections.PRESENTERS for line in p.markdown(a, view)]


def job_section(j: JobView) -> list[str]:
    """One job's sections (several ranks aligned), in the presenters' order."""
    return [line for p in sections.PRESENTERS for line in p.job_markdown(j)]


# traces side by side in one Markdown table; with more, a summary row per trace comes
# first and the full tables follow per group of traces (the baseline in each)
MAX_COLUMNS = 8


def _groups(c: Comparison) -> list[tuple[int, ...]]:
    """The traces of each side-by-side table: all of them when they fit, else the baseline
    with each group of a folder's traces."""
    if len(c.labels) <= MAX_COLUMNS:
        return [tuple(range(len(c.labels)))]
    return [(c.baseline, *g) for g in trace_groups(c.labels, c.baseline, MAX_COLUMNS - 1)]


def _metric_cell(c: Comparison, m, i: int) -> str:
    text = value(m.values[i], m.unit)
    if i != c.baseline and m.deltas[i] is not None:
        text += f" ({units.signed_percent(m.deltas[i])})"
    return f"**{text}**" if m.best == i else text


def _trace_name(c: Comparison, i: int, whole: set[int]) -> str:
    return (c.labels[i] + (" †" if i in whole else "")
            + (" (baseline)" if i == c.baseline else ""))


def comparison_section(c: Comparison) -> list[str]:
    whole = {i for i, w in enumerate(c.windows) if w == "trace"}
    out = ["## Comparison", "", "Best value in bold.", ""]
    groups = _groups(c)
    if len(groups) > 1:
        by_key = {m.key: m for m in c.metrics}
        shown = [by_key[k] for k in SUMMARY_METRICS
                 if k in by_key and any(v is not None for v in by_key[k].values)]
        rows = [[_trace_name(c, i, whole), *(_metric_cell(c, m, i) for m in shown)]
                for i in range(len(c.labels))]
        out += [f"{len(c.labels)} traces: one row each, then every metric per group of "
                "traces.", ""] + _table(["trace", *(m.label for m in shown)], rows)
    for group in groups:
        header = ["metric"] + [_trace_name(c, i, whole) for i in group]
        rows = [[m.label, *(_metric_cell(c, m, i) for i in group)] for m in c.metrics]
        out += _table(header, rows)
    return out + ([WHOLE_TRACE_NOTE + ".", ""] if whole else [])


def diff_sections(c: Comparison, top: int) -> list[str]:
    """Verdicts, waterfalls and the op/kernel differences as Markdown lines."""
    out: list[str] = []
    lines = verdict_lines(c)
    if lines:
        out += ["## Verdict", ""] + [f"- {line}" for line in lines] + [""]
    if c.steps is not None:
        base = c.labels[c.baseline]
        for w in c.steps.waterfalls:
            if w is None:
                continue
            rows = [[x.name if x.name != "overlap" else "overlap (−)",
                     units.duration(x.before_ns), units.duration(x.after_ns),
                     signed_duration(x.delta_ns)] for x in w.terms]
            rows.append(["**step**", units.duration(w.before_ns), units.duration(w.after_ns),
                         signed_duration(w.delta_ns)])
            side = "device side" if w.side == "device" else "CPU side"
            ref = w.against or base
            out += [f"### Step time, {w.label} against {ref} ({side}, per step)", ""]
            out += _table(["term", ref, w.label, "change"], rows)
    if c.ops is not None:
        for kind, rows_ in (("kernels", c.ops.kernels), ("ops", c.ops.ops)):
            if not rows_:
                continue
            what = "GPU kernels" if kind == "kernels" else "CPU ops"
            out += [f"### {what} that changed most, per step", ""]
            for group in _groups(c):
                header = ["name", "class"]
                for i in group:
                    header.append(c.labels[i] + (" (base)" if i == c.baseline else ""))
                    if i != c.baseline:
                        header.append("Δ")
                body = []
                for r in rows_[:top]:
                    cells = [f"`{short_name(r.name, 60)}`", r.klass]
                    for i in group:
                        cells.append(per_step_cell(r, i))
                        if i != c.baseline:
                            cells.append(delta_cell(r, i))
                    body.append(cells)
                out += _table(header, body)
    return out


def render(analyses: Sequence[TraceAnalysis], comparison: Comparison | None = None,
           top: int = 10, unreadable: Sequence[Unreadable] = (),
           jobs: Sequence[JobView] = ()) -> str:
    """The comparison, each trace's sections, then each job's (as the console shows them)."""
    out = ["# profkit analysis", ""]
    if unreadable:
        out += [f"**Left out, unreadable:** `{u.path}` ({u.reason})" for u in unreadable]
        out += [""]
    if comparison is not None:
        out += comparison_section(comparison)
        out += diff_sections(comparison, top)
    for a in analyses:
        out += trace_section(a, top)
    for j in jobs:
        out += job_section(j)
    return "\n".join(out) + "\n"
