"""``profkit record [options] -- python train.py ARGS`` (or ``profkit record train.py ARGS``):
profile a training script as it is, with no change to its code.

The script runs as under plain ``python``; its steps are found without help, a few are
recorded after the first ones, then the script is stopped (``--keep-running`` lets it
finish) and the capture is analyzed: the console summary, and in the run folder the
traces, ``record.json``, ``summary.md`` and ``report.html``. The parent process never
imports torch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from profiler_kit.commands import Command
from profiler_kit.errors import UsageError
from profiler_kit.record import (
    DEFAULT_ACTIVE,
    DEFAULT_WAIT,
    DEFAULT_WARMUP,
    DEFAULT_WINDOW_AFTER_S,
    DEFAULT_WINDOW_S,
)

# options that take a value: the first word after the options that is not one of these
# values starts the command (``profkit record --active 5 train.py --lr 0.1``)
_WITH_VALUE = {"--wait", "--warmup", "--active", "--window", "--window-after", "--out", "-o",
               "--output", "--top", "--signal"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script_command", nargs="*", metavar="COMMAND",
                   help="python SCRIPT ARGS, python -m MODULE ARGS or torchrun ... SCRIPT ARGS "
                        "(after --), or SCRIPT ARGS")
    g = p.add_argument_group("which steps")
    g.add_argument("--wait", type=int, default=DEFAULT_WAIT, metavar="N",
                   help=f"steps to skip first: compilation, autotuning, the allocator's "
                        f"warm-up (default {DEFAULT_WAIT})")
    g.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, metavar="N",
                   help=f"steps the profiler runs before recording (default {DEFAULT_WARMUP})")
    g.add_argument("--active", type=int, default=DEFAULT_ACTIVE, metavar="N",
                   help=f"steps to record (default {DEFAULT_ACTIVE})")
    g.add_argument("--keep-running", action="store_true",
                   help="let the script finish after the capture (default: stop it)")
    g.add_argument("--on-signal", action="store_true",
                   help="record nothing until the process gets SIGUSR2 (profkit record "
                        "--signal PID, or kill -USR2 PID); then record the next steps and "
                        "let the job run on")
    g.add_argument("--signal", type=int, metavar="PID",
                   help="tell a recording started with --on-signal (its PID, or profkit's) "
                        "to record its next steps, and return")
    g.add_argument("--window", type=float, default=DEFAULT_WINDOW_S, metavar="SECONDS",
                   help=f"a script that never steps: record this long (default "
                        f"{DEFAULT_WINDOW_S:g})")
    g.add_argument("--window-after", type=float, default=DEFAULT_WINDOW_AFTER_S,
                   metavar="SECONDS",
                   help=f"... starting this long after it imports torch with no step seen "
                        f"(default {DEFAULT_WINDOW_AFTER_S:g}; steps that come later replace "
                        "the window)")
    r = p.add_argument_group("what to record")
    r.add_argument("--memory", action="store_true",
                   help="memory events, with the shapes and stacks that memory by category "
                        "needs (what profkit memory reads)")
    r.add_argument("--stack", action="store_true",
                   help="Python stacks (the lines of code of the hotspots)")
    r.add_argument("--shapes", action="store_true", help="input shapes of the ops")
    r.add_argument("--gzip", action="store_true", help="write .json.gz traces")
    r.add_argument("--counters", action="store_true",
                   help="CUDA, torch 2.14+: sample the GPU's counters (power, clocks, "
                        "temperature, SM active %%, DRAM throughput %%) with PyTorch's "
                        "cupti_monitor backend; one line says so where they cannot be")
    o = p.add_argument_group("output")
    o.add_argument("--out", metavar="DIR",
                   help="where recordings go: each gets a new folder DIR/SCRIPT/TIME "
                        "(default traces/)")
    o.add_argument("-o", "--output", metavar="DIR",
                   help="this folder exactly (new or empty) instead")
    o.add_argument("--top", type=int, default=10, metavar="N",
                   help="names to list per table (default 10)")


def split_command(argv: list[str]) -> list[str]:
    """``--`` before the command where the user left it out: ``record [opts] train.py ...``
    keeps every word from the script on for the script."""
    try:
        start = next(i for i, a in enumerate(argv) if a == "record") + 1
    except StopIteration:
        return argv
    i = start
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv
        if not word.startswith("-") or word == "-":
            return [*argv[:i], "--", *argv[i:]]
        if word in _WITH_VALUE:
            i += 1
        i += 1
    return argv


def _check(args: argparse.Namespace) -> None:
    for name, low in (("wait", 0), ("warmup", 0), ("active", 1), ("top", 1)):
        if getattr(args, name) < low:
            raise UsageError(f"--{name} must be at least {low}, not {getattr(args, name)}")
    if not args.window > 0:
        raise UsageError(f"--window must be more than 0 seconds, not {args.window:g}")
    if args.window_after < 0:
        raise UsageError(f"--window-after must be 0 or more, not {args.window_after:g}")


def _send(pid: int) -> int:
    import os
    import signal

    from profiler_kit.record.launch import listens

    if pid <= 0:
        raise UsageError(f"--signal {pid}: not a process id")
    if listens(pid) is False:  # SIGUSR2 would end it
        raise UsageError(f"--signal {pid}: not a recording started with --on-signal (the "
                         "signal would end it); nothing sent")
    try:
        os.kill(pid, signal.SIGUSR2)
    except ProcessLookupError:
        raise UsageError(f"--signal {pid}: no such process") from None
    except PermissionError:
        raise UsageError(f"--signal {pid}: not allowed to signal that process") from None
    print(f"profkit: asked process {pid} to record its next steps")
    return 0


def handle(args: argparse.Namespace) -> int:
    from profiler_kit.record import command_line, launch

    command = list(args.script_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.signal is not None:
        if command:
            raise UsageError("--signal PID signals a running recording; give no command")
        return _send(args.signal)
    _check(args)
    target = command_line.parse(command)
    run_dir = launch.run_folder(target, args.out, args.output)
    config = {"wait": args.wait, "warmup": args.warmup, "active": args.active,
              "keep_running": args.keep_running, "on_signal": args.on_signal,
              "window": args.window, "window_after": args.window_after,
              "memory": args.memory, "stack": args.stack, "shapes": args.shapes,
              "gzip": args.gzip, "counters": args.counters}
    if args.on_signal:
        import os

        pid = os.getpid()
        _say(f"recording on signal: `profkit record --signal {pid}` (or kill -USR2 {pid}) "
             "records the next steps")
    view = _View(args, target, run_dir)
    recording = launch.record(target, run_dir, config, on_capture=view.capture)
    for line in recording.lines:
        _say(line)
    for c in recording.pending:
        view.capture(c, announce=False)
    view.finish(recording)
    return recording.exit_status


def _say(line: str) -> None:
    sys.stdout.flush()
    print(f"profkit: {line}", file=sys.stderr, flush=True)


class _View:
    """The analysis of each capture: printed, and written as summary.md and report.html."""

    def __init__(self, args: argparse.Namespace, target: Any, run_dir: Path) -> None:
        self.args, self.target, self.run_dir = args, target, run_dir
        self.markdown: str | None = None
        self.failed: list[str] = []
        self.reported = False

    def capture(self, capture: Any, announce: bool = True) -> None:
        from profiler_kit import api
        from profiler_kit.errors import ProfkitError

        files = [f for f in capture.files if f.name.endswith((".json", ".json.gz"))
                 and not f.name.endswith(".memory_categories.json") and f.is_file()]
        if not files:
            return
        if announce and capture.kind == "steps" and capture.steps:
            _say(f"recorded steps {capture.steps[0]}-{capture.steps[-1]}; analysis follows "
                 "(the script runs on)")
        try:
            analyses = api.analyze(files, top=self.args.top)
        except ProfkitError as exc:
            self.failed.append(f"the capture could not be analyzed: {exc}")
            _say(self.failed[-1])
            return
        comparison = api.compare(analyses) if len(analyses) > 1 else None
        self._print(analyses)
        self._write(analyses, comparison)

    def _print(self, analyses: Any) -> None:
        from rich import box
        from rich.console import Console
        from rich.panel import Panel

        from profiler_kit.commands.analyze import memory_section, print_memory
        from profiler_kit.render.console.analysis import render_jobs, trace_view

        console = Console(width=None if sys.stdout.isatty() else 120)
        if analyses:
            console.print(Panel(trace_view(analyses[0], self.args.top, console.width),
                                box=box.ROUNDED, expand=True))
        if len(analyses) > 1:
            console.print(f"({len(analyses) - 1} more trace{'s' if len(analyses) > 2 else ''}"
                          f": every rank is in {self.run_dir / 'summary.md'} and report.html)",
                          markup=False, highlight=False)
        render_jobs(console, getattr(analyses, "jobs", ()))
        print_memory(console, memory_section([str(self.run_dir)]))

    def _write(self, analyses: Any, comparison: Any) -> None:
        from profiler_kit import api
        from profiler_kit.errors import MissingDependency, ProfkitError
        from profiler_kit.render.markdown.analysis import render as markdown
        from profiler_kit.util import artifacts, outputs

        self.markdown = markdown(analyses, comparison, top=self.args.top,
                                 unreadable=getattr(analyses, "unreadable", ()),
                                 jobs=getattr(analyses, "jobs", ()))
        try:
            html = api.report_html([self.run_dir], title=f"profkit record: {self.target.script}",
                                   analyses=analyses, comparison=comparison,
                                   job_views=getattr(analyses, "jobs", ()),
                                   unreadable=getattr(analyses, "unreadable", ()))
            outputs.write(self.run_dir / artifacts.REPORT_HTML, html)
            self.reported = True
        except MissingDependency as exc:
            self.failed.append(f"no {artifacts.REPORT_HTML}: {exc}")
        except ProfkitError as exc:
            self.failed.append(f"{artifacts.REPORT_HTML}: {exc}")

    def finish(self, recording: Any) -> None:
        from profiler_kit.errors import ProfkitError
        from profiler_kit.util import artifacts, outputs

        head = [f"# profkit record: {self.target.script}", "",
                f"- command: `{' '.join(recording.target.given)}`",
                f"- exit status: {recording.exit_status}"
                + (" (stopped by profkit after the capture)"
                   if recording.record.get("stopped_by_profkit") else "")]
        head += [f"- {line}" for line in recording.lines]
        cost = recording.record.get("profiler_overhead")
        if cost:
            head.append(f"- profiler overhead: {cost['step_ms_without_profiler']:g} ms a step "
                        f"without the profiler, {cost['step_ms_profiled']:g} ms recorded "
                        f"({cost['percent']:+g} %)")
        head.append("")
        body = self.markdown or "No trace was analyzed.\n"
        if body.startswith("# profkit analysis"):
            body = "## Analysis" + body[len("# profkit analysis"):]
        try:
            outputs.write(self.run_dir / artifacts.SUMMARY_MD, "\n".join(head) + "\n" + body)
        except ProfkitError as exc:
            self.failed.append(str(exc))
        for line in self.failed:
            _say(line)
        shown = [artifacts.SUMMARY_MD] + ([artifacts.REPORT_HTML] if self.reported else [])
        _say(f"run folder: {self.run_dir} (traces, record.json, {', '.join(shown)})")


COMMAND = Command(
    "record",
    "profile your own training script as it is: profkit record -- python train.py ARGS",
    add_arguments,
    handle,
    prepare_argv=split_command,
)
