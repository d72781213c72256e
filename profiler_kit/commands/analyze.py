"""``profkit analyze PATH...``: hotspots, timeline, memory and recommendations of any trace.

Several traces (or a run folder) are each analyzed, then compared side by side.
Never imports torch.
"""

from __future__ import annotations

import argparse

from profiler_kit.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="trace file (.json/.json.gz), strategy folder, run folder or logdir; "
                        "or rank-summaries files written by --summary-only")
    p.add_argument("--summary-only", action="store_true",
                   help="only summarize each trace's collectives and steps for the job view "
                        "(small; reduce them later with `profkit analyze SUMMARIES...`); "
                        "written with --json FILE (or to stdout)")
    add_output_arguments(p)


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the analysis as JSON (schema profkit.analysis/2) to FILE, "
                        "or to stdout when FILE is left out")
    p.add_argument("--markdown", metavar="FILE", help="also write a Markdown report to FILE")
    p.add_argument("--baseline", metavar="LABEL",
                   help="trace label or path the others are compared against (default: first)")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="names to list per table (default 10)")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="processes to use: traces analyzed at once, or parts of one large "
                        "trace loaded at once (default: one per core)")


def jobs(args: argparse.Namespace) -> int | None:
    from profiler_kit.errors import UsageError

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {args.jobs}")
    return args.jobs


def emit(args: argparse.Namespace, analyses: list, comparison, full: bool = True,
         jobs: tuple = ()) -> int:
    """Hand the results to the renderers the arguments ask for.

    The console shows every analysis (``full``) or only the comparison; it stays
    quiet when the JSON goes to stdout, so the output can be piped.
    """
    from pathlib import Path

    from profiler_kit.errors import UsageError

    inputs = {f.resolve() for f in (Path(a.path) for a in analyses)}
    for out in (args.json, args.markdown):
        if out and out != "-" and Path(out).resolve() in inputs:
            raise UsageError(f"{out}: refusing to overwrite an input trace")
    if args.json is not None:
        from profiler_kit.render.analysis_json import dumps

        text = dumps(analyses, comparison, jobs)
        if args.json == "-":
            import sys

            sys.stdout.write(text)
        else:
            from profiler_kit.artifacts import write_report

            write_report(args.json, text)
    if args.markdown:
        from profiler_kit.artifacts import write_report
        from profiler_kit.render.analysis_markdown import render as markdown

        write_report(args.markdown, markdown(analyses, comparison, top=args.top))
    if args.json != "-":
        from rich.console import Console

        from profiler_kit.render.analysis_console import comparison_table, render, render_jobs

        if full:
            render(Console(), analyses, comparison, top=args.top, jobs=jobs)
        else:
            if comparison is not None:
                Console().print(comparison_table(comparison))
            render_jobs(Console(), jobs)
    return 0


def analyze(args: argparse.Namespace) -> int:
    from profiler_kit import api
    from profiler_kit.analysis.summaries import find_summary_files

    if args.summary_only:
        return summary_only(args)
    if find_summary_files(args.paths):  # summaries written elsewhere: the job view only
        return emit(args, [], None, jobs=api.job_view(api.summarize(args.paths,
                                                                    jobs=jobs(args))))
    analyses = api.analyze(args.paths, top=args.top, jobs=jobs(args))
    comparison = api.compare(analyses, args.baseline) if len(analyses) > 1 else None
    return emit(args, analyses, comparison, jobs=analyses.jobs)


def summary_only(args: argparse.Namespace) -> int:
    """Write the rank summaries (schema ``profkit.rank-summaries/1``) and say where."""
    import sys
    from pathlib import Path

    from profiler_kit import api
    from profiler_kit.analysis import summaries
    from profiler_kit.errors import UsageError

    if args.markdown:
        raise UsageError("--summary-only writes JSON only (--json FILE), not --markdown")
    found = api.summarize(args.paths, jobs=jobs(args))
    data = summaries.dumps(found)
    if args.json in (None, "-"):
        sys.stdout.write(data.decode())
        return 0
    inputs = {Path(s.path).resolve() for s in found}
    if Path(args.json).resolve() in inputs:
        raise UsageError(f"{args.json}: refusing to overwrite an input trace")
    from profiler_kit.artifacts import write_report

    write_report(args.json, data.decode())
    sys.stderr.write(f"{len(found)} rank summaries ({len(data):,} bytes) written to "
                     f"{args.json}\n")
    return 0


COMMAND = Command("analyze", "hotspots, timeline, memory and recommendations from torch.profiler "
                  "traces", add_arguments, analyze, data_only=True)
