"""``profkit compare A B C... [--baseline A]``: traces or strategy folders side by side."""

from __future__ import annotations

import argparse

from profiler_kit.commands import Command
from profiler_kit.commands.analyze import add_output_arguments, emit, jobs, output_targets


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="traces, strategy folders or run folders to put side by side")
    add_output_arguments(p)


def compare(args: argparse.Namespace) -> int:
    from profiler_kit import api

    targets = output_targets(args)
    analyses = api.analyze(args.paths, top=args.top, jobs=jobs(args))
    return emit(args, analyses, api.compare(analyses, args.baseline), full=False,
                jobs=analyses.jobs, targets=targets)


COMMAND = Command("compare", "traces or strategies side by side: step time, hotspots, idle, "
                  "overlap, memory, with deltas against a baseline", add_arguments, compare,
                  data_only=True)
