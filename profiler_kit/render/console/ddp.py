"""Rich console table of a ``ddp`` run's report, in the layout of PyTorch's DDP benchmark:
per configuration the p50/p75/p90/p95 seconds per iteration and the examples/s they
imply. Formats the report that ``profiler_kit.ddp_benchmark.report`` built; never computes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.padding import Padding

from profiler_kit.render.console.fit import WORDS, FitTable
from profiler_kit.render.wording import units

_PERCENTILES = ("p50", "p75", "p90", "p95")


def _rate(v: float | None) -> str:
    return "-" if v is None else units.significant(v, 4)


def tables(report: Mapping[str, Any]) -> list[Padding]:
    """One table per model, batch and bucket size, each with a blank line above it."""
    found = []
    for bench in report.get("benchmark_results", []):
        title = (f"DDP benchmark: {bench.get('model')}, batch {bench.get('batch_size')} per "
                 f"rank, bucket {bench.get('bucket_size')} MB")
        caption = ("p50..p95: seconds per iteration, slowest rank per step; rank p50: each "
                   "rank's median; examples/s per rank and in total at p50; speedup: total "
                   "examples/s against no-ddp; scaling: against ranks × no-ddp; best: most "
                   "examples/s")
        # narrow: p75 and p90, then each rank's median give their room first
        t = FitTable(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False,
                     show_edge=False, title_justify="left", caption_justify="left",
                     title_style="bold", kinds={"config": WORDS, "rank p50": WORDS},
                     drop=[("p75", "p90"), ("rank p50",), ("ex/s/rank",)],
                     left_out="left out at this width: {} (ddp_report.json has them)")
        t.add_column("config", no_wrap=True)
        for p in _PERCENTILES:
            t.add_column(p, justify="right", no_wrap=True)
        t.add_column("rank p50", justify="right", no_wrap=True)
        t.add_column("ex/s/rank", justify="right", no_wrap=True)
        t.add_column("ex/s all", justify="right", no_wrap=True)
        t.add_column("speedup", justify="right", no_wrap=True)
        t.add_column("scaling", justify="right", no_wrap=True)
        for r in bench.get("result", []):
            times = r.get("times") or {}
            sec = times.get("sec_per_iter") or {}
            best = bool(r.get("best"))
            t.add_row(
                str(r.get("configuration", "")) + (" (best)" if best else ""),
                *(units.duration(sec[p] * 1e9) if sec.get(p) is not None else "-"
                  for p in _PERCENTILES),
                " / ".join(units.duration(v * 1e9)
                           for v in r.get("per_rank_sec_per_iter_p50") or []) or "-",
                _rate((times.get("examples_per_sec_per_replica") or {}).get("p50")),
                _rate((times.get("examples_per_sec") or {}).get("p50")),
                units.speedup(r.get("speedup")),
                units.percent(r.get("scaling_efficiency")),
                style="bold green" if best else "",
            )
        for f in bench.get("failed", []):
            t.add_row(str(f.get("configuration")), str(f.get("status") or "failed"),
                      style="red")
        found.append(Padding(t, (1, 0, 0, 0)))
    return found


def render(console: Console, report: Mapping[str, Any]) -> None:
    for t in tables(report):
        console.print(t)
