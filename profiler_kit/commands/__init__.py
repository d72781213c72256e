"""One module per ``profkit`` command, each exposing its :class:`Command` as ``COMMAND``.

Each module parses its own arguments, calls ``profiler_kit.api`` and hands the
result to a renderer. Modules import heavy dependencies inside their handlers, so
importing them all is cheap. A new command is a new module here, named in
``cli.COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NamedTuple


class Command(NamedTuple):
    """``profkit <name>``: its help, its arguments and the handler that returns the exit status.

    ``data_only`` commands, run from the console, start no BLAS threads (they do no
    linear algebra; the idle threads would spin on every core), run without the cyclic
    garbage collector (their objects form no cycles worth its passes) and end the process
    without tearing the interpreter down, which for a trace analysis takes a tenth
    of the command's time.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handle: Callable[[argparse.Namespace], int]
    data_only: bool = False
    # rewrites the command's argv before parsing (``diff``'s ``--`` between two sides,
    # ``analyze``'s and ``memory``'s ``--json`` before an input)
    prepare_argv: Callable[[list[str]], list[str]] | None = None


class _Trial(argparse.ArgumentParser):
    """A parser that says whether a command line parses, printing nothing."""

    def error(self, message: str):  # type: ignore[override]
        raise ValueError(message)


def json_before_an_input(argv: list[str], add_arguments: Callable[[argparse.ArgumentParser],
                                                                  None],
                         is_input: Callable[..., bool] | None = None) -> list[str]:
    """``argv`` with ``--json WORD``, WORD an existing input, read as WORD and ``--json -``
    (see ``profiler_kit.util.outputs.optional_value``). Kept as given where WORD would then
    stand apart from the other paths (``A --top 3 --json B``: argparse takes paths in one
    run): the output check refuses it, saying how to write JSON to stdout."""
    from profiler_kit.util import outputs

    rewritten = outputs.optional_value(argv, "--json", is_input)
    if rewritten == argv:
        return argv
    start = next(i for i, a in enumerate(rewritten) if not a.startswith("-")) + 1
    trial = _Trial(add_help=False)
    trial.add_argument("--debug", action="store_true")
    add_arguments(trial)
    try:
        _, extra = trial.parse_known_args(rewritten[start:])
    except ValueError:
        return argv
    return argv if extra else rewritten
