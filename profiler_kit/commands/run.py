"""``profkit run SCENARIO [options] [--param value ...]``.

Parsed in two stages: the scenario is the first positional argument; once it is
loaded its parameters become ``--flags`` (``profkit run concurrent --help`` lists
them). Stage-two mistakes are UsageErrors, so they print as one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from profiler_kit.commands import Command
from profiler_kit.errors import UsageError

_PROFILE_INTS = ("profile_wait", "profile_warmup", "profile_active", "profile_repeat")


class _Parser(argparse.ArgumentParser):
    """Raises UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _add_generic(p: argparse.ArgumentParser) -> None:
    """Options every scenario has. Defaults are SUPPRESSed so the two stages can merge."""
    s = argparse.SUPPRESS
    p.add_argument("--iterations", type=int, default=s, metavar="N",
                   help="timed samples per strategy, after warm-up (default 20)")
    p.add_argument("--warmup", type=int, default=s, metavar="N",
                   help="discarded iterations before timing (default 3)")
    p.add_argument("--repeats", type=int, default=s, metavar="N",
                   help="measure every strategy in N independent rounds (fresh workload and "
                        "processes, taking turns), so the speedups are judged paired by "
                        "round and `profkit diff` can judge run-to-run noise (default 3; "
                        "1 for a quick look, judged within one run; only the first round is "
                        "profiled)")
    p.add_argument("--device", default=s, metavar="DEV",
                   help="auto (default: cuda when present), cpu, cuda or cuda:N")
    p.add_argument("--out", default=s, metavar="DIR",
                   help="output folder (default traces/); each run gets a new sub-folder")
    p.add_argument("--force", action="store_true", default=s,
                   help="replace report files profkit wrote earlier that the scenario's output "
                        "options name (e.g. --json-report); never traces or other files")
    p.add_argument("--seed", type=int, default=s, help="seed for weights and inputs (default 0)")
    p.add_argument("--strategies", default=s, metavar="A,B",
                   help="run only these strategies (comma-separated)")
    p.add_argument("--amp", action="store_true", default=s,
                   help="add an AMP twin of every strategy (float16 on CUDA, bfloat16 on CPU)")
    for name in _PROFILE_INTS:
        default = {"profile_active": 3, "profile_repeat": 1}.get(name, 1)
        p.add_argument("--" + name.replace("_", "-"), type=int, default=s, metavar="N",
                       help=f"torch.profiler.schedule {name.split('_')[1]} (default {default})")
    p.add_argument("--with-stack", action="store_true", default=s,
                   help="record Python stacks in the traces")
    p.add_argument("--memory-snapshot", action="store_true", default=s,
                   help="CUDA only: record the caching allocator's history with Python stacks "
                        "in the profiled pass and save it beside the trace as "
                        "WORKER.memory_snapshot.pickle (PyTorch's memory viewer opens it; "
                        "`profkit memory RUN` reads it); off by default until its overhead "
                        "is measured")
    p.add_argument("--gzip", action="store_true", default=s, help="write .json.gz traces")
    p.add_argument("--counters", action="store_true", default=s,
                   help="CUDA, torch 2.14+: sample the GPU's counters while profiling (power, "
                        "clocks, temperature, SM active %%, DRAM throughput %%) with "
                        "PyTorch's cupti_monitor backend")
    p.add_argument("--no-record-shapes", dest="record_shapes", action="store_false", default=s,
                   help="do not record input shapes")
    p.add_argument("--no-profile-memory", dest="profile_memory", action="store_false",
                   default=s, help="do not record memory events")


def _add_stage_one(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", nargs="?",
                   help="a built-in scenario (see `profkit list`) or a path to your .py file")
    _add_generic(p)
    p.add_argument("rest", nargs=argparse.REMAINDER,
                   help="options and scenario parameters (see `profkit run SCENARIO --help`)")


