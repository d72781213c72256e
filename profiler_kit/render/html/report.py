"""The HTML report: one self-contained file with plotly.js embedded, readable offline.

:func:`render` lays out the page the presenters of :mod:`profiler_kit.render.sections`
fill, in their order: the charts of each section and the tables and lists that are no
chart, after the run's answer. It formats; every number comes from run.json or the
analyses.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.jobs.job_view import JobView
from profiler_kit.analysis.memory.strategies import MemoryReport
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.errors import MissingDependency
from profiler_kit.render import sections
from profiler_kit.render.html import diff_charts, run_charts
from profiler_kit.render.html.figures import Chart, strategy_colors
from profiler_kit.render.html.markup import e
from profiler_kit.render.sections import Page, Presenter
from profiler_kit.render.wording import run_answer
from profiler_kit.results import RunResult
from profiler_kit.trace.source import Unreadable

INSTALL_HINT = "pip install 'profkit[report]'"


def plotly_js() -> tuple[str, str]:
    """plotly.js (minified) and its version, from the ``plotly`` package's own copy."""
    try:
        text = (resources.files("plotly") / "package_data" / "plotly.min.js").read_text(
            encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        raise MissingDependency(
            f"the HTML report needs plotly (its JavaScript is embedded): {INSTALL_HINT}"
        ) from None
    head = text[:200]
    marker = "plotly.js v"
    version = head[head.index(marker) + len(marker):].split()[0] if marker in head else "?"
    return text, version


def page_of(analyses: Sequence[TraceAnalysis], runs: Sequence[RunResult] = (),
            ddp_reports: Sequence[Mapping[str, Any]] = (), jobs: Sequence[JobView] = (),
            comparison: Comparison | None = None, unreadable: Sequence[Unreadable] = (),
            memory: MemoryReport | None = None) -> Page:
    """What one page shows, each strategy (or trace where no run names one) in one colour
    throughout."""
    names, traces = report_colors(analyses, runs)
    return Page(analyses=analyses, runs=runs, comparison=comparison, jobs=jobs,
                ddp_reports=ddp_reports, unreadable=unreadable, memory=memory,
                strategy_colors=names, trace_colors=traces,
                withheld=diff_charts.withheld_explanations(comparison, analyses, runs))


def charts_for(analyses: Sequence[TraceAnalysis], runs: Sequence[RunResult] = (),
               ddp_reports: Sequence[Mapping[str, Any]] = (),
               jobs: Sequence[JobView] = (), comparison: Comparison | None = None
               ) -> list[Chart]:
    """Every chart the inputs have data for, in page order."""
    page = page_of(analyses, runs, ddp_reports, jobs, comparison)
    return [c for _, charts in _presented(page) for c in charts]


def _presented(page: Page) -> list[tuple[Presenter, list[Chart]]]:
    """Each presenter with its charts, in the presenters' order, each id unique on the
    page."""
    ids: dict[str, int] = {}
    out = []
    for p in sections.PRESENTERS:
        charts = []
        for c in p.charts(page):
            n = ids.get(c.id, 0)
            ids[c.id] = n + 1
            charts.append(c if n == 0 else replace(c, id=f"{c.id}-{n}"))
        out.append((p, charts))
    return out


def report_colors(analyses: Sequence[TraceAnalysis], runs: Sequence[RunResult]
                  ) -> tuple[dict[str, str], dict[str, str]]:
    """The colours of a page: by strategy name (the runs' strategies, in run order), and
    by trace path, a run's trace taking its strategy's colour and any other trace one
    of its own."""
    owners = run_charts.trace_owners(analyses, runs)
    keys = {a.path: owners[a.path][1].name if a.path in owners else f"trace {a.path}"
            for a in analyses}
    palette = strategy_colors([*(s.name for r in runs for s in r.strategies),
                               *keys.values()])
    return palette, {path: palette[key] for path, key in keys.items()}


def render(title: str, analyses: Sequence[TraceAnalysis], comparison: Comparison | None = None,
           runs: Sequence[RunResult] = (),
           ddp_reports: Sequence[Mapping[str, Any]] = (), jobs: Sequence[JobView] = (),
           subtitle: str = "", unreadable: Sequence[Unreadable] = (),
           memory: MemoryReport | None = None, answers: Sequence[str] = ()) -> str:
    """The whole page; ``unreadable`` traces are listed as left out; ``memory`` gives the
    memory section; ``answers``: the answer lines of what is no run (a ``profkit record``
    folder's), first as a run's are. Raises MissingDependency without plotly."""
    plotly, plotly_version = plotly_js()
    page = page_of(analyses, runs, ddp_reports, jobs, comparison, unreadable, memory)
    presented = _presented(page)
    charts = [c for _, found in presented for c in found]
    body: list[str] = [_answer_html(r) for r in runs]
    body += [f'<p class="answer"><strong>{e(line)}</strong></p>' for line in answers]
    nav: list[tuple[str, str]] = []
    for anchor, heading, html, shown in _sections(presented, page):
        anchor = anchor or f"s{len(nav)}"
        nav.append((anchor, heading))
        body.append(f'<h2 id="{anchor}">{e(heading)}</h2>' + (f"\n{html}" if html else ""))
        body += [_chart_html(c) for c in shown]
    template = Template(_asset("report.html"))
    return template.substitute(
        title=e(title),
        subtitle=e(subtitle),
        nav=" ".join(f'<a href="#{a}">{e(n)}</a>' for a, n in nav),
        body="\n".join(body),
        charts=_script_json([c.to_json() for c in charts]),
        css=_asset("report.css"),
        script=_asset("report.js"),
        plotly=plotly.replace("</script", "<\\/script"),
        plotly_version=e(plotly_version),
        version=e(_version()),
        written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )


def _asset(name: str) -> str:
    return (resources.files("profiler_kit.render.html") / name).read_text(encoding="utf-8")


def _version() -> str:
    from profiler_kit.version import __version__

    return __version__


def _script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element (no ``</``, no NaN)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def _sections(presented: Sequence[tuple[Presenter, list[Chart]]], page: Page
              ) -> list[tuple[str | None, str, str, list[Chart]]]:
    """The page's sections in the presenters' order: (anchor, None to number it; title;
    the HTML before the charts; the charts). A chart section opens where its first chart
    comes; a presenter's body with no anchor of its own goes to the chart section of its
    title; one whose HTML is empty is left out."""
    found: dict[tuple[str, str], tuple[str | None, str, list[str], list[Chart]]] = {}
    for p, charts in presented:
        b = p.body(page)
        if b is not None and b.html:
            key = ("chart", b.title) if b.anchor is None else ("body", b.anchor)
            found.setdefault(key, (b.anchor, b.title, [], []))[2].append(b.html)
        for c in charts:
            found.setdefault(("chart", c.section), (None, c.section, [], []))[3].append(c)
    return [(anchor, title, "\n".join(html), shown)
            for anchor, title, html, shown in found.values()]


def _chart_html(c: Chart) -> str:
    note = f'<p class="note">{e(c.note)}</p>' if c.note else ""
    return (f'<section class="chart"><h3>{e(c.title)}</h3>'
            f'<p class="caption">{e(c.caption)}</p>{note}'
            f'<div class="plot" id="{e(c.id)}" role="img" aria-label="{e(c.title)}"></div>'
            "</section>")


def _answer_html(run: RunResult) -> str:
    """The run's answer first, and what competed with its timing when anything did."""
    lines = [f'<p class="answer"><strong>{e(run_answer.answer(run, p))}</strong></p>'
             for p in run.point_labels]
    lines += [f'<p class="busy">{e(line)}</p>' for p in run.point_labels
              for line in run_answer.oversubscribed(run, p)]
    busy = run_answer.contention_line(run)
    if busy:
        lines.insert(0, f'<p class="busy"><strong>Busy machine:</strong> {e(busy)}</p>')
    return "\n".join(lines)


def default_subtitle(runs: Sequence[RunResult], analyses: Sequence[TraceAnalysis]) -> str:
    if len(runs) == 1:
        return f"{runs[0].description} — on {runs[0].device}"
    parts = [f"{len(runs)} runs"] if runs else []
    parts.append(f"{len(analyses)} trace{'s' if len(analyses) != 1 else ''}")
    return ", ".join(parts)


def default_title(run: RunResult | None, paths: Sequence[str | Path]) -> str:
    if run is not None:
        return f"profkit report: {run.scenario} {run.run_dir.name}"
    return "profkit report: " + ", ".join(Path(p).name or str(p) for p in paths[:3]) + (
        f" and {len(paths) - 3} more" if len(paths) > 3 else "")
