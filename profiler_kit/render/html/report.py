"""The HTML report: one self-contained file with plotly.js embedded, readable offline.

:func:`render` lays out the charts of :mod:`run_charts`, :mod:`trace_charts`
and :mod:`scenario_charts` with the recommendations, the comparison and the run's
parameters. It formats; every number comes from run.json or the analyses.
"""

from __future__ import annotations

import html
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
from profiler_kit.render.html import (
    code_charts,
    diff_charts,
    job_charts,
    roofline_charts,
    run_charts,
    scenario_charts,
    sm_charts,
    trace_charts,
    whatif_charts,
)
from profiler_kit.render.html.figures import Chart, strategy_colors
from profiler_kit.render.wording import prediction_checks, predictions, run_answer, units
from profiler_kit.render.wording.memory_lines import has_memory, section_lines
from profiler_kit.render.wording.trace_words import recommendation_lines, value
from profiler_kit.results import RunResult
from profiler_kit.trace.source import Unreadable

INSTALL_HINT = "pip install 'profkit[report]'"
SECTION_ORDER = (
    run_charts.STRATEGIES,
    trace_charts.STEPS,
    trace_charts.TIME_BY_CLASS,
    diff_charts.STEP_CHANGE,
    whatif_charts.WHATIF,
    trace_charts.ONE_STEP,
    code_charts.BY_MODULE,
    trace_charts.MEMORY,
    sm_charts.SM_EFFICIENCY,
    roofline_charts.ROOFLINE,
    job_charts.ACROSS_RANKS,
)


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


def charts_for(analyses: Sequence[TraceAnalysis], runs: Sequence[RunResult] = (),
               ddp_reports: Sequence[Mapping[str, Any]] = (),
               jobs: Sequence[JobView] = (), comparison: Comparison | None = None
               ) -> list[Chart]:
    """Every chart the inputs have data for, in page order: each strategy (or trace where
    no run names one) in one colour throughout, and no waterfall where the run withholds
    the explanation."""
    names, traces = report_colors(analyses, runs)
    charts: list[Chart] = []
    for run in runs:
        charts += _in_section_of(run, runs, run_charts.run_charts(run, names))
    if not runs:
        charts += [c for c in [trace_charts.profiled_steps_chart(analyses, traces)] if c]
    charts += [c for c in (trace_charts.step_breakdown_chart(analyses),
                           trace_charts.idle_causes_chart(analyses),
                           trace_charts.class_breakdown_chart(analyses, "gpu"),
                           trace_charts.class_breakdown_chart(analyses, "cpu")) if c]
    charts += diff_charts.waterfall_charts(
        comparison, diff_charts.withheld_explanations(comparison, analyses, runs))
    charts += whatif_charts.whatif_charts(analyses, runs)
    charts += trace_charts.timeline_charts(analyses)
    charts += code_charts.module_charts(analyses)
    charts += trace_charts.memory_charts(analyses, traces)
    charts += sm_charts.sm_charts(analyses, traces)
    charts += roofline_charts.roofline_charts(analyses)
    charts += job_charts.job_charts(jobs)
    for run in runs:
        charts += scenario_charts.scenario_charts(run, names)
    for report in ddp_reports:
        charts += scenario_charts.ddp_report_charts(report)
    ids: dict[str, int] = {}
    out = []
    for c in charts:  # ids unique across the page
        n = ids.get(c.id, 0)
        ids[c.id] = n + 1
        out.append(c if n == 0 else replace(c, id=f"{c.id}-{n}"))
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


def _in_section_of(run: RunResult, runs: Sequence[RunResult],
                   charts: list[Chart]) -> list[Chart]:
    """With several runs, each run's strategy charts get their own section."""
    if len(runs) < 2:
        return charts
    return [replace(c, section=f"{c.section}: {run.run_dir.name}") for c in charts]