def _stage_two(scenario: Any) -> _Parser:
    prog = f"profkit run {scenario.name}"
    p = _Parser(prog=prog, description=scenario.description)
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the full traceback when something fails")
    _add_generic(p)
    for flag in sorted({s.opt_in for s in scenario.strategies if s.opt_in}):
        names = ", ".join(s.name for s in scenario.strategies if s.opt_in == flag)
        p.add_argument(f"--{flag}", dest=f"optin__{flag}", action="store_true",
                       default=argparse.SUPPRESS, help=f"add the {names} strategy")
    group = p.add_argument_group(f"parameters of {scenario.name}")
    for param in scenario.params:
        default = f"default {param.default}"
        if param.cuda_default is not None and param.cuda_default != param.default:
            default += f" on CPU, {param.cuda_default} on CUDA"
        sweep = "; comma-separated values sweep" if param.sweep else ""
        help_text = f"{param.help} ({default}{sweep})"
        if param.type is bool and not param.sweep:
            group.add_argument(param.flag, dest=f"param__{param.name}",
                               action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=help_text)
        else:
            group.add_argument(param.flag, dest=f"param__{param.name}",
                               default=argparse.SUPPRESS, metavar=param.type.__name__.upper(),
                               help=help_text)
    return p


def _handle(args: argparse.Namespace) -> int:
    from profiler_kit.scenario import load

    if not args.scenario:
        raise UsageError("profkit run: name a scenario (see `profkit list`) or a .py file")
    scenario = load(args.scenario)
    given = vars(_stage_two(scenario).parse_args(args.rest))
    merged = {k: v for k, v in vars(args).items() if k not in ("rest", "scenario", "command")}
    merged.update(given)
    if merged.get("debug"):
        args.debug = True
    return _run(scenario, merged)


def _run(scenario: Any, opts: dict[str, Any]) -> int:
    from rich.console import Console

    from profiler_kit import api
    from profiler_kit.measure.distributed import is_output_rank
    from profiler_kit.measure.passes import MeasureOptions
    from profiler_kit.render.console import run as run_console
    option_fields = ("iterations", "warmup", "repeats", *_PROFILE_INTS, "with_stack",
                     "memory_snapshot", "counters", "gzip", "record_shapes",
                     "profile_memory")
    options = MeasureOptions(**{k: opts[k] for k in option_fields if k in opts})
    params = {k.removeprefix("param__"): v for k, v in opts.items() if k.startswith("param__")}
    opt_in = [k.removeprefix("optin__") for k, v in opts.items() if k.startswith("optin__") and v]
    names = None
    if opts.get("strategies"):
        names = [n.strip() for n in str(opts["strategies"]).split(",") if n.strip()]

    # under torchrun, rank 0 speaks; piped output gets full-width tables rather than
    # rich's 80-column fallback; stdout is left to an output written there (``-``)
    to_stderr = _writes_to_stdout(scenario, params)
    stream = sys.stderr if to_stderr else sys.stdout
    console = Console(quiet=not is_output_rank(), stderr=to_stderr,
                      width=None if stream.isatty() else 120)
    with run_console.ProgressBars(console) as bars:
        result = api.run(
            scenario, params, device=opts.get("device", "auto"), strategies=names,
            opt_in=opt_in, amp=bool(opts.get("amp", False)), options=options,
            out=opts.get("out", "traces"), seed=opts.get("seed", 0),
            argv=["profkit", *sys.argv[1:]], observer=bars, force=bool(opts.get("force")),
        )
    run_console.render(console, result, _charts_line(result))
    for table in scenario.console_tables(result):
        console.print(table)
    for line in result.report_errors:
        print(f"profkit: error: {line}", file=sys.stderr)
    if result.nothing_ran:
        reasons = "; ".join(f"{s.name}: {s.reason}" for s in result.strategies)
        print(f"profkit: error: nothing could run ({reasons})", file=sys.stderr)
    return result.exit_status


def _writes_to_stdout(scenario: Any, params: dict[str, Any]) -> bool:
    """Whether an output parameter of the scenario (``--json-report -``) names stdout."""
    from profiler_kit.util.outputs import STDOUT

    return any(p.output and params.get(p.name) == STDOUT for p in scenario.params)


def _charts_line(result: Any) -> str:
    """Where report.html is, or how to get it (a report that failed is a report error)."""
    from profiler_kit.errors import MissingDependency
    from profiler_kit.render.html.report import plotly_js
    from profiler_kit.util.artifacts import REPORT_HTML

    html = result.run_dir / REPORT_HTML
    if html.exists():
        return str(html)
    try:
        plotly_js()
    except MissingDependency as exc:
        return f"no {REPORT_HTML}: {exc}"
    return ""


COMMAND = Command(
    "run",
    "run a scenario: time and profile every strategy, write traces and a report",
    _add_stage_one,
    _handle,
)
