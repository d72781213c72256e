"""Command line: argument parsing only. Every command calls ``profiler_kit.api`` and a renderer.

Errors the user can act on (:class:`ProfkitError`) print as one line and exit with
their code; ``--debug`` shows the traceback instead. Heavy imports (torch, the
analysis) happen inside the command that needs them, so ``profkit analyze`` never
imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from profiler_kit.commands import Command
from profiler_kit.errors import ProfkitError
from profiler_kit.util.process_tuning import tune_data_process
from profiler_kit.version import __version__

# the modules of profiler_kit.commands, in the order `profkit --help` lists them
COMMAND_MODULES = ("analyze", "compare", "diff", "listing", "memory", "merge", "record", "report",
                   "run", "tensorboard", "tune", "whatif")


def commands() -> dict[str, Command]:
    """Every command by name (their modules are cheap to import: handlers import lazily)."""
    if not _COMMANDS:
        for module_name in COMMAND_MODULES:
            module = importlib.import_module(f"profiler_kit.commands.{module_name}")
            _COMMANDS[module.COMMAND.name] = module.COMMAND
    return _COMMANDS


_COMMANDS: dict[str, Command] = {}


def command(name: str | None) -> Command | None:
    """The command ``name`` (None: there is none); where its module bears its name, that
    module alone is imported (``profkit analyze`` need not import the other eleven)."""
    if name is None:
        return None
    if name in COMMAND_MODULES and not _COMMANDS:
        found: Command = importlib.import_module(f"profiler_kit.commands.{name}").COMMAND
        if found.name == name:
            return found
    return commands().get(name)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv`` that names a command, only that command's parser is
    made (each costs a few ms: argparse looks up its translations on disk)."""
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
    chosen_only = command(chosen)
    for name, cmd in commands().items() if chosen_only is None else [(chosen, chosen_only)]:
        # argparse %-formats help strings (not descriptions): a literal % must be doubled.
        p = sub.add_parser(name, help=cmd.help.replace("%", "%%"), description=cmd.help)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback when something fails")
        cmd.add_arguments(p)
    return parser


def _command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (top-level options take no values), if it is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if command(first) is not None else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    return _run(sys.argv[1:] if argv is None else list(argv))[0]


def entry() -> None:
    """The ``profkit`` console script and ``python -m profiler_kit``."""
    try:
        status, ran = _run(sys.argv[1:], console=True)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader of the output went away (``| head``): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    if ran is not None and ran.data_only:
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


def _run(argv: list[str], console: bool = False) -> tuple[int, Command | None]:
    """The exit status, and the command that ran (None: none named)."""
    chosen = command(_command_name(argv))
    prepare = chosen.prepare_argv if chosen is not None else None
    if prepare is not None:
        argv = prepare(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2, None
    cmd = command(args.command)
    assert cmd is not None  # the parser knows only commands
    if console and cmd.data_only:
        tune_data_process()
    return _call(cmd, args), cmd


def _call(cmd: Command, args: argparse.Namespace) -> int:
    try:
        return cmd.handle(args)
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

