"""``profkit tune``'s answer on the console: the ranked table of knobs and stacks (each
once: the run's own tables are in summary.md and report.html), the stacking decisions and
the batch-size sweep. Formats only; the results come measured."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from profiler_kit.render.console.fit import NAMES, TEXT, FitTable
from profiler_kit.render.console.run import ProgressBars
from profiler_kit.render.wording import speedup_noise, units
from profiler_kit.results import OK, SKIPPED, RunResult, StrategyResult


class Progress(ProgressBars):
    """The bars of the knob being checked, timed or profiled, and nothing once it is done:
    each knob is listed once, in the ranked table (``profkit run`` prints a line per
    strategy and round)."""

    def strategy_finished(self, result: StrategyResult) -> None:
        return None


def _memory(s: StrategyResult) -> str:
    peaks = [v.get("allocated_bytes") for v in s.peak_memory.values()]
    peaks = [p for p in peaks if p is not None]
    return units.nbytes(max(peaks)) if peaks else "-"


def _rejected(s: StrategyResult) -> bool:
    return s.equivalence is not None and s.equivalence.checked and not s.equivalence.ok


def ranked(rows: Sequence[StrategyResult]) -> list[StrategyResult]:
    """Timed strategies with the baseline's results, highest throughput first."""
    timed = [s for s in rows if s.status == OK and s.stats and not _rejected(s)]
    return sorted(timed, key=lambda s: (-(s.throughput_items_per_s or 0.0),
                                        s.stats.median_ns if s.stats else 0))


def _compile(s: StrategyResult) -> tuple[str, str]:
    """The first call's compile time, and graph breaks / recompilations during the steps."""
    if "compile_s" not in s.info:
        return "-", "-"
    return (f"{s.info['compile_s']:.1f} s",
            f"{s.info.get('graph_breaks', 0)} / {s.info.get('recompilations', 0)}")


def verdict(n: Any) -> str:
    """The verdict's words only; run.json and summary.md keep its interval. A doubted
    verdict (rounds that disagree, or different contention) says so: it is never beyond
    noise, however large the speedup."""
    if n is None:
        return "baseline"
    if n.doubt == "unstable":
        return "unstable rounds: not judged (rerun on a quieter machine)"
    if n.doubt:
        return f"{n.doubt}: not judged (rerun on a quieter machine)"
    return str(n.state)  # beyond noise, within noise, inconclusive or not judged


def ranked_table(result: RunResult, recommended: str | None) -> Table:
    """Every knob and stack: the ranked ones first, then the rejected, failed and skipped."""
    rows = list(result.at(""))
    order = ranked(rows)
    # narrow: a stack breaks between its knobs, a verdict at its words after its head
    # ("within noise", "unstable rounds") whole, and the compile figures and the peak
    # memory give their room first
    heads = [re.split(r": | \(", verdict(s.noise))[0] for s in order]
    table = FitTable(title="Knobs, ranked (speedup against eager_fp32; compile time is apart "
                     "from the step)", header_style="bold", kinds={"knobs": NAMES, "verdict": TEXT},
                     least={"verdict": max(map(len, heads), default=0)},
                     drop=[("breaks / recompiles",), ("compile",), ("peak mem",)])
    table.add_column("#", justify="right")
    table.add_column("knobs", no_wrap=True)
    for col in ("step (median)", f"{result.item_unit}/s", "speedup", "verdict", "peak mem",
                "compile", "breaks / recompiles"):
        table.add_column(col, justify="right" if col != "verdict" else "left")
    for i, s in enumerate(order, 1):
        per_s = s.throughput_items_per_s
        table.add_row(str(i), s.name + (" (recommended)" if s.name == recommended else ""),
                      units.duration(s.stats.median_ns if s.stats else None),
                      units.significant(per_s, 4) if per_s is not None else "-",
                      speedup_noise.speedup(s), verdict(s.noise), _memory(s), *_compile(s),
                      style="bold green" if s.name == recommended else "")
    for s in rows:
        if s in order:
            continue
        if _rejected(s):
            why = Text(f"rejected: results change ({s.equivalence.detail})", style="red")
        elif s.status == SKIPPED:
            why = Text(f"skipped: {s.reason}", style="dim")
        else:
            why = Text(f"{s.status}: {s.error or s.reason}", style="red")
        table.add_row("-", s.name, "-", "-", "-", why, "-", "-", "-")
    return table


def fit_check_line(check: Any) -> str:
    """The memory fit of the sweep's first two sizes, and whether the other sizes bore it
    out; a ``FitCheck`` of ``profiler_kit.scenarios.tune_batch``, or None."""
    if check is None:
        return ("memory fit: not checked (the device reports no peak per batch size; the "
                "CPU reports none)")
    a, b = check.fitted_on
    line = (f"memory fit from {a} and {b} items: {units.nbytes(check.bytes_per_item)} per "
            f"item + {units.nbytes(max(check.fixed_bytes, 0))} that does not grow")
    if check.predicted_largest is not None:
        line += (f"; largest batch for {units.nbytes(check.device_memory_bytes)}: "
                 f"{check.predicted_largest:,}")
    verdict = {True: "held", False: "did not hold", None: "not checked"}[check.holds]
    return f"{line}; {verdict}: {check.why}"


def sweep_table(points: Sequence[Any], knobs: str, unit: str) -> Table:
    """Throughput per batch size; out-of-memory and sizes not reached say why."""
    table = FitTable(title=f"Batch size sweep ({knobs})", header_style="bold",
                     kinds={"note": TEXT})
    table.add_column("batch", justify="right")
    for col in ("step (median)", f"{unit}/s", "peak mem", "note"):
        table.add_column(col, justify="right" if col != "note" else "left")
    rates = [p.items_per_s for p in points if p.items_per_s]
    top = max(rates) if rates else None
    for p in points:
        if p.status == "ok":
            table.add_row(str(p.batch_size), units.duration(p.median_ns),
                          units.significant(p.items_per_s, 4) if p.items_per_s else "-",
                          units.nbytes(p.peak_bytes) if p.peak_bytes else "-",
                          "highest throughput" if p.items_per_s == top else "",
                          style="bold green" if p.items_per_s == top else "")
        else:
            table.add_row(str(p.batch_size), "-", "-", "-",
                          Text(f"{p.status}: {p.detail}",
                               style="red" if p.status != "not run" else "dim"))
    return table
