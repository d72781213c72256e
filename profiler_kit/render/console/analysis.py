"""Rich console output for ``profkit analyze`` and ``profkit compare``. Formats, never computes."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.panel import Panel

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.jobs.job_view import JobView
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render import sections
from profiler_kit.render.console.blocks import renderables
from profiler_kit.render.sections import View


def trace_view(a: TraceAnalysis, top: int = 10, width: int = 120) -> Group:
    """One trace's sections, in the presenters' order; ``width`` is the console width the
    name columns must fit."""
    view = View(top, width)
    return Group(*(r for p in sections.PRESENTERS for r in renderables(p.console(a, view))))


def comparison_view(c: Comparison, top: int = 10, width: int = 120,
                    by_shape: bool = False) -> Group:
    """The comparison: the presenters' comparison blocks, in their order."""
    view = View(top, width, by_shape)
    return Group(*(r for p in sections.PRESENTERS
                   for r in renderables(p.comparison_console(c, view))))


def job_view(j: JobView) -> Panel:
    """One job's sections (several ranks aligned), in the presenters' order, in a panel
    as a trace's are."""
    return Panel(Group(*(r for p in sections.PRESENTERS for r in renderables(p.job_console(j)))),
                 box=box.ROUNDED, expand=True)


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
    for j in jobs:
        console.print(job_view(j))
