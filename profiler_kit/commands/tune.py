"""``profkit tune PATH.py``: your model under every standard speed knob, ranked.

The file (or ``package.module:function``) defines ``model()``, ``inputs(batch_size)`` and,
for a training step, ``loss(outputs, inputs)``. Each knob runs as a strategy of a
generated ``tune`` scenario, so it is checked, timed and profiled as ``profkit run`` does;
the winners are then stacked greedily in the same run, and the recommended settings are
swept over batch sizes.
"""

from __future__ import annotations

import argparse
from typing import Any

from profiler_kit.commands import Command

OK = "ok"  # profiler_kit.results.OK, without importing the results at start

SWEEP_SECONDS = 60  # the batch-size sweep starts no new size after this (20 with --quick)
SWEEP_FACTOR = 8  # default cap of the sweep: this many times the run's batch size


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
    p.add_argument("--no-stack", action="store_true",
                   help="each knob alone only, no greedy stacking of the winners")
    p.add_argument("--batch-sizes", default=None, metavar="A,B",
                   help="the sweep's batch sizes (default: doubling from --batch-size up to "
                        "--max-batch-size)")
    p.add_argument("--max-batch-size", type=int, default=None, metavar="N",
                   help=f"the doubling sweep's cap (default {SWEEP_FACTOR}x --batch-size)")
    p.add_argument("--no-batch-sweep", action="store_true", help="no batch-size sweep")
    p.add_argument("--device", default="auto", metavar="DEV", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--repeats", type=int, default=None, metavar="N",
                   help="independent rounds per knob (default 3; 1 with --quick)")
    p.add_argument("--iterations", type=int, default=None, metavar="N",
                   help="timed steps per round (default 10; 5 with --quick)")
    p.add_argument("--out", default="traces", metavar="DIR", help="output folder")


def _sizes(args: argparse.Namespace, batch_size: int) -> list[int]:
    from profiler_kit.errors import UsageError
    from profiler_kit.scenarios.tune_batch import doubling

    if args.batch_sizes:
        try:
            sizes = [int(v) for v in args.batch_sizes.split(",") if v.strip()]
        except ValueError:
            raise UsageError(f"--batch-sizes: expected integers, got {args.batch_sizes!r}"
                             ) from None
        if not sizes or min(sizes) < 1:
            raise UsageError(f"--batch-sizes: give sizes of at least 1, got {args.batch_sizes!r}")
        return sorted(set(sizes))
    cap = (SWEEP_FACTOR * batch_size if args.max_batch_size is None
           else args.max_batch_size)
    if cap < 1:
        raise UsageError(f"--max-batch-size must be at least 1, got {cap}")
    return doubling(batch_size, cap)


def _handle(args: argparse.Namespace) -> int:
    import sys

    from rich.console import Console

    from profiler_kit import api
    from profiler_kit.measure import devices, runner
    from profiler_kit.measure.passes import MeasureOptions
    from profiler_kit.render.console import tune as tune_console
    from profiler_kit.scenarios import tune

    scenario = tune.TuneScenario(tune.load_user_model(args.model), stack=not args.no_stack)
    options = MeasureOptions(
        iterations=args.iterations or (5 if args.quick else 10), warmup=2,
        repeats=args.repeats or (1 if args.quick else 3))
    names = None
    if args.knobs:
        names = [tune.BASELINE, *[n.strip() for n in args.knobs.split(",") if n.strip()]]
    params = {} if args.batch_size is None else {"batch_size": args.batch_size}
    sizes = None if args.no_batch_sweep else _sizes(
        args, args.batch_size or tune.TuneScenario.params[0].default)
    opt_in = ["full"] if args.full and not args.quick else []
    device = devices.resolve(args.device)
    resolved = runner.resolve_params(scenario, params, device)
    runner.select_strategies(scenario, resolved, names, opt_in)  # unknown knobs: one line
    # the baseline once, before anything is measured: a model that fails (or computes NaN)
    # is one line with its error, and no run
    tune.check_baseline(scenario.user, resolved, device)
    console = Console(width=None if sys.stdout.isatty() else 120)
    with tune_console.Progress(console) as bars:
        result = api.run(scenario, params, device=device, strategies=names, opt_in=opt_in,
                         options=options, out=args.out, argv=["profkit", *sys.argv[1:]],
                         observer=bars)
    base = next((s for s in result.at("") if s.name == tune.BASELINE), None)
    if base is None or base.status != OK:
        return _baseline_failed(args, result, base, tune)
    answer = _answer(console, result, tune)
    status = _status(result, tune.BASELINE)
    if sizes and not result.interrupted:
        if args.batch_sizes is None and result.device.startswith("cuda"):
            sizes = _sizes(args, int(result.params["batch_size"]))
        status = _sweep(console, result, scenario, answer, sizes, args.quick) or status
    _trailer(console, result)
    return status


