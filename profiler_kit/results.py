"""Results of a run: what the runner measured, in raw units, for renderers and run.json.

No torch here: renderers and readers of run.json import this without the measuring side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profiler_kit.timing import Stats

OK = "ok"
FAILED = "failed"
SKIPPED = "skipped"
INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Equivalence:
    """Whether a strategy computed what the baseline computed, and by how much it differs."""

    checked: bool
    ok: bool
    max_rel_error: float | None = None  # largest ||out - ref|| / ||ref|| over the outputs
    tolerance: float | None = None
    criterion: str = ""  # "allclose" (float32) or "relative error of norm" (AMP)
    detail: str = ""  # why it failed, or why it was not checked

    def to_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked, "ok": self.ok, "max_rel_error": self.max_rel_error,
            "tolerance": self.tolerance, "criterion": self.criterion, "detail": self.detail,
        }


@dataclass(frozen=True)
class StrategyResult:
    """One strategy at one point of the run (``point`` is "" without a sweep)."""

    name: str
    status: str  # ok / failed / skipped / interrupted
    point: str = ""
    point_params: Mapping[str, Any] = field(default_factory=dict)
    amp: bool = False
    amp_dtype: str | None = None
    reason: str | None = None  # why skipped
    error: str | None = None  # why failed (one line)
    traceback: str | None = None
    dir: str | None = None  # strategy folder, relative to the run folder
    samples_ns: tuple[int, ...] = ()
    stats: Stats | None = None
    profiled: Stats | None = None
    phases: Mapping[str, Stats] = field(default_factory=dict)
    items_per_step: int = 0
    throughput_items_per_s: float | None = None
    speedup: float | None = None  # baseline median / this median
    peak_memory: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    trace_files: tuple[str, ...] = ()  # relative to the run folder
    key_averages_files: tuple[str, ...] = ()
    hotspots: Mapping[str, float] = field(default_factory=dict)  # class -> share of self time
    hotspot_basis: str = ""  # "self CPU time" or "GPU time"
    equivalence: Equivalence | None = None
    per_rank_samples_ns: tuple[tuple[int, ...], ...] = ()  # multi-process strategies only

    @property
    def label(self) -> str:
        return f"{self.point}/{self.name}" if self.point else self.name

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "point": self.point,
            "point_params": dict(self.point_params),
            "amp": self.amp,
            "amp_dtype": self.amp_dtype,
            "reason": self.reason,
            "error": self.error,
            "traceback": self.traceback,
            "dir": self.dir,
            "samples_ns": list(self.samples_ns),
            "stats": self.stats.to_json() if self.stats else None,
            "profiled": self.profiled.to_json() if self.profiled else None,
            "phases": {k: v.to_json() for k, v in self.phases.items()},
            "items_per_step": self.items_per_step,
            "throughput_items_per_s": self.throughput_items_per_s,
            "speedup": self.speedup,
            "peak_memory": {k: dict(v) for k, v in self.peak_memory.items()},
            "info": dict(self.info),
            "trace_files": list(self.trace_files),
            "key_averages_files": list(self.key_averages_files),
            "hotspots": dict(self.hotspots),
            "hotspot_basis": self.hotspot_basis,
            "equivalence": self.equivalence.to_json() if self.equivalence else None,
            "per_rank_samples_ns": [list(s) for s in self.per_rank_samples_ns],
        }


@dataclass(frozen=True)
class RunResult:
    """Everything one ``profkit run`` measured."""

    run_dir: Path
    scenario: str
    description: str
    baseline: str
    item_unit: str
    device: str
    params: Mapping[str, Any]
    sweep: tuple[str, ...]  # names of the swept parameters
    points: tuple[Mapping[str, Any], ...]  # one parameter set per point ({} without a sweep)
    options: Mapping[str, Any]
    environment: Mapping[str, Any]
    strategies: tuple[StrategyResult, ...]
    started_at: str
    finished_at: str | None = None
    interrupted: bool = False
    seed: int = 0

    @property
    def skipped(self) -> list[StrategyResult]:
        return [s for s in self.strategies if s.status == SKIPPED]

    @property
    def failed(self) -> list[StrategyResult]:
        return [s for s in self.strategies if s.status == FAILED]

    def at(self, point: str) -> list[StrategyResult]:
        return [s for s in self.strategies if s.point == point]

    @property
    def point_labels(self) -> list[str]:
        from profiler_kit.artifacts import point_dir_name

        return [point_dir_name(p) for p in self.points] or [""]

    @property
    def exit_status(self) -> int:
        """130 when interrupted, 1 when a strategy failed, else 0."""
        if self.interrupted:
            return 130
        return 1 if self.failed else 0

    @property
    def tensorboard_command(self) -> str:
        import shlex

        return f"tensorboard --logdir {shlex.quote(str(self.run_dir))}"

    def to_json(self) -> dict[str, Any]:
        from profiler_kit.artifacts import RUN_SCHEMA

        return {
            "schema": RUN_SCHEMA,
            "run_id": self.run_dir.name,
            "run_dir": str(self.run_dir),
            "scenario": {
                "name": self.scenario, "description": self.description,
                "baseline": self.baseline, "item_unit": self.item_unit,
            },
            "device": self.device,
            "params": dict(self.params),
            "sweep": list(self.sweep),
            "points": [dict(p) for p in self.points],
            "options": dict(self.options),
            "seed": self.seed,
            "environment": dict(self.environment),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "interrupted": self.interrupted,
            "strategies": [s.to_json() for s in self.strategies],
            "skipped": [{"name": s.name, "point": s.point, "reason": s.reason}
                        for s in self.skipped],
            "failed": [{"name": s.name, "point": s.point, "error": s.error} for s in self.failed],
            "tensorboard_command": self.tensorboard_command,
        }
