"""Results of a run: what the runner measured, in raw units, for renderers and run.json.

Statistics of samples and the strategy and run results, as frozen structs that encode
to run.json (``to_json``) and decode from it (``RunResult.from_json``, ``read_run``), so
readers of a finished run get the same typed objects the runner made. No torch here:
renderers, reports and readers of run.json import this without the measuring side.
Statistics use linear interpolation between order statistics (numpy's default,
``statistics.quantiles(method="inclusive")``).
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from profiler_kit import contention as _contention
from profiler_kit.contention import RoundContention
from profiler_kit.errors import UsageError
from profiler_kit.noise import NoiseVerdict
from profiler_kit.util.artifacts import RUN_JSON, RUN_SCHEMA, point_dir_name

OK = "ok"
FAILED = "failed"
SKIPPED = "skipped"
INTERRUPTED = "interrupted"

NOISY_IQR_FRACTION = 0.10  # IQR/median above this flags a result as noisy


# ---------------------------------------------------------------- statistics


class Stats(msgspec.Struct, frozen=True):
    """Summary of one set of samples (all nanoseconds)."""

    n: int
    median_ns: float
    iqr_ns: float
    mean_ns: float
    p50_ns: float
    p75_ns: float
    p90_ns: float
    p95_ns: float
    min_ns: int
    max_ns: int

    @property
    def iqr_fraction(self) -> float:
        """IQR relative to the median: the spread that decides whether a result is noisy."""
        return self.iqr_ns / self.median_ns if self.median_ns > 0 else float("nan")

    @property
    def noisy(self) -> bool:
        return self.iqr_fraction > NOISY_IQR_FRACTION

    def to_json(self) -> dict[str, Any]:
        data = msgspec.structs.asdict(self)
        data["iqr_fraction"] = self.iqr_fraction
        data["noisy"] = self.noisy
        return data


def stats(samples_ns: Sequence[int]) -> Stats:
    """Statistics of ``samples_ns``; raises ValueError when there are none."""
    if len(samples_ns) == 0:
        raise ValueError("no samples")
    a = np.asarray(samples_ns, dtype=np.float64)
    p25, p50, p75, p90, p95 = np.percentile(a, [25, 50, 75, 90, 95])
    return Stats(
        n=len(a),
        median_ns=float(p50),
        iqr_ns=float(p75 - p25),
        mean_ns=float(a.mean()),
        p50_ns=float(p50),
        p75_ns=float(p75),
        p90_ns=float(p90),
        p95_ns=float(p95),
        min_ns=int(min(samples_ns)),
        max_ns=int(max(samples_ns)),
    )


def throughput(items_per_step: float, median_ns: float) -> float | None:
    """Items per second at the median step time."""
    if median_ns <= 0:
        return None
    return items_per_step * 1e9 / median_ns


def speedup(baseline_items_per_s: float | None, items_per_s: float | None) -> float | None:
    """How many times the baseline's throughput (> 1 is faster). By throughput, not step
    time: a strategy over more ranks does more work per step (DDP's global batch grows
    with its ranks), and for equal work per step the two ratios are the same."""
    if not baseline_items_per_s or items_per_s is None:
        return None
    return items_per_s / baseline_items_per_s


def scaling_efficiency(items_per_s: float | None, world_size: int,
                       single_items_per_s: float | None) -> float | None:
    """Throughput over ``world_size`` times one process's throughput (1.0 is perfect)."""
    if not single_items_per_s or items_per_s is None or world_size < 1:
        return None
    return items_per_s / (world_size * single_items_per_s)