def _baseline_failed(args: argparse.Namespace, result: Any, base: Any, tune: Any) -> int:
    """The baseline failed in the run (after its check passed): no answer, one line."""
    import sys

    from profiler_kit.errors import ModelError

    if result.interrupted:
        print("profkit: interrupted before the baseline was measured", file=sys.stderr)
        return 130
    if args.debug and base is not None and base.traceback:
        print(base.traceback, file=sys.stderr, end="")
    error = (base.error or base.reason or base.status) if base is not None else "not run"
    raise ModelError(tune.baseline_failed(args.model, error))


def _trailer(console: Any, result: Any) -> None:
    """Where the run folder is; the run's problems (a report not written, Ctrl-C)."""
    import sys

    if result.interrupted:
        console.print("interrupted: the knobs that finished are kept", markup=False,
                      highlight=False)
    files = ", ".join(f for f in ("tune.json", "run.json", "summary.md", "report.html")
                      if (result.run_dir / f).exists())
    console.print(f"results: {result.run_dir} ({files}); the traces: "
                  f"{result.tensorboard_command}", markup=False, highlight=False, soft_wrap=True)
    for line in result.report_errors:
        print(f"profkit: error: {line}", file=sys.stderr)


def _status(result: Any, baseline: str) -> int:
    """The run's exit status, except that knobs which failed or changed the results are
    part of the answer (listed with their reasons), not a failure of the command: 1 only
    when the baseline failed or a report could not be written."""
    status = result.exit_status
    if status == 1 and not result.report_errors and all(
            s.name != baseline for s in result.failed):
        return 0
    return status


def _answer(console: Any, result: Any, tune: Any) -> dict[str, Any]:
    """The recommended settings as code first (as ``profkit run`` prints its answer), then
    the ranked table (each knob once) and the stacking decisions behind it; the same, as
    data, goes to tune.json."""
    from profiler_kit.render.console.run import prediction_table
    from profiler_kit.render.console.tune import ranked_table
    from profiler_kit.render.wording import predictions
    from profiler_kit.render.wording.run_answer import contention_line
    from profiler_kit.scenarios import tune_stack

    busy = contention_line(result)
    if busy:  # first: the verdicts below were judged beside other work
        console.print(f"Busy machine: {busy}", style="yellow", markup=False, highlight=False)
    rows = result.at("")
    best, _, notes = tune_stack.walk(rows, tune.BASELINE)
    name = best.name if best is not None else None
    code = tune.snippet([name] if name else [])
    _recommend(console, best, rows, code)
    console.print(ranked_table(result, name))
    predicted = prediction_table(result, "")
    if predicted is not None:  # the knobs a what-if change models, predicted and measured
        table, lines = predicted
        table.title, table.title_justify = predictions.TITLE, "left"
        console.print(table)
        for line in lines:
            console.print(f"  {line}", markup=False, highlight=False, style="dim")
    for line in notes:
        console.print(f"stacking: {line}", markup=False, highlight=False)
    answer = {"recommended": name, "speedup": best.speedup if best else None,
              "snippet": code, "stacking": notes, "knobs": [_knob(s) for s in rows],
              "batch_sweep": None}
    _write_answer(result, answer)
    return answer


