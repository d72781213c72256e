"""``pipeline_report.json``: per point and strategy, the global throughput, the step-time
statistics (slowest rank per step), the speed-up against ``ddp`` and the bubble of
every rank from its trace. Written into the run folder after the run; no torch import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import asdict, replace

from profiler_kit.errors import ProfkitError
from profiler_kit.util.artifacts import write_json_atomic

from .bubble import CPU_BASIS, GPU_BASIS, trace_bubbles

REPORT_NAME = "pipeline_report.json"
SCHEMA = "profkit.pipeline_report/1"


def bubble_rows(strategy: Any, run_dir: Path) -> list[dict[str, Any]]:
    """The bubble of each rank of ``strategy`` from its traces, ordered by rank."""
    traces = sorted(str(run_dir / f) for f in strategy.trace_files)
    return [
        {"rank": b.rank, "trace": Path(b.path).name, "steps": b.steps, "step_ns": b.step_ns,
         "busy_ns": b.busy_ns, "idle_ns": b.idle_ns, "idle_share": b.idle_share,
         "basis": b.basis, "p2p_ns": b.p2p_ns}
        for b in trace_bubbles(traces)
    ]


def annotate(result: Any) -> Any:
    """``result`` with every measured strategy's bubble in its ``info``: ``bubble`` (one
    row per rank) and ``idle_share_by_rank`` (what the results tables show)."""
    run_dir = Path(result.run_dir)
    strategies = []
    for s in result.strategies:
        if s.status == "ok" and s.trace_files:
            try:
                rows = bubble_rows(s, run_dir)
            except ProfkitError:  # an unreadable trace costs the bubble, not the run
                strategies.append(s)
                continue
            s = replace(s, info={**s.info, "bubble": rows,
                                 "idle_share_by_rank": [r["idle_share"] for r in rows]})
        strategies.append(s)
    return replace(result, strategies=tuple(strategies))


def strategy_entry(strategy: Any, run_dir: Path) -> dict[str, Any]:
    """One measured strategy: throughput, step statistics, speed-up and bubble per rank."""
    stats = strategy.stats
    return {
        "samples_per_s": strategy.throughput_items_per_s,
        "items_per_step": strategy.items_per_step,
        "step_ns": asdict(stats) if stats is not None else None,
        "speedup_vs_ddp": strategy.speedup,
        "schedule": strategy.info.get("schedule"),
        "stage_layers": strategy.info.get("stages"),
        "stage_ranks": strategy.info.get("stage_ranks"),
        "bubble": strategy.info.get("bubble") or bubble_rows(strategy, run_dir),
    }


def build_report(result: Any) -> dict[str, Any]:
    """The report of a finished run (``result`` is the runner's RunResult)."""
    run_dir = Path(result.run_dir)
    points: dict[str, dict[str, Any]] = {}
    for s in result.strategies:
        point = points.setdefault(s.point, {"point": s.point, "params": dict(s.point_params),
                                            "strategies": {}, "skipped": {}, "failed": {}})
        if s.status == "ok":
            point["strategies"][s.name] = strategy_entry(s, run_dir)
        elif s.status == "skipped":
            point["skipped"][s.name] = s.reason
        else:
            point["failed"][s.name] = s.error
    return {
        "schema": SCHEMA,
        "scenario": result.scenario,
        "device": result.device,
        "bubble_definition": {"cpu": CPU_BASIS, "gpu": GPU_BASIS},
        "points": list(points.values()),
    }


def write_report(result: Any) -> Path:
    path = Path(result.run_dir) / REPORT_NAME
    write_json_atomic(path, build_report(result))
    return path
