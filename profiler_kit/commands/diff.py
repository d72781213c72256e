"""``profkit diff BASE TEST`` or ``profkit diff A1 A2 A3 -- B1 B2 B3``: DDP benchmark
reports side by side, with noise verdicts; several runs a side give the noise between runs.

Reads profkit's ``ddp_report.json`` (or a ``ddp`` run folder, or a folder of them) and
PyTorch's own DDP benchmark JSON. Never imports torch.
"""

from __future__ import annotations

import argparse
import sys

from profiler_kit.commands import Command, gate_option

# ``--`` between the sides becomes this option before argparse, which would drop it
SIDES = "--test-runs"


def split_sides(argv: list[str]) -> list[str]:
    """``diff A1 A2 -- B1 B2`` as ``diff A1 A2 --test-runs B1 B2``."""
    if "--" not in argv:
        return argv
    i = argv.index("--")
    return [*argv[:i], SIDES, *argv[i + 1:]]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", nargs="+", metavar="BASE",
                   help="BASE TEST: the baseline report (ddp_report.json, a ddp run folder, "
                        "or the JSON of PyTorch's DDP benchmark) and the one compared with "
                        "it; or several baseline runs, then -- and several test runs (or a "
                        "folder of runs a side): their rounds are pooled, so the noise "
                        "verdicts model the drift between runs")
    p.add_argument(SIDES, nargs="+", metavar="TEST", help=argparse.SUPPRESS)
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the diff as JSON (schema profkit.diff/1) to FILE, or to stdout "
                        "when FILE is left out")
    p.add_argument("--min-effect", type=gate_option.percentage(100), metavar="PCT",
                   help="smallest change, in %%, that may be called beyond noise: the 95 %% "
                        "interval between runs must lie beyond +-PCT (default 5; one run a "
                        "side is not judged)")
    p.add_argument("--force", action="store_true",
                   help="replace a diff JSON profkit wrote earlier (never the reports read)")
    gate_option.add_argument(p, "any p50-p95 step time of any configuration",
                            " (with one run a side noise cannot be judged: a change over "
                            "PCT is then named in one line, and does not fail)")


DIFF_SCHEMA = "profkit.diff/1"


def diff(args: argparse.Namespace) -> int:
    from profiler_kit import api
    from profiler_kit.errors import UsageError
    from profiler_kit.util import outputs

    if args.test_runs is not None:
        base, test = args.base, args.test_runs
    elif len(args.base) == 2:
        base, test = args.base[:1], args.base[1:]
    else:
        raise UsageError("give BASE TEST, or the baseline runs, then --, then the test runs")
    target = outputs.check(args.json, "--json", inputs=(*base, *test), force=args.force)
    result = api.diff(base, test, min_effect=args.min_effect)
    status = 0
    if args.fail_on_regression is not None:
        from profiler_kit.commands import regression_gate as regression

        lines = regression.diff_regressions(result, args.fail_on_regression)
        notes = (regression.diff_unjudged(result, args.fail_on_regression),
                 regression.diff_unpaired(result))
        for line in [*lines, *(n for n in notes if n)]:
            print(f"profkit: {line}", file=sys.stderr)
        status = 1 if lines else 0
    if args.json is not None:
        import msgspec

        document = {"schema": DIFF_SCHEMA, **msgspec.to_builtins(result)}
        text = msgspec.json.format(msgspec.json.encode(document), indent=1).decode() + "\n"
        outputs.write(target, text)
        if target is None:
            return status
    from rich.console import Console

    from profiler_kit.render.console.diff import render

    render(Console(), result)
    return status


COMMAND = Command("diff", "DDP benchmark reports (one or several runs a side): p50-p95 s/iter "
                  "and examples/s per model and world size, with the % change and whether "
                  "it is beyond noise", add_arguments, diff, data_only=True,
                  prepare_argv=split_sides)