def _recommend(console: Any, best: Any, rows: Any, code: str) -> None:
    """The answer: the recommended settings as code and why they win, or keep eager."""
    from profiler_kit.scenarios import tune_stack

    if best is None:
        doubted = any(tune_stack.doubt(s.noise) for s in rows)
        console.print("Recommended: keep float32 eager (no knob was faster beyond noise with "
                      "the same results" + ("; a speedup not judged for unstable rounds or "
                                            "other work beside it may hold on a quieter "
                                            "machine)" if doubted else ")"),
                      markup=False, highlight=False)
    else:
        console.print(f"Recommended settings ({best.name}, {best.speedup:.2f}× eager_fp32):",
                      markup=False, highlight=False)
        console.print(code, markup=False, highlight=False)
        from profiler_kit.render.wording.diff_views import strategy_verdict

        verdict = strategy_verdict(best)
        if verdict:
            why = verdict.removeprefix(f"{best.name}: ")
            console.print(f"Why {best.name} wins: {why}", markup=False, highlight=False)


def _knob(s: Any) -> dict[str, Any]:
    """One knob (or stack) of tune.json: its outcome, its noise verdict and what its results
    were compared with (error, the baseline's error, the bound, the criterion)."""
    from profiler_kit.render.console.tune import verdict
    from profiler_kit.results import noise_json

    timed = s.status == OK and s.stats is not None
    entry: dict[str, Any] = {
        "name": s.name, "status": s.status,
        "median_step_ns": s.stats.median_ns if timed else None,
        "items_per_s": s.throughput_items_per_s if timed else None,
        "speedup": s.speedup if timed else None,
        "verdict": verdict(s.noise) if timed else None,
        "noise": noise_json(s.noise),
        "equality": s.equivalence.to_json() if s.equivalence is not None else None,
        "reason": s.reason or s.error,
    }
    if "float64_error" in s.info or "float64" in s.info:  # the baseline's own, in float32
        entry["float64"] = {"baseline_error": s.info.get("float64_error"),
                            "note": s.info.get("float64", "")}
    return entry


def _write_answer(result: Any, answer: dict[str, Any]) -> None:
    from profiler_kit.util import artifacts

    artifacts.write_json_atomic(result.run_dir / "tune.json", answer)


def _sweep(console: Any, result: Any, scenario: Any, answer: dict[str, Any],
           sizes: list[int], quick: bool) -> int:
    """The batch-size sweep of the recommended settings; Ctrl-C keeps the finished sizes."""
    from profiler_kit.measure import devices
    from profiler_kit.measure.passes import MeasureOptions
    from profiler_kit.render.console.tune import fit_check_line, sweep_table
    from profiler_kit.scenarios import tune_batch

    knobs = tune_batch.sweep_knobs(answer["recommended"] or scenario.baseline)
    left_out = [k for k in (answer["recommended"] or "").split("+")
                if k in tune_batch.PER_SHAPE]
    held = knobs.split("+")
    amp = ("bfloat16" if "autocast_bf16" in held
           else devices.amp_dtype(result.device) if "autocast" in held else None)
    finished: list[Any] = []
    status = 0
    try:
        points = tune_batch.sweep(scenario.user, knobs, sizes, result.device, amp,
                         MeasureOptions(iterations=3 if quick else 5, warmup=1, repeats=1),
                         result.run_dir / "batch_sweep", seed=result.seed,
                         deadline_s=SWEEP_SECONDS / 3 if quick else SWEEP_SECONDS,
                         on_point=finished.append)
    except KeyboardInterrupt:
        status, points = 130, finished
    console.print(sweep_table(points, knobs, result.item_unit))
    if left_out:
        console.print(f"the sweep leaves out {', '.join(left_out)}: each new batch size "
                      "would compile or capture again", markup=False)
    check = tune_batch.check_fit(points, devices.memory_capacity(result.device))
    console.print(fit_check_line(check), markup=False)
    answer["batch_sweep"] = {"knobs": knobs, "points": [p.to_json() for p in points],
                             "fit_check": check.to_json() if check else None}
    _write_answer(result, answer)
    return status


def is_winner(s: Any) -> bool:
    """Faster than the baseline beyond noise, with the baseline's results."""
    from profiler_kit.scenarios.tune_stack import is_winner as winner

    return winner(s)


COMMAND = Command("tune", "your model under every standard speed knob (autocast, "
                  "channels_last, torch.compile, TF32...), checked, timed, stacked and ranked",
                  _add, _handle)
