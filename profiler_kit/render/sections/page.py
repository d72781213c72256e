"""The parts of the report's page that are no analysis of one trace: the runs' strategies
and scenario charts, the what-if predictions, the memory report, the run's parameters, the
traces read and those left out (the job across ranks is :mod:`.job`'s, the comparison
:mod:`.comparison`'s and :mod:`.changes`')."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from profiler_kit.render.html import (
    run_charts,
    scenario_charts,
    whatif_charts,
)
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.html.markup import e, table
from profiler_kit.render.sections.base import Body, Page, Presenter
from profiler_kit.render.wording import predictions, units
from profiler_kit.render.wording.memory_lines import has_memory, section_lines
from profiler_kit.results import RunResult


class RunStrategies(Presenter):
    """Each run's strategies side by side (with several runs, a section per run)."""
    order = 10

    def charts(self, page: Page) -> list[Chart]:
        charts = []
        for run in page.runs:
            found = run_charts.run_charts(run, page.strategy_colors)
            if len(page.runs) > 1:
                found = [replace(c, section=f"{c.section}: {run.run_dir.name}") for c in found]
            charts += found
        return charts


class WhatIf(Presenter):
    """Each trace's predicted step per advised change, and each run's predicted strategies
    against their measured steps."""
    order = 140

    def charts(self, page: Page) -> list[Chart]:
        return whatif_charts.whatif_charts(page.analyses, page.runs)


class ScenarioCharts(Presenter):
    """What a scenario draws of its own (N models at once, pipeline schedules, DDP's
    scaling)."""
    order = 260

    def charts(self, page: Page) -> list[Chart]:
        charts = []
        for run in page.runs:
            charts += scenario_charts.scenario_charts(run, page.strategy_colors)
        for report in page.ddp_reports:
            charts += scenario_charts.ddp_report_charts(report)
        return charts


class MemoryReportPresenter(Presenter):
    """Bytes by category at each strategy's peak, then remedies, OOMs and the
    differences."""
    order = 290

    def body(self, page: Page) -> Body | None:
        memory = page.memory
        if memory is None or not has_memory(memory):
            return None
        names = sorted({n for s in memory.strategies for c in s.categories
                        for n, b in c.by_category.items() if b})
        rows = [[e(f"{s.label} ({c.device})"), e(units.nbytes(c.total_bytes)),
                 *(e(units.nbytes(c.by_category.get(n, 0))) for n in names)]
                for s in memory.strategies for c in s.categories]
        grid = table(["strategy", "peak", *names], rows) if rows else ""
        lines = [line for line in section_lines(memory) if ": peak " not in line]
        items = "".join(f"<li>{e(line)}</li>" for line in lines)
        return Body("memory", "Memory",
                    '<p class="muted">At each strategy&#39;s peak, from PyTorch&#39;s memory '
                    "profiler (runs made with --with-stack); <code>profkit memory PATH</code> "
                    "names the lines of code, the leaks and what fits.</p>" + grid
                    + (f"<ul>{items}</ul>" if items else ""))


class RunPredictions(Presenter):
    """Each strategy's predicted step against its measured one, per point."""
    order = 300

    def body(self, page: Page) -> Body | None:
        headed = len(page.runs) > 1
        parts = []
        for run in page.runs:
            for point in run.point_labels:
                found = predictions.prediction_rows(run, point)
                if found is None:
                    continue
                rows, notes = found
                title = " ".join(x for x in (run.run_dir.name if headed else "", point) if x)
                parts.append((f"<h3>{e(title)}</h3>" if title else "")
                             + f'<p class="muted">{e(predictions.TITLE)}.</p>'
                             + table(predictions.HEAD, [[e(c) for c in row] for row in rows],
                                     numeric_from=2)
                             + ("<ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>"
                                if notes else ""))
        return Body("whatif", "Predicted by the what-if replay", "".join(parts))


class NotMeasured(Presenter):
    order = 310
    def body(self, page: Page) -> Body | None:
        parts = []
        for run in page.runs:
            rows = [[e(s.label), e(s.status), e(s.reason or s.error or "")]
                    for s in run_charts.not_measured(run)]
            parts.append(table(["strategy", "status", "why"], rows, numeric_from=3)
                         if rows else "")
        return Body("not-measured", "Skipped and failed", "".join(parts))


class Parameters(Presenter):
    order = 320
    def body(self, page: Page) -> Body | None:
        headed = len(page.runs) > 1
        return Body("parameters", "Parameters and environment",
                    "".join(_run_facts(r, headed) for r in page.runs))


def _run_facts(run: RunResult, headed: bool) -> str:
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
        facts += [(f"{name}: {k}", _fact(v)) for k, v in group.items()]
    rows = [[e(k), f"<code>{e(v)}</code>"] for k, v in facts]
    head = f"<h3>{e(run.run_dir.name)}</h3>" if headed else ""
    return head + table(["", "value"], rows, numeric_from=2)


def _fact(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(", ", ": "))
    return str(v)


class Traces(Presenter):
    order = 330
    def body(self, page: Page) -> Body | None:
        rows = [[e(a.label), f"<code>{e(a.path)}</code>", f"{a.events:,}",
                 e(units.duration(a.steps.median_ns)), e(str(a.steps.count or "-"))]
                for a in page.analyses]
        return Body("traces", "Traces", table(["trace", "file", "events", "median step",
                                               "steps"], rows, numeric_from=2))


class LeftOut(Presenter):
    order = 340
    def body(self, page: Page) -> Body | None:
        if not page.unreadable:
            return None
        rows = [[f"<code>{e(u.path)}</code>", e(u.reason)] for u in page.unreadable]
        return Body("left-out", "Left out, unreadable",
                    table(["file", "why it was left out"], rows, numeric_from=2))
