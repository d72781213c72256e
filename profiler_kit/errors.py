"""Errors the user can act on: the CLI prints them as one line, without a traceback."""

from __future__ import annotations


class ProfkitError(Exception):
    """A problem with the user's input or environment, reported as one clear line.

    ``exit_code`` is what the CLI exits with: 2 for bad input (arguments, traces).
    """

    exit_code = 2


class UsageError(ProfkitError):
    """Unknown scenario, strategy or parameter, or an impossible value."""


class TraceError(ProfkitError):
    """A trace that cannot be read: the message names the file and the problem."""


class OutputError(ProfkitError):
    """A file that cannot be written: the message names the path and the problem.

    Exit status 2 when found before the work starts, 1 once the work is done (what
    finished is kept).
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class ModelError(ProfkitError):
    """The user's own model failed (raised, or computed values that are not finite): the
    message is its error in one line, ``--debug`` shows its traceback. Exit status 1, as
    for a run whose baseline failed."""

    exit_code = 1


class MissingDependency(ProfkitError):
    """An optional package a feature needs is not installed: the message says how to get it."""


class LeftOutWarning(UserWarning):
    """A trace that could not be read was left out; the rest was still reported."""
