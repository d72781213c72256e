"""``profkit report PATH... [-o report.html]``: one self-contained HTML file with charts.

Reads what ``analyze``, ``compare`` and ``diff`` read: run folders, traces, folders of
traces and DDP benchmark reports. Never imports torch.
"""

from __future__ import annotations

import argparse

from profiler_kit.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="run folders, traces (.json/.json.gz), folders of traces, or DDP "
                        "benchmark reports (ddp_report.json)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="the HTML file to write, - for stdout (default: report.html in the "
                        "run folder when PATH is one run or record folder, rewritten when "
                        "profkit wrote it, else ./report.html)")
    p.add_argument("--force", action="store_true",
                   help="replace a report profkit wrote earlier (never traces, inputs or "
                        "other files)")
    p.add_argument("--title", help="the report's title (default: the run or the paths)")
    p.add_argument("--baseline", metavar="LABEL",
                   help="trace label or path the others are compared against (default: first)")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="processes to analyze traces with (default: one per core)")


def report(args: argparse.Namespace) -> int:
    """Exit 1 when a trace was left out (named on stderr and in the report), as analyze."""
    import sys
    import warnings

    from profiler_kit import api
    from profiler_kit.commands.analyze import jobs
    from profiler_kit.errors import LeftOutWarning
    from profiler_kit.trace.load_ahead import loading_ahead

    rewrites = args.output is None and api.is_run_folder_report(args.paths) \
        and api.default_report_path(args.paths).exists()
    with warnings.catch_warnings(record=True) as caught, \
            loading_ahead(args.paths, jobs(args)) as ahead:
        warnings.simplefilter("always", LeftOutWarning)
        path = api.report(args.paths, args.output, title=args.title, baseline=args.baseline,
                          jobs=jobs(args), force=args.force, ahead=ahead)
    left_out = [w for w in caught if issubclass(w.category, LeftOutWarning)]
    for w in caught:
        if w in left_out:
            print(f"profkit: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if path is not None:  # not stdout
        print(f"report: {path}" + (" (replaced the run's report.html, which profkit wrote)"
                                   if rewrites else ""))
    return 1 if left_out else 0


COMMAND = Command("report", "one self-contained HTML report with charts (opens offline) of "
                  "runs, traces or DDP reports", add_arguments, report, data_only=True)
