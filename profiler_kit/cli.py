"""Command line: argument parsing only. Every command calls ``profiler_kit.api`` and a renderer.

Errors the user can act on (:class:`ProfkitError`) print as one line and exit with
their code; ``--debug`` shows the traceback instead. Heavy imports (torch, the
analysis) happen inside the command that needs them, so ``profkit analyze`` never
imports torch.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from profiler_kit import __version__
from profiler_kit.errors import ProfkitError

# name -> (help, add_arguments(parser), handler(args) -> exit status)
Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: dict[str, Command] = {}
# commands that only read files and compute (no devices, threads or child processes)
DATA_ONLY: set[str] = set()


def command(name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None],
            *, data_only: bool = False):
    """Register ``handler`` as ``profkit <name>``.

    ``data_only`` commands, run from the console, start no BLAS threads (they do no
    linear algebra; the idle threads would spin on every core) and end the process
    without tearing the interpreter down, which for a trace analysis takes a tenth
    of the command's time.
    """

    def register(handler: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (help, add_arguments, handler)
        if data_only:
            DATA_ONLY.add(name)
        return handler

    return register


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv``, only the command it names gets its arguments (faster)."""
    chosen = _command_name(argv) if argv is not None else None
    parser = argparse.ArgumentParser(
        prog="profkit",
        description=(
            "Which way of running this work in parallel is fastest on my hardware, and why?"
        ),
    )
    parser.add_argument("--version", action="version", version=f"profkit {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback when something fails"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add_arguments, _handler) in COMMANDS.items():
        # argparse %-formats help strings (not descriptions): a literal % must be doubled.
        p = sub.add_parser(name, help=help_text.replace("%", "%%"), description=help_text)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback when something fails")
        if chosen is None or chosen == name:
            add_arguments(p)
    return parser


def _command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (top-level options take no values), if it is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    return _run(sys.argv[1:] if argv is None else list(argv))[0]


def entry() -> None:
    """The ``profkit`` console script and ``python -m profiler_kit``."""
    try:
        status, name = _run(sys.argv[1:], console=True)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader of the output went away (``| head``): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    if name in DATA_ONLY:
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


def _run(argv: list[str], console: bool = False) -> tuple[int, str | None]:
    _register_commands()
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2, None
    if console and args.command in DATA_ONLY:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # read when numpy loads
            os.environ.setdefault(var, "1")
    return _call(args), args.command


def _call(args: argparse.Namespace) -> int:
    _help, _add, handler = COMMANDS[args.command]
    try:
        return handler(args)
    except ProfkitError as exc:
        if args.debug:
            raise
        print(f"profkit: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("profkit: interrupted", file=sys.stderr)
        return 130


def _register_commands() -> None:
    """Import the modules that define commands (each registers itself with ``@command``)."""
    if COMMANDS:
        return
    from profiler_kit.commands import (  # noqa: F401
        analyze,
        compare,
        diff,
        listing,
        run,
        tensorboard,
    )
