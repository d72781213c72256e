"""Markdown report for ``profkit analyze --markdown``. Formats, never computes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render import sections
from profiler_kit.render.sections import View
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


def comparison_section(c: Comparison, top: int = 10, by_shape: bool = False) -> list[str]:
    """The comparison: the presenters' comparison lines, in their order (``by_shape``:
    with the ops by input shape that changed most, as the console with ``--by-shape``)."""
    view = View(top, by_shape=by_shape)
    return [line for p in sections.PRESENTERS for line in p.comparison_markdown(c, view)]


def render(analyses: Sequence[TraceAnalysis], comparison: Comparison | None = None,
           top: int = 10, unreadable: Sequence[Unreadable] = (),
           jobs: Sequence[JobView] = (), by_shape: bool = False) -> str:
    """The comparison, each trace's sections, then each job's (as the console shows them)."""
    out = ["# profkit analysis", ""]
    if unreadable:
        out += [f"**Left out, unreadable:** `{u.path}` ({u.reason})" for u in unreadable]
        out += [""]
    if comparison is not None:
        out += comparison_section(comparison, top, by_shape)
    for a in analyses:
        out += trace_section(a, top)
    for j in jobs:
        out += job_section(j)
    return "\n".join(out) + "\n"
