"""``profkit list`` on the console (formats only)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from profiler_kit.scenario_info import ScenarioInfo


def render(console: Console, infos: Sequence[ScenarioInfo]) -> None:
    for info in infos:
        if info.error:
            console.print(f"[bold]{info.name}[/]: [red]unavailable[/] ({info.error})",
                          highlight=False)
            continue
        console.print(f"[bold]{info.name}[/]: {info.description}", highlight=False)
        strategies = Table(show_edge=False, header_style="bold", pad_edge=False)
        strategies.add_column("strategy")
        strategies.add_column("needs")
        strategies.add_column("what it does")
        for s in info.strategies:
            strategies.add_row(s.name + (" (baseline)" if s.baseline else ""),
                               ", ".join(s.needs) or "-", s.help)
        console.print(strategies)
        if info.supports_amp:
            console.print("  --amp adds an AMP twin of every strategy", highlight=False)
        params = Table(show_edge=False, header_style="bold", pad_edge=False)
        params.add_column("parameter")
        params.add_column("default (CPU)")
        params.add_column("default (CUDA)")
        params.add_column("meaning")
        for p in info.params:
            cuda = "same" if p.cuda_default is None else str(p.cuda_default)
            flag = p.flag + (" (sweep)" if p.sweep else "")
            params.add_row(flag, str(p.default), cuda, p.help)
        if info.params:
            console.print(params)
        console.print()
    console.print("options of every scenario: profkit run SCENARIO --help", highlight=False)
