"""``profkit run`` on the console: progress bars while measuring, then the results.

Formats only: every number comes computed in :class:`RunResult`.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from profiler_kit import results
from profiler_kit.analysis.hotspot_summary import CLASSES
from profiler_kit.render.console.fit import WORDS, FitTable
from profiler_kit.render.wording import run_answer, speedup_noise, units
from profiler_kit.render.wording.diff_views import strategy_verdict
from profiler_kit.render.wording.predictions import HEAD as PREDICTION_HEAD
from profiler_kit.render.wording.predictions import TITLE as PREDICTION_TITLE
from profiler_kit.render.wording.predictions import prediction_rows
from profiler_kit.render.wording.workload_rows import has_phases, job_lines, workload_rows
from profiler_kit.results import (
    FAILED,
    INTERRUPTED,
    NOISY_IQR_FRACTION,
    OK,
    SKIPPED,
    RoundContention,
    RunResult,
    StrategyResult,
)

_STATUS_STYLE = {OK: "green", FAILED: "bold red", SKIPPED: "yellow", INTERRUPTED: "magenta"}
# the caption of a table that leaves columns out on a narrow console
LEFT_OUT = "left out at this width: {} (summary.md has every column)"


class ProgressBars:
    """A bar per strategy and pass (building, checking, timing, profiling), removed when done."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=console, transient=True,
        )
        self._label = ""
        self._tasks: dict[str, int] = {}
        self._started = False

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            self._progress.stop()

    def strategy_started(self, label: str) -> None:
        if not self._started:  # started late, so a usage error leaves no empty live display
            self._progress.start()
            self._started = True
        for task in self._tasks.values():
            self._progress.remove_task(task)
        self._tasks = {}
        self._label = label

    def progress(self, pass_name: str, done: int, total: int) -> None:
        if pass_name not in self._tasks:
            self._tasks[pass_name] = self._progress.add_task(
                f"{self._label:<24} {pass_name:<9}", total=total)
        self._progress.update(self._tasks[pass_name], completed=done, total=total)

    def strategy_finished(self, result: StrategyResult) -> None:
        note = ""
        if result.status == OK and result.stats:
            median = result.last_round_median_ns or result.stats.median_ns
            note = f"round {result.rounds}: median {units.duration(median)}"
            if result.contention:
                note += _beside_other_work(result.contention[-1])
            lost = len(result.info.get("files_lost", ()))
            if lost:  # said in full at the end, with the run's report errors
                note += f" (without the traces of {lost} rank{'s' if lost > 1 else ''})"
        elif result.reason or result.error:
            note = result.reason or result.error or ""
        style = _STATUS_STYLE.get(result.status, "")
        self.console.print(Text.assemble(f"  {result.label:<24} ", (result.status, style),
                                         f" {note}"), highlight=False)


def _beside_other_work(c: RoundContention) -> str:
    """What competed with a round, said as it ends: a round that other work slowed many
    times over (two intra-op threads on the one core left free) is then no mystery."""
    if c.oversubscribed_by_others:
        return (f", oversubscribed: {c.own_threads} busy threads on {c.free_cores:.1f} free "
                f"of {c.cores} cores (other processes used {c.taken_cores:.1f})")
    if c.contended:
        return f", beside other processes using {c.taken_cores:.1f} of {c.cores} cores"
    return ""


def _memory(s: StrategyResult) -> str:
    peaks = [v.get("allocated_bytes") for v in s.peak_memory.values()]
    peaks = [p for p in peaks if p is not None]
    return units.nbytes(max(peaks)) if peaks else "-"


def _rank_medians(s: StrategyResult) -> str:
    return " / ".join(units.duration(v) for v in s.rank_medians_ns) or "-"


