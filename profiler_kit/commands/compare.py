"""``profkit compare A B C... [--baseline A]``: traces or strategy folders side by side."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from profiler_kit.commands import Command, gate_option
from profiler_kit.commands.analyze import (
    add_output_arguments,
    emit,
    jobs,
    json_to_stdout_before_an_input,
    output_targets,
)

if TYPE_CHECKING:
    from profiler_kit.commands.regression_gate import TimedGate


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="traces, strategy folders or run folders to put side by side")
    add_output_arguments(p)
    gate_option.add_argument(p, "a step time: of two run folders, each strategy of the "
                               "second against the same strategy of the first, by its timed "
                               "steps' median beyond noise; of traces, the device-side step "
                               "per step, where the margin itself stands for noise")


def compare(args: argparse.Namespace) -> int:
    from profiler_kit import api

    targets = output_targets(args)
    same = _same_inputs(args.paths)
    if same:
        print(f"profkit: warning: {same}", file=sys.stderr)
    analyses = api.analyze(args.paths, top=args.top, jobs=jobs(args))
    comparison = api.compare(analyses, args.baseline)
    status = emit(args, analyses, comparison, full=False, jobs=analyses.jobs,
                  targets=targets)
    if args.fail_on_regression is None:
        return status
    from profiler_kit.commands import regression_gate as regression

    timed = _timed_gate(args.paths, args.fail_on_regression)
    lines = [*timed.regressions, *regression.compare_regressions(
        comparison, args.fail_on_regression, timed.gated)]
    for line in [*lines, *timed.unjudged]:
        print(f"profkit: {line}", file=sys.stderr)
    if comparison.unpaired:
        print(f"profkit: {regression.unpaired_line(comparison)}", file=sys.stderr)
    if not lines:
        print(f"profkit: {regression.passed_line(args.fail_on_regression)}", file=sys.stderr)
    return 1 if lines else status


def _same_inputs(paths: list[str]) -> str | None:
    """The line for two inputs that are one file or folder (read once), if any."""
    from pathlib import Path

    seen: dict[Path, str] = {}
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            what = "folder" if key.is_dir() else "file"
            given = f"{p} is given twice: the two inputs are" if seen[key] == p \
                else f"{seen[key]} and {p} are"
            return f"{given} the same {what}, so there is nothing to compare it with"
        seen[key] = p
    return None


def _timed_gate(paths: list[str], limit: float) -> TimedGate:
    """The gate on the timed steps where the two paths are run folders, else nothing."""

    from profiler_kit.commands import regression_gate as regression
    from profiler_kit.results import read_run
    from profiler_kit.sources.inputs import resolve

    runs = resolve(paths).runs
    if len(paths) != 2 or len(runs) != 2:
        return regression.TimedGate((), (), ())
    base, test = (read_run(p) for p in runs)
    return regression.timed_regressions(base, test, limit)


COMMAND = Command("compare", "traces or strategies side by side: step time, hotspots, idle, "
                  "overlap, memory, with deltas against a baseline", add_arguments, compare,
                  data_only=True, prepare_argv=json_to_stdout_before_an_input)
