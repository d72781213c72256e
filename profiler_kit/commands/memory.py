"""``profkit memory PATH...``: what holds the peak, which line allocated it, leaks, what fits.

PATH is a run folder, a strategy folder, a trace with ``[memory]`` events, a
``*.memory_categories.json`` or an allocator snapshot pickle. Never imports torch.
"""

from __future__ import annotations

import argparse
import re

from profiler_kit.commands import Command

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def device_memory(text: str) -> int:
    """``80GB``, ``80GiB``, ``81920M`` or bytes; binary prefixes (what GPUs are sold in)."""
    m = _SIZE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 80GiB, 24G, 1073741824)")
    unit = (m.group(2) or "").upper()[:1]
    return int(float(m.group(1)) * _SCALE[unit])


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="run folder, strategy folder, trace with memory events, "
                        "*.memory_categories.json or allocator snapshot pickle; two runs "
                        "of different batch sizes give what fits from both")
    p.add_argument("--device-memory", type=device_memory, metavar="SIZE",
                   help="device memory to size the largest batch against, e.g. 80GiB "
                        "(default: the device's, where the run or trace recorded it)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the result as JSON (schema profkit.memory/1) to FILE, or to "
                        "stdout when FILE is left out (a trace, folder, snapshot or "
                        "categories file named right after --json is read as an input)")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="lines of code to list per table (default 10)")
    p.add_argument("--force", action="store_true",
                   help="replace a JSON file profkit wrote earlier")


def memory(args: argparse.Namespace) -> int:
    """Exit 1 when a file could not be used (each named on stderr in one line) or when no
    strategy has anything about memory to show; files used with less than they could give
    (no stacks) are one note line each. A strategy whose traces recorded no memory (the
    threaded ones: profile_all_threads records none) says so in its one line. Bad input
    (nothing given could be used: a path that is none of what memory reads, a folder
    without any, files that cannot be read) is one error line and exit 2, as in analyze."""
    import sys

    import msgspec

    from profiler_kit import api
    from profiler_kit.errors import UsageError
    from profiler_kit.render.json.memory_report import document
    from profiler_kit.render.wording.memory_lines import limits, notes, report_lines, shows_anything
    from profiler_kit.util import outputs

    if args.top < 1:
        raise UsageError(f"--top must be at least 1, not {args.top}")
    target = outputs.check(args.json, "--json", inputs=args.paths, force=args.force)
    report = api.memory(args.paths, device_memory=args.device_memory, top=args.top)
    problems = notes(report)
    _check_usable(report, problems)
    for line in problems:
        print(f"profkit: warning: {line}", file=sys.stderr)
    for line in limits(report):
        print(f"profkit: note: {line}", file=sys.stderr)
    if args.json is not None:
        outputs.write(target, msgspec.json.encode(document(report)).decode() + "\n")
    if args.json is None or target is not None:
        print("\n".join(report_lines(report, args.top)))
    if problems:
        return 1
    if not any(shows_anything(s) for s in report.strategies):
        print(f"profkit: warning: nothing about memory to show in {' '.join(args.paths)}"
              + _why_nothing(report), file=sys.stderr)
        return 1
    return 0


def _check_usable(report, problems: list[str]) -> None:
    """Nothing given could be used, only why not: bad input, one line (``UsageError``)."""
    from profiler_kit.errors import UsageError
    from profiler_kit.render.wording.memory_lines import shows_anything

    if not problems or any(shows_anything(s) or s.unrecorded for s in report.strategies):
        return
    if len(problems) == 1:
        raise UsageError(problems[0])
    raise UsageError(f"no file could be used ({len(problems)} files): {'; '.join(problems)}")


def _why_nothing(report) -> str:
    from profiler_kit.render.wording.notes import say

    whys = list(dict.fromkeys(say(u.why) for s in report.strategies for u in s.unrecorded))
    return f": no memory events ({'; '.join(whys)})" if whys else ""


def json_to_stdout_before_an_input(argv: list[str]) -> list[str]:
    """``--json trace.json.gz``: the trace (a folder, a snapshot pickle, a categories file)
    is an input and the JSON goes to stdout; argparse would take it as the file to write."""
    from profiler_kit.commands import json_before_an_input
    from profiler_kit.util.path_kinds import is_memory_file

    return json_before_an_input(argv, add_arguments, is_memory_file)


COMMAND = Command("memory", "memory explained: what holds the peak (by category, by line of "
                  "code), allocated vs reserved, fragmentation, leaks step to step, OOMs, "
                  "the largest batch that fits", add_arguments, memory, data_only=True,
                  prepare_argv=json_to_stdout_before_an_input)
