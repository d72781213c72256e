"""``profkit merge PATH -o job.json.gz``: one Chrome/Perfetto trace of a job's ranks.

Every rank becomes its own processes, its clock shifted as the job view aligns it, and
the matched collectives are linked across ranks by flow arrows. Never imports torch.
"""

from __future__ import annotations

import argparse

from profiler_kit.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="the ranks' traces: a folder of them, a run folder holding one job, "
                        "or the trace files")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the merged trace (gzip when it ends in .gz), for Perfetto or "
                        "chrome://tracing")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="processes summarizing the traces at once (default: one per core)")
    p.add_argument("--force", action="store_true",
                   help="replace a merged trace profkit wrote earlier (never anything else)")


def merge(args: argparse.Namespace) -> int:
    import sys

    from profiler_kit import api
    from profiler_kit.errors import UsageError

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {args.jobs}")
    report = api.merge(args.paths, args.output, jobs=args.jobs, force=args.force)
    events = sum(r.events for r in report.ranks)
    shifted = [r for r in report.ranks if r.shift_ns]
    print(f"{len(report.ranks)} ranks, {events:,} events and {report.flows:,} collective "
          f"flows merged into {args.output}", file=sys.stderr)
    if shifted:
        print("clocks aligned at " + str(report.clock_reference) + ": "
              + ", ".join(f"rank {r.rank} {-r.shift_ns / 1e6:+.3f} ms" for r in shifted),
              file=sys.stderr)
    return 0


COMMAND = Command("merge", "one Perfetto trace of a job's ranks: clocks aligned, collectives "
                  "linked", add_arguments, merge, data_only=True)
