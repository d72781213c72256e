"""``profkit compare A B C... [--baseline A]``: traces or strategy folders side by side."""

from __future__ import annotations

import argparse
import sys

from profiler_kit.commands import Command
from profiler_kit.commands import regression_gate as regression
from profiler_kit.commands.analyze import (
    add_output_arguments,
    emit,
    jobs,
    json_to_stdout_before_an_input,
    output_targets,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="traces, strategy folders or run folders to put side by side")
    add_output_arguments(p)
    regression.add_argument(p, "a trace's step time (device-side, per step; a single trace "
                               "has no repeats, so the margin itself stands for noise; of "
                               "two run folders, each strategy of the second against the "
                               "same strategy of the first)")


def compare(args: argparse.Namespace) -> int:
    from profiler_kit import api

    targets = output_targets(args)
    analyses = api.analyze(args.paths, top=args.top, jobs=jobs(args))
    comparison = api.compare(analyses, args.baseline)
    status = emit(args, analyses, comparison, full=False, jobs=analyses.jobs,
                  targets=targets)
    if args.fail_on_regression is None:
        return status
    lines = regression.compare_regressions(comparison, args.fail_on_regression)
    for line in lines:
        print(f"profkit: {line}", file=sys.stderr)
    if comparison.unpaired:
        print(f"profkit: {regression.unpaired_line(comparison)}", file=sys.stderr)
    return 1 if lines else status


COMMAND = Command("compare", "traces or strategies side by side: step time, hotspots, idle, "
                  "overlap, memory, with deltas against a baseline", add_arguments, compare,
                  data_only=True, prepare_argv=json_to_stdout_before_an_input)
