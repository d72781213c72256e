"""The job view (ranks aligned) in a panel, as a trace's sections are: the presenters'
job blocks (:meth:`~profiler_kit.render.sections.Presenter.job_console`) drawn with rich."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Group
from rich.panel import Panel

from profiler_kit.render import sections
from profiler_kit.render.console.blocks import renderables

if TYPE_CHECKING:
    from profiler_kit.analysis.jobs.job_view import JobView


def job_view(j: JobView) -> Panel:
    """One job's sections, in the presenters' order."""
    return Panel(Group(*(r for p in sections.PRESENTERS for r in renderables(p.job_console(j)))),
                 box=box.ROUNDED, expand=True)