def results_table(result: RunResult, point: str) -> Table:
    """One row per strategy; the full statistics are in summary.md and run.json."""
    rows = result.at(point)
    top = results.best(rows)
    best = top.name if top else None
    multi = any(s.world_size > 1 for s in rows)
    scaling = multi and any(s.scaling_efficiency is not None for s in rows)
    # on a narrow console the names and the speedups with their marks stay whole: p95,
    # then the profiled step and the peak memory give their room first
    table = FitTable(header_style="bold", kinds={"strategy": WORDS, "IQR": WORDS,
                                                 "rank medians": WORDS},
                     drop=[("p95",), ("profiled",), ("peak mem",), ("rank medians",),
                           ("scaling",)], left_out=LEFT_OUT)
    table.add_column("strategy", no_wrap=True)
    columns = ["median", "IQR", "p95", f"{result.item_unit}/s", "speedup"]
    columns += ["scaling"] if scaling else []
    columns += ["rank medians"] if multi else []
    columns += ["profiled", "peak mem"]
    for col in columns:
        table.add_column(col, justify="right", no_wrap=True)
    for s in rows:
        if s.status == OK and s.stats:
            st = s.stats
            iqr = units.percent(st.iqr_fraction) + (" noisy" if st.noisy else "")
            per_s = s.throughput_items_per_s
            table.add_row(
                s.name + (" (best)" if s.name == best else ""),
                units.duration(st.median_ns), Text(iqr, style="yellow" if st.noisy else ""),
                units.duration(st.p95_ns),
                units.significant(per_s, 4) if per_s is not None else "-",
                Text(speedup_noise.speedup(s),
                     style="dim" if speedup_noise.mark(s.noise) else ""),
                *([units.percent(s.scaling_efficiency)] if scaling else []),
                *([_rank_medians(s)] if multi else []),
                units.duration(s.profiled.median_ns) if s.profiled else "-",
                _memory(s), style="bold green" if s.name == best else "",
            )
        else:
            status = Text(s.status, style=_STATUS_STYLE.get(s.status, ""))
            table.add_row(s.name, status, *["-"] * (len(columns) - 1))
    return table


def hotspot_table(result: RunResult, point: str) -> Table | None:
    rows = [s for s in result.at(point) if s.status == OK and s.hotspots]
    if not rows:
        return None
    basis = rows[0].hotspot_basis
    table = FitTable(caption=f"share of {basis}, from the trace (profkit analyze for more)",
                     caption_justify="left", header_style="bold", kinds={"strategy": WORDS},
                     repeat=1)
    table.add_column("strategy")
    for c in CLASSES:
        table.add_column(c, justify="right")
    for s in rows:
        table.add_row(s.name, *(units.percent(s.hotspots.get(c)) for c in CLASSES))
    return table


def prediction_table(result: RunResult, point: str) -> tuple[Table, list[str]] | None:
    """The what-if predictions of the strategies and their notes (None without any)."""
    found = prediction_rows(result, point)
    if found is None:
        return None
    body, notes = found
    changes = [s.prediction.change for s in result.at(point)
               if s.status == OK and s.prediction is not None and s.prediction.change]
    # narrow: the change names stay whole at the head of their cells, the figures against
    # the strategy's own trace give their room first
    strategy, what_if, source, predicted = PREDICTION_HEAD[:4]
    table = FitTable(header_style="bold",
                     kinds=dict.fromkeys((strategy, what_if, predicted), WORDS),
                     least={what_if: max(map(len, changes), default=0)},
                     drop=[PREDICTION_HEAD[6:], (source,)], left_out=LEFT_OUT)
    for i, name in enumerate(PREDICTION_HEAD):
        table.add_column(name, justify="left" if i < 2 else "right")
    for cells in body:
        table.add_row(*cells)
    return table, notes


def phase_table(result: RunResult, point: str) -> Table | None:
    """Median time of each phase, and the workload's build time and parameter count."""
    rows = workload_rows(result, point)
    if rows is None:
        return None
    head, body = rows
    table = FitTable(header_style="bold", kinds={head[0]: WORDS, "idle per rank": WORDS},
                     drop=[("params",), ("build",)], left_out=LEFT_OUT, repeat=1)
    table.add_column(head[0])
    for name in head[1:]:
        table.add_column(name, justify="right")
    for cells in body:
        table.add_row(*cells)
    return table


