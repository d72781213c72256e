"""``profkit analyze PATH...``: hotspots, timeline, memory and recommendations of any trace.

Several traces (or a run folder) are each analyzed, then compared side by side.
Never imports torch.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from profiler_kit.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="trace file (.json/.json.gz), strategy folder, run folder or logdir; "
                        "or rank-summaries files written by --summary-only")
    p.add_argument("--summary-only", action="store_true",
                   help="only summarize each trace's collectives and steps for the job view "
                        "(small; reduce them later with `profkit analyze SUMMARIES...`); "
                        "written with --json FILE (or to stdout)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="with --summary-only, or given summaries: summarize the traces and "
                        "reduce the job view as Dask tasks on the cluster at ADDRESS "
                        "(tcp://HOST:PORT; the traces' paths must be readable there), or on "
                        "a LocalCluster started for the command ('local'); needs "
                        "dask[distributed]")
    p.add_argument("--modules", action="store_true",
                   help="print each trace's nn.Module tree: calls, host time, device time "
                        "forward and backward (traces recorded with stacks)")
    p.add_argument("--depth", type=int, default=3, metavar="N",
                   help="with --modules, the levels of the tree to print (default 3)")
    p.add_argument("--by-line", action="store_true",
                   help="print each trace's source lines by device time (CPU op time "
                        "without GPU work), with the ops and kernels under each")
    p.add_argument("--min-gain", type=float, default=2.0, metavar="PCT",
                   help="a recommendation whose predicted gain (the what-if replay of the "
                        "change it advises) is under PCT %% of the step is held back: named "
                        "in one note line, not recommended (default 2; 0 shows every one "
                        "that does not slow the step)")
    add_output_arguments(p)


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the analysis as JSON (schema profkit.analysis/3) to FILE, "
                        "or to stdout when FILE is left out")
    p.add_argument("--markdown", metavar="FILE", help="also write a Markdown report to FILE")
    p.add_argument("--html", metavar="FILE",
                   help="also write a self-contained HTML report with charts to FILE "
                        "(the same as profkit report)")
    p.add_argument("--baseline", metavar="LABEL",
                   help="trace label or path the others are compared against (default: the "
                        "run's baseline strategy for a run folder, else the first trace)")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="names to list per table (default 10)")
    p.add_argument("--by-shape", action="store_true",
                   help="also list the CPU ops that changed most per input shapes and "
                        "dtypes (traces recorded with record_shapes=True)")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="processes to use: traces analyzed at once, or parts of one large "
                        "trace loaded at once (default: one per core)")
    p.add_argument("--force", action="store_true",
                   help="replace output files profkit wrote earlier (never traces, inputs "
                        "or other files)")


OUTPUT_FLAGS = (("json", "--json"), ("markdown", "--markdown"), ("html", "--html"))


def output_targets(args: argparse.Namespace) -> dict[str, object]:
    """Every output file the arguments name, checked before any work (see
    ``profiler_kit.util.outputs``): attribute name -> path, or None for stdout."""
    from profiler_kit.util import outputs

    if args.top < 1:
        from profiler_kit.errors import UsageError

        raise UsageError(f"--top must be at least 1, not {args.top}")
    jobs(args)
    targets = {name: outputs.check(getattr(args, name, None), flag, inputs=args.paths,
                                   force=args.force)
               for name, flag in OUTPUT_FLAGS if getattr(args, name, None) is not None}
    outputs.check_distinct((flag, targets.get(name)) for name, flag in OUTPUT_FLAGS)
    if "html" in targets:  # say how to install plotly before the work, not after
        from profiler_kit.render.html.report import plotly_js

        plotly_js()
    to_stdout = [flag for name, flag in OUTPUT_FLAGS if name in targets and targets[name] is None]
    if len(to_stdout) > 1:
        from profiler_kit.errors import UsageError

        raise UsageError(f"{' and '.join(to_stdout)}: only one output can go to stdout (-)")
    return targets


def jobs(args: argparse.Namespace) -> int | None:
    from profiler_kit.errors import UsageError

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {args.jobs}")
    return args.jobs


def emit(args: argparse.Namespace, analyses: list, comparison, full: bool = True,
         jobs: tuple = (), targets: dict | None = None, unreadable: tuple = ()) -> int:
    """Hand the results to the renderers the arguments ask for, into ``targets`` (from
    :func:`output_targets`, checked before the work).

    The console shows every analysis (``full``) or only the comparison; it stays
    quiet when a report goes to stdout, so the output can be piped. Traces that could
    not be read are named in a warning line each (and in the reports); the exit status
    is then 1.
    """
    from profiler_kit.util import outputs

    if targets is None:
        targets = output_targets(args)
    unreadable = tuple(unreadable or getattr(analyses, "unreadable", ()))
    warn_unreadable(unreadable)
    memory = functools.cache(lambda: memory_section(args.paths))  # read once, if at all
    if "json" in targets:
        from profiler_kit.render.json.analysis import dumps

        outputs.write(targets["json"], dumps(analyses, comparison, jobs, unreadable, memory()))
    if "markdown" in targets:
        from profiler_kit.render.markdown.analysis import render as markdown

        outputs.write(targets["markdown"], markdown(analyses, comparison, top=args.top,
                                                    unreadable=unreadable, jobs=jobs,
                                                    by_shape=args.by_shape))
    if "html" in targets:
        from profiler_kit import api

        outputs.write(targets["html"], api.report_html(
            args.paths, analyses=analyses, comparison=comparison, job_views=jobs,
            unreadable=unreadable, memory_report=memory()))
    if None not in targets.values():
        from rich.console import Console

        from profiler_kit.render.console.analysis import comparison_view, render, render_jobs

        console = Console()
        if full:
            render(console, analyses, comparison, top=args.top, jobs=jobs,
                   by_shape=args.by_shape)
        else:
            if comparison is not None:
                console.print(comparison_view(comparison, args.top, console.width,
                                              args.by_shape))
            render_jobs(console, jobs)
        print_memory(console, memory())
        print_code(console, args, analyses)
    return 1 if unreadable else 0


def print_code(console, args: argparse.Namespace, analyses: list) -> None:
    """The module tree (``--modules``) and the source lines (``--by-line``) per trace."""
    if not (getattr(args, "modules", False) or getattr(args, "by_line", False)):
        return
    from profiler_kit.render.console.code import by_line_lines, module_lines

    for a in analyses:
        if a.code is None:
            continue
        console.print(f"\n[bold]{a.label}[/bold]")
        width = console.width - 2  # each line is printed two spaces in
        lines = module_lines(a.code, args.depth, width) if args.modules else []
        lines += by_line_lines(a.code, args.top, width) if args.by_line else []
        for line in lines:
            console.print(f"  {line}", markup=False, highlight=False)


def memory_section(paths: list[str]) -> Any:
    """The memory report of ``paths`` where a run kept memory categories or a snapshot,
    else None: what the console's memory section and ``--json``'s ``memory_explained`` show.
    Trace files alone hold neither: nothing is read for them."""
    from profiler_kit.sources.inputs import resolve

    if not resolve(paths).may_hold_memory:
        return None
    from profiler_kit import api
    from profiler_kit.render.wording.memory_lines import has_memory

    report = api.memory_section(paths)
    return report if report is not None and has_memory(report) else None


def print_memory(console, report: Any) -> None:
    """The short memory section of ``memory_section``'s report (nothing for None)."""
    from profiler_kit.render.wording.memory_lines import section_lines

    if report is None:
        return
    console.print("\n[bold]Memory[/bold] (at each peak; `profkit memory PATH` names the lines "
                  "of code, leaks and what fits)")
    for line in section_lines(report):
        console.print(f"  {line}", markup=False, highlight=False)


