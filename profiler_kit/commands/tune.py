"""``profkit tune PATH.py``: your model under every standard speed knob, ranked.

The file (or ``package.module:function``) defines ``model()``, ``inputs(batch_size)`` and,
for a training step, ``loss(outputs, inputs)``. Each knob runs as a strategy of a
generated ``tune`` scenario, so it is checked, timed and profiled as ``profkit run`` does.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from profiler_kit.commands import Command


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="PATH.py or package.module:function defining model() and "
                                 "inputs(batch_size), optionally loss(outputs, inputs)")
    p.add_argument("--batch-size", type=int, default=None, metavar="N",
                   help="items per step (default 8 on CPU, 64 on CUDA)")
    p.add_argument("--quick", action="store_true",
                   help="one round, few iterations, only the default torch.compile")
    p.add_argument("--full", action="store_true",
                   help="also torch.compile's reduce-overhead and max-autotune-no-cudagraphs")
    p.add_argument("--knobs", default=None, metavar="A,B",
                   help="only these knobs (the baseline eager_fp32 always runs)")
    p.add_argument("--device", default="auto", metavar="DEV", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="independent rounds per knob (default 3; 1 with --quick)")
    p.add_argument("--iterations", type=int, default=None, metavar="N",
                   help="timed steps per round (default 10; 5 with --quick)")
    p.add_argument("--out", default="traces", metavar="DIR", help="output folder")


def _handle(args: argparse.Namespace) -> int:
    import sys

    from rich.console import Console

    from profiler_kit import api
    from profiler_kit.measure.passes import MeasureOptions
    from profiler_kit.render import run_console

    tune = importlib.import_module("profiler_kit.scenarios.tune")
    scenario = tune.TuneScenario(tune.load_user_model(args.model))
    options = MeasureOptions(
        iterations=args.iterations or (5 if args.quick else 10), warmup=2,
        repeats=args.repeats or (1 if args.quick else 3))
    names = None
    if args.knobs:
        names = [tune.BASELINE, *[n.strip() for n in args.knobs.split(",") if n.strip()]]
    params = {} if args.batch_size is None else {"batch_size": args.batch_size}
    console = Console(width=None if sys.stdout.isatty() else 120)
    with run_console.ProgressBars(console) as bars:
        result = api.run(scenario, params, device=args.device, strategies=names,
                         opt_in=["full"] if args.full and not args.quick else [],
                         options=options, out=args.out, argv=["profkit", *sys.argv[1:]],
                         observer=bars)
    run_console.render(console, result, "")
    _print_answer(console, result, tune)
    return result.exit_status


def _print_answer(console: Any, result: Any, tune: Any) -> None:
    """Compile times, rejected knobs and the recommended settings as code."""
    for s in result.strategies:
        if "compile_s" in s.info:
            console.print(f"{s.name}: compile {s.info['compile_s']:.2f} s (apart from step "
                          f"time), graph breaks {s.info['graph_breaks']}")
        if s.equivalence is not None and s.equivalence.checked and not s.equivalence.ok:
            console.print(f"{s.name}: rejected, results change: {s.equivalence.detail}")
    winners = [s for s in result.strategies if is_winner(s)]
    winners.sort(key=lambda s: -(s.speedup or 0.0))
    best = winners[0] if winners else None
    console.print("Recommended settings:" if best else "Recommended: keep float32 eager "
                  "(no knob was faster beyond noise with the same results)")
    if best is not None:
        console.print(tune.snippet([best.name]), markup=False, highlight=False)
        if best.verdict:
            console.print(f"Why {best.name} wins: {best.verdict}", markup=False)


def is_winner(s: Any) -> bool:
    """Faster than the baseline beyond noise, with the baseline's results."""
    eq_ok = s.equivalence is None or not s.equivalence.checked or s.equivalence.ok
    return (s.status == "ok" and eq_ok and s.speedup is not None and s.speedup > 1
            and s.noise is not None and bool(s.noise.beyond_noise))


COMMAND = Command("tune", "your model under every standard speed knob (autocast, "
                  "channels_last, torch.compile, TF32...), checked, timed and ranked",
                  _add, _handle)
