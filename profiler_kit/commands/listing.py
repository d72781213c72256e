"""``profkit list [SCENARIO_FILE]``: scenarios, strategies, parameters and requirements."""

from __future__ import annotations

import argparse

from profiler_kit.commands import Command


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?",
                   help="describe the scenario in this .py file instead of the built-in ones")


def _handle(args: argparse.Namespace) -> int:
    from rich.console import Console

    from profiler_kit import api
    from profiler_kit.render.console.listing import render

    if args.file:
        from profiler_kit.scenario import from_file
        from profiler_kit.scenario_info import describe

        infos = [describe(from_file(args.file))]
    else:
        infos = api.list_scenarios()
    render(Console(), infos)
    return 0


COMMAND = Command("list", "list the scenarios, their strategies, parameters and requirements",
                  _add_arguments, _handle)
