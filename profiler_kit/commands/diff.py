"""``profkit diff BASE TEST``: two DDP benchmark reports side by side, with noise verdicts.

Reads profkit's ``ddp_report.json`` (or a ``ddp`` run folder) and PyTorch's own DDP
benchmark JSON. Never imports torch.
"""

from __future__ import annotations

import argparse

from profiler_kit.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", metavar="BASE",
                   help="the baseline report: ddp_report.json, a ddp run folder, or the JSON "
                        "of PyTorch's DDP benchmark")
    p.add_argument("test", metavar="TEST", help="the report compared against BASE")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the diff as JSON to FILE, or to stdout when FILE is left out")


def diff(args: argparse.Namespace) -> int:
    from profiler_kit import api

    result = api.diff(args.base, args.test)
    if args.json is not None:
        import sys

        import msgspec

        from profiler_kit.artifacts import write_report

        text = msgspec.json.format(msgspec.json.encode(result), indent=1).decode() + "\n"
        if args.json == "-":
            sys.stdout.write(text)
            return 0
        write_report(args.json, text)
    from rich.console import Console

    from profiler_kit.render.diff_console import render

    render(Console(), result)
    return 0


COMMAND = Command("diff", "two DDP benchmark reports: p75/p95 s/iter and examples/s per model "
                  "and world size, with the % change and whether it is beyond noise",
                  add_arguments, diff, data_only=True)
