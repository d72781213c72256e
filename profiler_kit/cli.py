"""Command line: argument parsing only. Every command calls ``profiler_kit.api`` and a renderer.

Errors the user can act on (:class:`ProfkitError`) print as one line and exit with
their code; ``--debug`` shows the traceback instead. Heavy imports (torch, the
analysis) happen inside the command that needs them, so ``profkit analyze`` never
imports torch.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from profiler_kit import __version__
from profiler_kit.errors import ProfkitError

# name -> (help, add_arguments(parser), handler(args) -> exit status)
Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None]):
    """Register ``handler`` as ``profkit <name>``."""

    def register(handler: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (help, add_arguments, handler)
        return handler

    return register


def build_parser() -> argparse.ArgumentParser:
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
        add_arguments(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    _register_commands()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
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
    from profiler_kit import commands  # noqa: F401
