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
    # rewrites the command's argv before parsing (``diff``'s ``--`` between two sides)
    prepare_argv: Callable[[list[str]], list[str]] | None = None