def sweep_table(result: RunResult) -> Table | None:
    labels = result.point_labels
    if len(labels) < 2:
        return None
    table = FitTable(header_style="bold", kinds={"strategy": WORDS}, repeat=1)
    table.add_column("strategy")
    for label in labels:
        table.add_column(label, justify="right")
    names: list[str] = []
    for s in result.strategies:
        if s.name not in names:
            names.append(s.name)
    cells = {(s.point, s.name): s for s in result.strategies}
    for name in names:
        row = []
        for label in labels:
            s = cells.get((label, name))
            row.append(units.duration(s.stats.median_ns) if s and s.stats else "-")
        table.add_row(name, *row)
    return table


def render(console: Console, result: RunResult, charts: str = "") -> None:
    """The results of a run: a table per point, hotspots, problems, how to look deeper;
    ``charts`` says where the HTML report is (or why there is none)."""
    def heading(text: str) -> None:
        console.print(Text(text, style="bold"))

    busy = run_answer.contention_line(result)
    if busy:
        console.print(Text("Busy machine: " + busy, style="yellow"), highlight=False)
    for point in result.point_labels:
        console.print(Text(run_answer.answer(result, point), style="bold"), highlight=False)
        for line in run_answer.oversubscribed(result, point):
            console.print(Text(line, style="yellow"), highlight=False)
    for point in result.point_labels:
        heading(f"{result.scenario} on {result.device}" + (f"  [{point}]" if point else ""))
        console.print(results_table(result, point))
        rows = result.at(point)
        legend = speedup_noise.legend(rows, result.baseline, results.best(rows) is not None)
        if legend:
            console.print(Text(legend, style="dim"))
        hot = hotspot_table(result, point)
        if hot is not None:
            heading("Hotspots")
            console.print(hot)
        phases = phase_table(result, point)
        if phases is not None:
            heading("Median time per phase" if has_phases(result, point) else "Workload")
            console.print(phases)
        jobs = job_lines(result, point)
        if jobs:
            heading("Ranks (from the traces; profkit analyze the folder for more)")
            for line in jobs:
                console.print(line, highlight=False, markup=False)
        verdicts = [v for v in map(strategy_verdict, result.at(point)) if v]
        if verdicts:
            heading("Why (the profiled steps' traces against the baseline's, mean per step)")
            for line in verdicts:
                console.print(line, highlight=False, markup=False)
        predicted = prediction_table(result, point)
        if predicted is not None:
            table, notes = predicted
            heading(PREDICTION_TITLE)
            console.print(table)
            for line in notes:
                console.print(line, highlight=False, markup=False, style="dim")
    sweep = sweep_table(result)
    if sweep is not None:
        heading("Median step time across the sweep")
        console.print(sweep)
    noisy = [s.label for s in result.strategies if s.stats and s.stats.noisy]
    if noisy:
        limit = units.percent(NOISY_IQR_FRACTION, 0)
        console.print(f"[yellow]noisy (IQR/median > {limit}):[/] {escape(', '.join(noisy))}; "
                      "rerun with more --iterations or on a quieter machine", highlight=False)
    for s in result.skipped:
        console.print(f"[yellow]skipped[/] {escape(f'{s.label}: {s.reason}')}", highlight=False)
    for s in result.failed:
        console.print(f"[bold red]failed[/] {escape(f'{s.label}: {s.error}')}", highlight=False)
    if result.interrupted:
        console.print("[magenta]interrupted:[/] the strategies that finished are kept",
                      highlight=False)
    console.print(f"results: {result.run_dir / 'run.json'}  report: "
                  f"{result.run_dir / 'summary.md'}", highlight=False, soft_wrap=True,
                  markup=False)
    if charts:
        console.print(f"charts: {charts}", highlight=False, soft_wrap=True, markup=False)
    console.print("view the traces:", highlight=False)
    console.print(f"  {result.tensorboard_command}", highlight=False, soft_wrap=True,
                  markup=False)
