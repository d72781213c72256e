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
                   help="write the diff as JSON (schema profkit.diff/1) to FILE, or to stdout "
                        "when FILE is left out")
    p.add_argument("--min-effect", type=_percent, metavar="PCT",
                   help="smallest change, in %%, that may be called beyond noise: the 95 %% "
                        "interval must lie beyond +-PCT (default 5 with repeats, 10 with one "
                        "run a side)")
    p.add_argument("--force", action="store_true",
                   help="replace a diff JSON profkit wrote earlier (never the reports read)")


DIFF_SCHEMA = "profkit.diff/1"


def _percent(text: str) -> float:
    """``--min-effect 3`` is 3 %: the fraction 0.03."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"{text} is not a percentage from 0 to 100")
    return value / 100


def diff(args: argparse.Namespace) -> int:
    from profiler_kit import api, outputs

    target = outputs.check(args.json, "--json", inputs=(args.base, args.test), force=args.force)
    result = api.diff(args.base, args.test, min_effect=args.min_effect)
    if args.json is not None:
        import msgspec

        document = {"schema": DIFF_SCHEMA, **msgspec.to_builtins(result)}
        text = msgspec.json.format(msgspec.json.encode(document), indent=1).decode() + "\n"
        outputs.write(target, text)
        if target is None:
            return 0
    from rich.console import Console

    from profiler_kit.render.diff_console import render

    render(Console(), result)
    return 0


COMMAND = Command("diff", "two DDP benchmark reports: p75/p95 s/iter and examples/s per model "
                  "and world size, with the % change and whether it is beyond noise",
                  add_arguments, diff, data_only=True)
