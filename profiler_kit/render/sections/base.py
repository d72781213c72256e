"""A presenter: how one analysis reads in every format.

An analysis is two units: a module in its room of ``analysis/`` that computes a typed
result, and one presenter here that says how that result reads: its console blocks, its
Markdown lines, its charts and page sections for the HTML report, its JSON keys. Every
format walks the one ordered list of :data:`profiler_kit.render.sections.PRESENTERS`;
none keeps a list of sections of its own.

A presenter never imports rich: the console gets plain :mod:`.blocks` and
``render/console/blocks`` turns them into rich renderables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from profiler_kit.analysis.compare import Comparison
    from profiler_kit.analysis.jobs.job_view import JobView
    from profiler_kit.analysis.memory.strategies import MemoryReport
    from profiler_kit.analysis.trace_analysis import TraceAnalysis
    from profiler_kit.render.html.figures import Chart
    from profiler_kit.render.sections.blocks import Block
    from profiler_kit.results import RunResult
    from profiler_kit.trace.source import Unreadable


class View(NamedTuple):
    """How much a text format shows: the rows of a top-N table, the console's width, and
    (a comparison, on the console) the ops by input shape."""

    top: int = 10
    width: int = 120
    by_shape: bool = False


@dataclass(frozen=True)
class Page:
    """Everything one HTML report shows: the traces' analyses and the rest of the page."""

    analyses: Sequence[TraceAnalysis] = ()
    runs: Sequence[RunResult] = ()
    comparison: Comparison | None = None
    jobs: Sequence[JobView] = ()
    ddp_reports: Sequence[Mapping[str, Any]] = ()
    unreadable: Sequence[Unreadable] = ()
    memory: MemoryReport | None = None
    strategy_colors: Mapping[str, str] = field(default_factory=dict)  # by strategy name
    trace_colors: Mapping[str, str] = field(default_factory=dict)  # by trace path
    # the comparison's waterfalls not drawn, by trace label, each with the sentence said
    # instead (``report.page_of`` sets it: ``diff_charts.withheld_explanations``)
    withheld: Mapping[str, str] = field(default_factory=dict)


class Body(NamedTuple):
    """A section of the report's page that is no chart: its anchor (None: its title's
    chart section, whose anchor is numbered), its title, its HTML."""

    anchor: str | None
    title: str
    html: str


class Presenter:
    """How one analysis (``fields``: the ``TraceAnalysis`` fields it presents) reads in
    every format. Each hook returns nothing by default: a presenter fills the formats its
    analysis shows in. The ``job_`` hooks read a job (several ranks of one job aligned, a
    ``JobView``) as the others read a trace: the console draws a job's blocks in its own
    panel and Markdown its lines after the traces', the JSON merges its keys into the
    job's object under ``jobs``. The ``comparison_`` hooks read the comparison of several
    traces (a ``Comparison``): the console draws its blocks after the traces' panels,
    Markdown its lines before the traces' sections, the JSON merges its keys into
    ``comparison``."""

    fields: tuple[str, ...] = ()
    # its place in every format: sections.PRESENTERS sorts the presenters by it (each its
    # own number; a new one takes a free number between its neighbours')
    order: int

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        """The console's blocks for one trace."""
        return []

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        """The Markdown lines for one trace."""
        return []

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        """The keys of one trace's JSON object (``docs/analysis-json.md`` lists each)."""
        return {}

    def job_console(self, j: JobView) -> list[Block]:
        """The console's blocks for one job."""
        return []

    def job_markdown(self, j: JobView) -> list[str]:
        """The Markdown lines for one job."""
        return []

    def job_json(self, j: JobView) -> dict[str, Any]:
        """The keys of one job's JSON object (``jobs`` in ``docs/analysis-json.md``)."""
        return {}

    def comparison_console(self, c: Comparison, view: View) -> list[Block]:
        """The console's blocks for the comparison."""
        return []

    def comparison_markdown(self, c: Comparison, view: View) -> list[str]:
        """The Markdown lines for the comparison."""
        return []

    def comparison_json(self, c: Comparison) -> dict[str, Any]:
        """The keys of the comparison's JSON object (``docs/analysis-json.md``)."""
        return {}

    def charts(self, page: Page) -> list[Chart]:
        """The report's charts (each names its section)."""
        return []

    def body(self, page: Page) -> Body | None:
        """A section of the report that is no chart (a table, a list)."""
        return None