def render(title: str, analyses: Sequence[TraceAnalysis], comparison: Comparison | None = None,
           runs: Sequence[RunResult] = (),
           ddp_reports: Sequence[Mapping[str, Any]] = (), jobs: Sequence[JobView] = (),
           subtitle: str = "", unreadable: Sequence[Unreadable] = (),
           memory: MemoryReport | None = None, answers: Sequence[str] = ()) -> str:
    """The whole page; ``unreadable`` traces are listed as left out; ``memory`` gives the
    memory section; ``answers``: the answer lines of what is no run (a ``profkit record``
    folder's), first as a run's are. Raises MissingDependency without plotly."""
    plotly, plotly_version = plotly_js()
    charts = charts_for(analyses, runs, ddp_reports, jobs, comparison)
    sections: dict[str, list[Chart]] = {}
    for c in charts:
        sections.setdefault(c.section, []).append(c)
    # said where the waterfall would be, as the console and summary.md say it
    withheld = list(dict.fromkeys(
        diff_charts.withheld_explanations(comparison, analyses, runs).values()))
    if withheld:
        sections.setdefault(diff_charts.STEP_CHANGE, [])
    order = [s for s in SECTION_ORDER if s in sections] + [
        s for s in sections if s not in SECTION_ORDER]
    body: list[str] = [_answer_html(r) for r in runs]
    body += [f'<p class="answer"><strong>{_e(line)}</strong></p>' for line in answers]
    nav: list[tuple[str, str]] = []
    for i, name in enumerate(order):
        anchor = f"s{i}"
        nav.append((anchor, name))
        body.append(f'<h2 id="{anchor}">{_e(name)}</h2>')
        if name == diff_charts.STEP_CHANGE:
            body += [f'<p class="withheld">{_e(line)}</p>' for line in withheld]
        body += [_chart_html(c) for c in sections[name]]
    extra = [
        ("comparison", "Comparison", _comparison_html(comparison, analyses)),
        ("recommendations", "Recommendations", _recommendations_html(analyses)),
        ("memory", "Memory", _memory_html(memory)),
        ("whatif", "Predicted by the what-if replay",
         "".join(_predictions_html(r, len(runs) > 1) for r in runs)),
        ("not-measured", "Skipped and failed", "".join(_not_measured_html(r) for r in runs)),
        ("parameters", "Parameters and environment", "".join(_run_html(r, len(runs) > 1)
                                                            for r in runs)),
        ("traces", "Traces", _traces_html(analyses)),
        ("left-out", "Left out, unreadable", _unreadable_html(unreadable)),
    ]
    for anchor, name, content in extra:
        if content:
            nav.append((anchor, name))
            body.append(f'<h2 id="{anchor}">{_e(name)}</h2>\n{content}')
    template = Template(_asset("report.html"))
    return template.substitute(
        title=_e(title),
        subtitle=_e(subtitle),
        nav=" ".join(f'<a href="#{a}">{_e(n)}</a>' for a, n in nav),
        body="\n".join(body),
        charts=_script_json([c.to_json() for c in charts]),
        css=_asset("report.css"),
        script=_asset("report.js"),
        plotly=plotly.replace("</script", "<\\/script"),
        plotly_version=_e(plotly_version),
        version=_e(_version()),
        written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )


def _asset(name: str) -> str:
    return (resources.files("profiler_kit.render.html") / name).read_text(encoding="utf-8")


def _version() -> str:
    from profiler_kit.version import __version__

    return __version__


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element (no ``</``, no NaN)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def _chart_html(c: Chart) -> str:
    note = f'<p class="note">{_e(c.note)}</p>' if c.note else ""
    return (f'<section class="chart"><h3>{_e(c.title)}</h3>'
            f'<p class="caption">{_e(c.caption)}</p>{note}'
            f'<div class="plot" id="{_e(c.id)}" role="img" aria-label="{_e(c.title)}"></div>'
            "</section>")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]],
           numeric_from: int = 1) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="num">{cell}</td>' if i >= numeric_from else f"<td>{cell}</td>"
            for i, cell in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _comparison_html(c: Comparison | None, analyses: Sequence[TraceAnalysis]) -> str:
    if c is None:
        return ""
    names = {a.label: trace_charts.name_of(a) for a in analyses}
    header = ["metric"] + [names.get(lab, lab) + (" (baseline)" if i == c.baseline else "")
                           for i, lab in enumerate(c.labels)]
    rows = []
    for m in c.metrics:
        cells = [_e(m.label)]
        for i, v in enumerate(m.values):
            text = value(v, m.unit)
            if i != c.baseline and m.deltas[i] is not None:
                text += f" ({units.signed_percent(m.deltas[i])})"
            cells.append(f"<strong>{_e(text)}</strong>" if m.best == i else _e(text))
        rows.append(cells)
    checks = ""
    if c.predictions:
        checks = (f'<h3>Predicted against measured</h3><p class="muted">'
                  f"{_e(prediction_checks.title(c))}.</p>"
                  + _table(prediction_checks.HEAD,
                           [[_e(x) for x in row] for row in prediction_checks.rows(c)],
                           numeric_from=2))
    return ('<p class="muted">Each trace against the baseline; the best value of a row '
            "is in bold.</p>" + _table(header, rows) + checks)


