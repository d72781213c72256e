"""``profkit tensorboard [RUN_DIR]``: open a run in TensorBoard's PyTorch profiler plugin."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from profiler_kit.commands import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", nargs="?", default=None, metavar="RUN_DIR",
        help="run folder to show (default: the latest run or recording under --out); any "
             "folder holding *.pt.trace.json[.gz] files works, one TensorBoard run per "
             "folder of traces",
    )
    parser.add_argument("--out", default="traces", metavar="DIR",
                        help="output folder to look for the latest run in (default: traces)")
    parser.add_argument("--port", type=_port, default=None,
                        help="port to listen on, on 127.0.0.1 (default: a free one)")
    parser.add_argument("--timeout", type=_seconds, default=90.0, metavar="SECONDS",
                        help="how long to wait for TensorBoard to answer (default: 90)")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, not {port}")
    return port


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"timeout must be positive, not {text}")
    return seconds


def tensorboard(args: argparse.Namespace) -> int:
    from profiler_kit import tensorboard as tb

    logdir = tb.resolve_logdir(args.run_dir, Path(args.out))
    launcher = tb.tensorboard_command()
    print(f"Starting TensorBoard on {logdir} ...", flush=True)
    with tb.interrupt_on_termination():
        server = tb.start(logdir, port=args.port, timeout_s=args.timeout, command=launcher)
        try:
            print(f"TensorBoard: {server.url}", flush=True)
            print(f"  log: {server.log_path}; press Ctrl-C to stop", flush=True)
            runs = tb.wait_for_runs(server, timeout_s=args.timeout)
            if runs:
                print(f"  runs: {', '.join(runs)}", flush=True)
                for run in tb.runs_without_views(server, runs):
                    print(f"  the plugin could not read run {run!r}; see the log", file=sys.stderr)
            elif server.running():
                print("  the profiler plugin lists no run yet; see the log", file=sys.stderr)
            status = tb.wait_while_running(server)
            if status != 0:
                print(f"profkit: TensorBoard exited with status {status}; its log ends with:\n"
                      f"{server.log_tail()}", file=sys.stderr)
                status = 1
        except KeyboardInterrupt:
            status = 130
        finally:
            server.stop()
    if status in (0, 130):
        server.discard_log()
    print("TensorBoard stopped", flush=True)
    return status


COMMAND = Command(
    "tensorboard",
    "Show a run in TensorBoard's PyTorch profiler plugin on localhost (until Ctrl-C)",
    _arguments,
    tensorboard,
)