def slowest_rank(per_rank_samples_ns: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Each step's time is the slowest rank's: ranks wait for each other, so never pool them."""
    if not per_rank_samples_ns:
        return ()
    n = min(len(s) for s in per_rank_samples_ns)
    return tuple(max(int(s[i]) for s in per_rank_samples_ns) for i in range(n))


# ---------------------------------------------------------------- strategy and run



class Equivalence(msgspec.Struct, frozen=True):
    """Whether a strategy computed what the baseline computed, and by how much it differs."""

    checked: bool
    ok: bool
    max_rel_error: float | None = None  # largest ||out - ref|| / ||ref|| over the outputs
    tolerance: float | None = None
    criterion: str = ""  # "allclose" (float32) or "relative error of norm" (AMP)
    detail: str = ""  # why it failed, or why it was not checked

    def to_json(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)


class Prediction(msgspec.Struct, frozen=True):
    """What the what-if replay predicted for a strategy from another strategy's profiled
    trace (``source``, replayed with ``change``), against what the strategy measured.

    ``change`` is None where no what-if change models the strategy (``note`` says so);
    ``predicted_ns`` is None where the change models nothing on that trace (``note`` says
    why). Errors are (predicted - measured) / measured: ``error`` of ``timed_ns`` (or,
    in run.json files written before it, of ``predicted_ns``) against the strategy's
    timed median step, ``trace_error`` of ``predicted_ns`` against the step of its own
    profiled trace (the profiler's overhead on both sides)."""

    change: str | None = None
    source: str | None = None  # the strategy whose trace was replayed with the change
    source_step_ns: float | None = None  # that trace's measured step, before the change
    predicted_ns: float | None = None  # the replay's step with the change
    measured_ns: float | None = None  # this strategy's timed median step
    # the timed step predicted: the source's timed median times the replay's ratio (its
    # step with the change over its step without), so the profiler's own cost on the
    # traced steps is not read as an effect of the change; ``error`` is this one's
    timed_ns: float | None = None
    error: float | None = None
    trace_step_ns: float | None = None  # this strategy's own profiled trace's step
    trace_error: float | None = None
    # whether the replay of the source trace is trusted (it lands within 3 % of that trace's
    # measurement); None where nothing was replayed
    trusted: bool | None = None
    # why there is none (run.json files written before the fields below: the whole note,
    # what the replay said included)
    note: str = ""
    # what the replay said, as codes and figures ({"code", "figures"}: the renderers word
    # them): what the change touched, why the replay is not trusted (None: it is), and
    # the fixed delays' share of the steps' time where it makes the gain a lower bound
    replay_notes: tuple[dict[str, Any], ...] = ()
    untrusted_because: dict[str, Any] | None = None
    lower_bound_share: float | None = None

    def to_json(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)


class StrategyResult(msgspec.Struct, frozen=True):
    """One strategy at one point of the run (``point`` is "" without a sweep)."""

    name: str
    status: str  # ok / failed / skipped / interrupted
    point: str = ""
    point_params: dict[str, Any] = msgspec.field(default_factory=dict)
    amp: bool = False
    amp_dtype: str | None = None
    reason: str | None = None  # why skipped
    error: str | None = None  # why failed (one line)
    traceback: str | None = None
    dir: str | None = None  # strategy folder, relative to the run folder
    samples_ns: tuple[int, ...] = ()
    stats: Stats | None = None
    profiled: Stats | None = None
    phases: dict[str, Stats] = msgspec.field(default_factory=dict)
    # each phase's samples, every round pooled as ``samples_ns`` is: ``phases`` sums them
    phase_samples_ns: dict[str, tuple[int, ...]] = msgspec.field(default_factory=dict)
    items_per_step: int = 0
    throughput_items_per_s: float | None = None
    speedup: float | None = None  # this throughput / the baseline's throughput
    # whether the speedup is beyond noise: the 95 % interval of speedup - 1 and the model
    # that judged it (paired by round with --repeats, else within one run); None for the
    # baseline itself and where there is no timed baseline
    noise: NoiseVerdict | None = None
    peak_memory: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    info: dict[str, Any] = msgspec.field(default_factory=dict)
    trace_files: tuple[str, ...] = ()  # relative to the run folder
    key_averages_files: tuple[str, ...] = ()
    hotspots: dict[str, float] = msgspec.field(default_factory=dict)  # class -> share
    hotspot_basis: str = ""  # "self CPU time" or "GPU time"
    equivalence: Equivalence | None = None
    per_rank_samples_ns: tuple[tuple[int, ...], ...] = ()  # multi-process strategies only
    # each repeat's samples when the strategy ran in several independent rounds
    # (``--repeats``); ``samples_ns`` and ``stats`` pool them
    repeat_samples_ns: tuple[tuple[int, ...], ...] = ()
    world_size: int = 1  # ranks (processes) the strategy ran on
    # aggregate throughput / (world size x the single-process baseline's throughput)
    scaling_efficiency: float | None = None
    # against its point's baseline, from their traces: the change in step time term by
    # term with its evidence (the fields of analysis.diffs.step_diff.Waterfall; the
    # renderers word it), or why the profiled steps cannot explain the timing
    # (noise.explanation_conflict); and the change per term (a class's busy time,
    # "overlap", "idle"; "step": the total), ns. ``verdict``: the line that run.json files
    # written before ``explanation`` held instead
    explanation: dict[str, Any] | None = None
    explanation_withheld: str | None = None
    step_change_ns: dict[str, float] = msgspec.field(default_factory=dict)
    verdict: str | None = None
    # what competed with each timed round, in the order of the rounds (see contention.py)
    contention: tuple[RoundContention, ...] = ()
    # the what-if replay's prediction of this strategy from its counterpart's trace
    prediction: Prediction | None = None

    @property
    def label(self) -> str:
        return f"{self.point}/{self.name}" if self.point else self.name

    @property
    def rounds(self) -> int:
        return len(self.repeat_samples_ns) or (1 if self.samples_ns else 0)

    @property
    def round_samples_ns(self) -> tuple[tuple[int, ...], ...]:
        """Each timed round's samples (one round when the strategy was not repeated)."""
        return self.repeat_samples_ns or (self.samples_ns,)

    @property
    def last_round_median_ns(self) -> float | None:
        """The median of the latest round alone (``stats`` pools every round)."""
        last = self.repeat_samples_ns[-1] if self.repeat_samples_ns else self.samples_ns
        return float(np.percentile(last, 50)) if last else None

    @property
    def oversubscription(self) -> str | None:
        """A sentence when its busy threads outnumbered the free cores in some round."""
        return _contention.oversubscription(self.contention)

    @property
    def rank_medians_ns(self) -> tuple[float, ...]:
        """Each rank's median step time (empty for a single process), shown beside the
        slowest-rank step times to see which rank holds the others back."""
        return tuple(float(np.percentile(r, 50)) for r in self.per_rank_samples_ns if r)

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
            "phase_samples_ns": {k: list(v) for k, v in self.phase_samples_ns.items()},
            "items_per_step": self.items_per_step,
            "throughput_items_per_s": self.throughput_items_per_s,
            "speedup": self.speedup,
            "noise": noise_json(self.noise),
            "peak_memory": {k: dict(v) for k, v in self.peak_memory.items()},
            "info": dict(self.info),
            "trace_files": list(self.trace_files),
            "key_averages_files": list(self.key_averages_files),
            "hotspots": dict(self.hotspots),
            "hotspot_basis": self.hotspot_basis,
            "equivalence": self.equivalence.to_json() if self.equivalence else None,
            "per_rank_samples_ns": [list(s) for s in self.per_rank_samples_ns],
            "repeat_samples_ns": [list(s) for s in self.repeat_samples_ns],
            "world_size": self.world_size,
            "scaling_efficiency": self.scaling_efficiency,
            "explanation": self.explanation,
            "explanation_withheld": self.explanation_withheld,
            "step_change_ns": dict(self.step_change_ns),
            **({"verdict": self.verdict} if self.verdict is not None else {}),
            "contention": msgspec.json.decode(msgspec.json.encode(self.contention)),
            "prediction": self.prediction.to_json() if self.prediction else None,
        }


def noise_json(n: NoiseVerdict | None) -> dict[str, Any] | None:
    """A verdict for run.json: its fields, and its ``state`` in the words every format
    prints. The state is derived, not read back, so readers of files without it (and
    older readers of files with it, which ignore the key) decode the same verdict."""
    return None if n is None else {**msgspec.structs.asdict(n), "state": n.state}


class RunResult(msgspec.Struct, frozen=True):
    """Everything one ``profkit run`` measured."""

    run_dir: Path
    scenario: str
    description: str
    baseline: str
    item_unit: str
    device: str
    params: dict[str, Any]
    sweep: tuple[str, ...]  # names of the swept parameters
    points: tuple[dict[str, Any], ...]  # one parameter set per point ({} without a sweep)
    options: dict[str, Any]
    environment: dict[str, Any]
    strategies: tuple[StrategyResult, ...]
    started_at: str
    finished_at: str | None = None
    interrupted: bool = False
    seed: int = 0
    # secondary reports that could not be written (one line each); the run itself stands
    report_errors: tuple[str, ...] = ()

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
        return [point_dir_name(p) for p in self.points] or [""]

    @property
    def nothing_ran(self) -> bool:
        """Every strategy was skipped: the run measured nothing."""
        return bool(self.strategies) and len(self.skipped) == len(self.strategies)

    @property
    def contention(self) -> _contention.RunContention | None:
        """What competed with the run's timed rounds, every strategy's together."""
        return _contention.of_run([r for s in self.strategies for r in s.contention])

    @property
    def exit_status(self) -> int:
        """130 when interrupted, 2 when nothing could run, 1 when a strategy failed or a
        report could not be written, else 0."""
        if self.interrupted:
            return 130
        if self.nothing_ran:
            return 2
        return 1 if self.failed or self.report_errors else 0

    @property
    def tensorboard_command(self) -> str:
        """The command that shows this run's traces: ``profkit tensorboard`` checks that the
        PyTorch profiler plugin is there (plain ``tensorboard`` may lack it) and opens it."""
        return f"profkit tensorboard {shlex.quote(str(self.run_dir))}"

    def to_json(self) -> dict[str, Any]:
        """run.json's document; ``skipped``, ``failed`` and ``tensorboard_command`` are
        derived for readers of the file and are not read back."""
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
            "report_errors": list(self.report_errors),
            "tensorboard_command": self.tensorboard_command,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunResult:
        """The run that ``doc`` (run.json's document) records; ``msgspec.ValidationError``
        names the field when ``doc`` is not one."""
        if not isinstance(doc, Mapping) or doc.get("schema") != RUN_SCHEMA:
            found = doc.get("schema") if isinstance(doc, Mapping) else None
            raise msgspec.ValidationError(f"expected schema {RUN_SCHEMA!r}, got {found!r}")
        scenario = doc.get("scenario")
        if not isinstance(scenario, Mapping):
            raise msgspec.ValidationError("Expected `object` - at `$.scenario`")
        fields = {k: v for k, v in doc.items() if k in cls.__struct_fields__}
        fields.update(scenario=scenario.get("name"), description=scenario.get("description"),
                      baseline=scenario.get("baseline"), item_unit=scenario.get("item_unit"))
        return msgspec.convert(fields, cls, dec_hook=_decode_path)


def _decode_path(kind: type, value: Any) -> Any:
    if kind is Path and isinstance(value, str):
        return Path(value)
    raise NotImplementedError(f"cannot decode {kind}")


def read_run(path: str | Path) -> RunResult:
    """The run recorded in a run folder or its run.json; UsageError when there is none."""
    path = Path(path)
    file = path / RUN_JSON if path.is_dir() else path
    try:
        with open(file, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UsageError(f"{file}: not a readable run.json ({reason})") from None
    return decode_run(doc, file)


def decode_run(doc: Any, source: str | Path) -> RunResult:
    """``doc`` (run.json's document, read from ``source``) as a RunResult; UsageError
    naming ``source`` and the bad field when it is not one."""
    try:
        return RunResult.from_json(doc)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{source}: not a profkit run record ({exc})") from None


def add_repeat(s: StrategyResult, samples_ns: Sequence[int],
               per_rank_samples_ns: Sequence[Sequence[int]] = (),
               phase_samples_ns: Mapping[str, Sequence[int]] | None = None,
               contention: RoundContention | None = None) -> StrategyResult:
    """``s`` with one more independent round's samples: the statistics and throughput
    pool every round's samples, ``repeat_samples_ns`` keeps them apart for the noise
    verdicts between runs, and each rank's and each phase's samples grow alike (so the
    phases still add up to the step), as does the record of what competed with them."""
    repeats = (*s.round_samples_ns, tuple(int(v) for v in samples_ns))
    pooled = tuple(v for r in repeats for v in r)
    st = stats(pooled)
    per_rank = tuple(
        (*old, *(int(v) for v in new))
        for old, new in zip(s.per_rank_samples_ns, per_rank_samples_ns, strict=True)
    ) if s.per_rank_samples_ns else ()
    phase_samples = {name: (*old, *(int(v) for v in (phase_samples_ns or {}).get(name, ())))
                     for name, old in s.phase_samples_ns.items()}
    return msgspec.structs.replace(
        s, samples_ns=pooled, stats=st, repeat_samples_ns=repeats,
        per_rank_samples_ns=per_rank, phase_samples_ns=phase_samples,
        phases={name: stats(v) for name, v in phase_samples.items() if v} or s.phases,
        throughput_items_per_s=throughput(s.items_per_step, st.median_ns),
        contention=(*s.contention, contention) if contention is not None else s.contention)


def against_baseline(strategies: Sequence[StrategyResult], baseline: str
                     ) -> tuple[StrategyResult, ...]:
    """Each timed strategy's speedup in throughput against the baseline of its point, with
    its noise verdict, and, where that baseline is one process, its scaling efficiency over
    its ranks (for one process the same number as the speedup)."""
    base = {s.point: s for s in strategies
            if s.name == baseline and s.status == OK and s.throughput_items_per_s}
    found = []
    for s in strategies:
        b = base.get(s.point)
        if s.status == OK and s.stats:
            rate = b.throughput_items_per_s if b else None
            single = rate if b is not None and b.world_size == 1 else None
            s = msgspec.structs.replace(
                s, speedup=speedup(rate, s.throughput_items_per_s),
                noise=_speedup_noise(b, s) if b is not None and b is not s else None,
                scaling_efficiency=scaling_efficiency(s.throughput_items_per_s, s.world_size,
                                                      single))
        found.append(s)
    return tuple(found)


def _speedup_noise(base: StrategyResult, s: StrategyResult) -> NoiseVerdict:
    """Whether ``s``'s speedup over ``base`` (same point) is beyond noise: not judged where
    the two ran under different contention and the slower side had it worse (an unstable
    side is judged in ``noise``); where the faster side had it worse, the verdict stands
    with the reason, since quiet the gap would only grow."""
    work = (s.items_per_step / base.items_per_step
            if s.items_per_step > 0 and base.items_per_step > 0 else 1.0)
    v = _judged(base.round_samples_ns, s.round_samples_ns, work)
    faster = (_contention.STRATEGY_SIDE if (v.ci_low_fraction or 0) > 0 else
              _contention.BASELINE_SIDE if (v.ci_high_fraction or 0) < 0 else None)
    return _contention.judged(v, _contention.different(base.contention, s.contention), faster)


@functools.lru_cache(maxsize=256)
def _judged(base_rounds: tuple[tuple[int, ...], ...], rounds: tuple[tuple[int, ...], ...],
            work: float) -> NoiseVerdict:
    """Cached: the runner recomputes every speedup each time a strategy is added. scipy is
    imported here, on the measuring side, not where results are only read."""
    from profiler_kit.noise import speedup_verdict

    return speedup_verdict(base_rounds, rounds, work)


def best(strategies: Sequence[StrategyResult]) -> StrategyResult | None:
    """The timed strategy with the highest throughput (the shortest median step where
    throughput is unknown, i.e. no items per step), when that is beyond noise; else None.

    Where the strategies carry noise verdicts against their baseline, the top one is best
    only when it is clear of every other: the baseline when every other strategy is beyond
    noise slower; another strategy when it is beyond noise faster than the baseline and
    its interval lies wholly above every other strategy's. Without verdicts (no timed
    baseline, or a run recorded before them) the top one by throughput alone."""
    timed = [s for s in strategies if s.status == OK and s.stats]
    if not timed:
        return None
    if all(s.throughput_items_per_s for s in timed):
        top = max(timed, key=lambda s: s.throughput_items_per_s or 0.0)
    else:
        top = min(timed, key=lambda s: s.stats.median_ns)  # type: ignore[union-attr]
    judged = [s for s in timed if s.noise is not None]
    if not judged:
        return top
    others = [s for s in judged if s is not top]
    if top.noise is None:  # the baseline on top
        clear = all(o.noise and o.noise.beyond_noise and (o.noise.ci_high_fraction or 0) < 0
                    for o in others) and len(others) == len(timed) - 1
        return top if clear else None
    n = top.noise
    if not (n.beyond_noise and n.ci_low_fraction is not None and n.ci_low_fraction > 0):
        return None
    clear = all(o.noise and o.noise.ci_high_fraction is not None
                and o.noise.ci_high_fraction < n.ci_low_fraction for o in others)
    return top if clear and len(others) == len(timed) - 2 else None