def warn_unreadable(unreadable: tuple) -> None:
    """One warning line per trace left out, on stderr (stdout may carry the JSON)."""
    import sys

    for u in unreadable:
        print(f"profkit: warning: {u.path}: unreadable, left out ({u.reason})", file=sys.stderr)


def analyze(args: argparse.Namespace) -> int:
    from profiler_kit.trace.load_ahead import loading_ahead

    if args.summary_only:
        return summary_only(args)
    targets = output_targets(args)
    # one trace: loads while the analyses import
    with loading_ahead(args.paths, jobs(args)) as ahead:
        return _analyze(args, targets, ahead)


def _analyze(args: argparse.Namespace, targets: dict[str, object], ahead: object) -> int:
    from profiler_kit import api
    from profiler_kit.sources.inputs import resolve

    if resolve(args.paths).only_summaries:  # summaries written elsewhere: the job view only
        with _scheduler(args) as client:
            found = api.summarize(args.paths, jobs=jobs(args), scheduler=client)
            views = api.job_view(found, scheduler=client)
        return emit(args, [], None, jobs=views, targets=targets, unreadable=found.unreadable)
    if getattr(args, "scheduler", None):
        from profiler_kit.errors import UsageError

        raise UsageError("--scheduler: only with --summary-only, or to reduce summaries "
                         "files (the full analysis runs here)")
    analyses = api.analyze(args.paths, top=args.top, jobs=jobs(args),
                           min_gain_pct=args.min_gain, ahead=ahead)
    comparison = api.compare(analyses, args.baseline) if len(analyses) > 1 else None
    return emit(args, analyses, comparison, jobs=analyses.jobs, targets=targets)


def _scheduler(args: argparse.Namespace):
    """A Dask client for ``--scheduler`` (closed on leaving), or a null context."""
    from contextlib import nullcontext

    address = getattr(args, "scheduler", None)
    if not address:
        return nullcontext()
    from profiler_kit.sources import dask_tasks
    return dask_tasks.client(dask_tasks.check_scheduler(address))


def summary_only(args: argparse.Namespace) -> int:
    """Write the rank summaries (schema ``profkit.rank-summaries/1``) and say where."""
    import sys

    from profiler_kit import api
    from profiler_kit.errors import UsageError
    from profiler_kit.sources import summary_files
    from profiler_kit.util import outputs

    if args.markdown or getattr(args, "html", None):
        raise UsageError("--summary-only writes JSON only (--json FILE), not --markdown/--html")
    target = output_targets(args).get("json")
    with _scheduler(args) as client:
        found = api.summarize(args.paths, jobs=jobs(args), scheduler=client)
    warn_unreadable(found.unreadable)
    data = summary_files.dumps(list(found), found.unreadable)
    outputs.write(target, data.decode())
    if target is not None:
        sys.stderr.write(f"{len(found)} rank summaries ({len(data):,} bytes) written to "
                         f"{args.json}\n")
    return 1 if found.unreadable else 0


def json_to_stdout_before_an_input(argv: list[str]) -> list[str]:
    """``--json trace.json.gz``: the trace is an input and the JSON goes to stdout (argparse
    would take the trace as the file to write); so is a folder and, without
    ``--summary-only`` (which writes one), a rank-summaries file."""
    from profiler_kit.commands import json_before_an_input

    def summaries(path):
        from profiler_kit.sources.summary_files import is_summary_file

        return is_summary_file(path)

    return json_before_an_input(argv, add_arguments,
                                None if "--summary-only" in argv else summaries)


COMMAND = Command("analyze", "hotspots, timeline, memory and recommendations from torch.profiler "
                  "traces", add_arguments, analyze, data_only=True,
                  prepare_argv=json_to_stdout_before_an_input)