def _memory_html(memory: MemoryReport | None) -> str:
    """Bytes by category at each strategy's peak, then remedies, OOMs and the differences."""
    if memory is None or not has_memory(memory):
        return ""
    names = sorted({n for s in memory.strategies for c in s.categories
                    for n, b in c.by_category.items() if b})
    rows = [[_e(f"{s.label} ({c.device})"), _e(units.nbytes(c.total_bytes)),
             *(_e(units.nbytes(c.by_category.get(n, 0))) for n in names)]
            for s in memory.strategies for c in s.categories]
    table = _table(["strategy", "peak", *names], rows) if rows else ""
    lines = [line for line in section_lines(memory) if ": peak " not in line]
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return ('<p class="muted">At each strategy&#39;s peak, from PyTorch&#39;s memory profiler '
            "(runs made with --with-stack); <code>profkit memory PATH</code> names the lines "
            "of code, the leaks and what fits.</p>" + table
            + (f"<ul>{items}</ul>" if items else ""))


def _recommendations_html(analyses: Sequence[TraceAnalysis]) -> str:
    parts = []
    for a in analyses:
        items = []
        for r in a.recommendations:
            head, body = recommendation_lines(r)
            items.append(f'<li><div class="head">{_e(head)}</div>'
                         f'<div class="evidence">{_e(body)}</div></li>')
        items += [f'<li class="muted">note: {_e(n)}</li>' for n in a.notes]
        if not items:
            items = ['<li class="muted">None fired.</li>']
        name = trace_charts.name_of(a)
        parts.append(f"<h3>{_e(name)}</h3><ul class=\"recs\">{''.join(items)}</ul>")
    return "\n".join(parts)


def _answer_html(run: RunResult) -> str:
    """The run's answer first, and what competed with its timing when anything did."""
    lines = [f'<p class="answer"><strong>{_e(run_answer.answer(run, p))}</strong></p>'
             for p in run.point_labels]
    lines += [f'<p class="busy">{_e(line)}</p>' for p in run.point_labels
              for line in run_answer.oversubscribed(run, p)]
    busy = run_answer.contention_line(run)
    if busy:
        lines.insert(0, f'<p class="busy"><strong>Busy machine:</strong> {_e(busy)}</p>')
    return "\n".join(lines)


def _predictions_html(run: RunResult, headed: bool = False) -> str:
    """Each strategy's predicted step against its measured one, per point."""
    parts = []
    for point in run.point_labels:
        found = predictions.prediction_rows(run, point)
        if found is None:
            continue
        body, notes = found
        title = " ".join(x for x in (run.run_dir.name if headed else "", point) if x)
        parts.append((f"<h3>{_e(title)}</h3>" if title else "")
                     + f'<p class="muted">{_e(predictions.TITLE)}.</p>'
                     + _table(predictions.HEAD, [[_e(c) for c in row] for row in body],
                              numeric_from=2)
                     + ("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>"
                        if notes else ""))
    return "".join(parts)


def _not_measured_html(run: RunResult) -> str:
    rows = [[_e(s.label), _e(s.status), _e(s.reason or s.error or "")]
            for s in run_charts.not_measured(run)]
    return _table(["strategy", "status", "why"], rows, numeric_from=3) if rows else ""


def _run_html(run: RunResult, headed: bool = False) -> str:
    facts: list[tuple[str, Any]] = [
        ("scenario", f"{run.scenario}: {run.description}"),
        ("baseline", run.baseline),
        ("device", run.device),
        ("run", f"{run.run_dir.name} ({run.started_at} to {run.finished_at or 'unfinished'})"
                + (", interrupted" if run.interrupted else "")),
        ("seed", run.seed),
    ]
    for name, group in (("parameter", run.params), ("option", run.options),
                        ("environment", run.environment)):
        facts += [(f"{name}: {k}", _plain(v)) for k, v in group.items()]
    rows = [[_e(k), f"<code>{_e(v)}</code>"] for k, v in facts]
    head = f"<h3>{_e(run.run_dir.name)}</h3>" if headed else ""
    return head + _table(["", "value"], rows, numeric_from=2)


def _plain(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(", ", ": "))
    return str(v)


def _traces_html(analyses: Sequence[TraceAnalysis]) -> str:
    rows = [[_e(a.label), f"<code>{_e(a.path)}</code>", f"{a.events:,}",
             _e(units.duration(a.steps.median_ns)), _e(str(a.steps.count or "-"))]
            for a in analyses]
    return _table(["trace", "file", "events", "median step", "steps"], rows, numeric_from=2)


def _unreadable_html(unreadable: Sequence[Unreadable]) -> str:
    if not unreadable:
        return ""
    rows = [[f"<code>{_e(u.path)}</code>", _e(u.reason)] for u in unreadable]
    return _table(["file", "why it was left out"], rows, numeric_from=2)


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
