"""Runs a scenario: every strategy at every point, measured, checked and recorded.

``passes.measure`` measures one strategy in one process; ``run`` decides which
strategies run, checks each against the baseline, records skipped and failed ones,
rewrites run.json after every strategy so an interrupted run keeps what finished,
then lets the scenario add to the result (its declared hooks) and writes the summary.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
import shutil
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from msgspec.structs import replace

from profiler_kit import results
from profiler_kit.analysis import hotspot_summary
from profiler_kit.errors import OutputError, UsageError
from profiler_kit.measure import devices, distributed, equivalence, gpu_counters
from profiler_kit.measure.distributed import is_output_rank
from profiler_kit.measure.distributed.launch import run_strategy
from profiler_kit.measure.passes import DEFAULT_WORKER, Measurement, MeasureOptions, measure
from profiler_kit.results import (
    FAILED,
    INTERRUPTED,
    OK,
    SKIPPED,
    Equivalence,
    RunResult,
    StrategyResult,
)
from profiler_kit.scenario import RunConfig, Scenario, Strategy
from profiler_kit.util import artifacts, outputs

__all__ = ["RunObserver", "resolve_params", "run", "select_strategies", "validate_options"]

# a strategy's info: one line per rank whose traces did not reach the run folder (under
# torchrun, its host dropped out while sending them); the measurement stands
FILES_LOST = "files_lost"


class RunObserver(Protocol):
    """Told what the runner is doing, e.g. to draw progress bars."""

    def strategy_started(self, label: str) -> None: ...

    def progress(self, pass_name: str, done: int, total: int) -> None: ...

    def strategy_finished(self, result: StrategyResult) -> None: ...


# ---------------------------------------------------------------- parameters


def _convert(param: Any, value: Any) -> Any:
    """A value of the parameter's type, from Python or from a command-line string."""
    kind = param.type
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise UsageError(f"{param.flag}: expected true or false, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, (kind, str, int, float)):
        raise UsageError(f"{param.flag}: expected {kind.__name__}, got {value!r}")
    try:
        converted = kind(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise UsageError(f"{param.flag}: expected {kind.__name__}, got {value!r}") from None
    if kind is int and isinstance(value, float) and value != converted:
        raise UsageError(f"{param.flag}: expected an integer, got {value!r}")
    if param.min_value is not None and converted < param.min_value:
        raise UsageError(f"{param.flag} must be at least {param.min_value:g}, got {value}")
    if param.choices and converted not in param.choices:
        known = ", ".join(str(c) for c in param.choices)
        raise UsageError(f"{param.flag}: choose one of {known}, got {value!r}")
    return converted


def resolve_params(scenario: Scenario, given: Mapping[str, Any], device: str) -> dict[str, Any]:
    """Every parameter's value (given, else the device's default), checked; sweep
    parameters become tuples of values."""
    known = {p.name for p in scenario.params}
    for name in given:
        if name not in known:
            names = ", ".join(p.flag for p in scenario.params) or "none"
            flag = "--" + name.replace("_", "-")
            raise UsageError(
                f"scenario {scenario.name!r} has no parameter {flag} (its parameters: {names})"
            )
    resolved: dict[str, Any] = {}
    for p in scenario.params:
        value = given.get(p.name)
        if value is None:
            value = p.default_for(device)
        if p.sweep:
            items = value.split(",") if isinstance(value, str) else value
            items = items if isinstance(items, (list, tuple)) else [items]
            items = [v for v in items if not (isinstance(v, str) and not v.strip())]
            if not items:
                raise UsageError(f"{p.flag}: give at least one value")
            resolved[p.name] = tuple(_convert(p, v) for v in items)
        else:
            resolved[p.name] = _convert(p, value)
    return resolved


def points_of(scenario: Scenario, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The sweep points: one dict of swept values each (``[{}]`` without a sweep)."""
    swept = [p.name for p in scenario.params if p.sweep]
    if not swept:
        return [{}]
    return [dict(zip(swept, combo, strict=True))
            for combo in itertools.product(*(params[n] for n in swept))]


def validate_options(options: MeasureOptions) -> None:
    checks = (
        ("--iterations", options.iterations, 1),
        ("--warmup", options.warmup, 0),
        ("--profile-wait", options.profile_wait, 0),
        ("--profile-warmup", options.profile_warmup, 0),
        ("--profile-active", options.profile_active, 1),
        ("--profile-repeat", options.profile_repeat, 1),
        ("--repeats", options.repeats, 1),
    )
    for flag, value, low in checks:
        if value < low:
            raise UsageError(f"{flag} must be at least {low}, got {value}")


def select_strategies(
    scenario: Scenario,
    params: Mapping[str, Any],
    names: Sequence[str] | None = None,
    opt_in: Sequence[str] = (),
    amp: bool = False,
) -> list[Strategy]:
    """The strategies of one point, baseline first, each AMP twin after its strategy."""
    base = scenario.expand(params)
    if amp and not scenario.supports_amp:
        raise UsageError(f"scenario {scenario.name!r} has no AMP variants (--amp)")
    known: dict[str, Strategy] = {}
    for s in base:
        known[s.name] = s
        if scenario.supports_amp:
            known[s.amp_twin().name] = s.amp_twin()
    if names:
        wanted = set()
        for n in names:
            if n not in known:
                raise UsageError(
                    f"scenario {scenario.name!r} has no strategy {n!r} "
                    f"(choose from {', '.join(known)})"
                )
            wanted.add(n)
    else:
        wanted = {s.name for s in base if s.opt_in is None or s.opt_in in set(opt_in)}
    if amp:
        wanted |= {known[n].amp_twin().name for n in list(wanted) if not known[n].amp}
    chosen: list[Strategy] = []
    for s in base:
        if s.name in wanted:
            chosen.append(s)
        twin = f"{s.name}+amp"
        if twin in wanted and twin in known:
            chosen.append(known[twin])
    chosen.sort(key=lambda s: s.name != scenario.baseline)
    return chosen


# ---------------------------------------------------------------- the run


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class _Run:
    """The state of one run in progress; ``save`` rewrites run.json from it."""

    def __init__(self, result: RunResult) -> None:
        self.result = result

    def add(self, strategy: StrategyResult) -> None:
        """Record a strategy; speedups and scaling are against the baseline's throughput.
        Ranks' files that did not reach the run folder are among the run's report errors."""
        strategies = results.against_baseline((*self.result.strategies, strategy),
                                              self.result.baseline)
        lost = tuple(f"{strategy.label}: {line}" for line in strategy.info.get(FILES_LOST, ()))
        self.result = replace(self.result, strategies=strategies,
                              report_errors=(*self.result.report_errors, *lost))
        self.save()

    def put(self, strategy: StrategyResult) -> None:
        """Replace the recorded result of the same strategy at the same point."""
        kept = tuple(strategy if (s.point, s.name) == (strategy.point, strategy.name) else s
                     for s in self.result.strategies)
        self.result = replace(self.result, strategies=results.against_baseline(
            kept, self.result.baseline))
        self.save()

    def get(self, point: str, name: str) -> StrategyResult:
        return next(s for s in self.result.strategies if (s.point, s.name) == (point, name))

    def save(self) -> None:
        artifacts.write_json_atomic(self.result.run_dir / artifacts.RUN_JSON,
                                    self.result.to_json())


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """What one run measures and where it goes: the scenario and its parameters (Python
    values or command-line strings; sweep parameters take lists), the device, the
    strategies (None: the scenario's defaults, plus ``opt_in``), autocast, the measuring
    options, the folder the run folder goes in, the seed, the command line to record, and
    whether an existing output file profkit wrote may be replaced."""

    scenario: Scenario
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    device: str = "auto"
    strategies: Sequence[str] | None = None
    opt_in: Sequence[str] = ()
    amp: bool = False
    options: MeasureOptions = dataclasses.field(default_factory=MeasureOptions)
    out: str | Path = "traces"
    seed: int = 0
    argv: list[str] | None = None
    force: bool = False


def run(
    request: RunRequest,
    *,
    observer: RunObserver | None = None,
    summary: Callable[[RunResult], str] | None = None,
    verdicts: Callable[[RunResult], RunResult] | None = None,
) -> RunResult:
    """Measure every selected strategy of the request's scenario at every point; write the
    run folder
    (run.json, traces, key averages, the scenario's own reports, and ``summary(result)``
    as summary.md). ``verdicts(result)`` adds to each strategy what its traces say
    against the baseline's, before the summary is written.

    Bad input raises UsageError before anything runs. A failing strategy is recorded
    and the others still run; Ctrl-C ends the run with what finished recorded and
    ``interrupted`` set. Under torchrun every rank runs this; only rank 0 keeps a run
    folder (the other ranks write their traces into rank 0's strategy folders, see
    :mod:`profiler_kit.measure.distributed`). Output paths (``out`` and the scenario's
    output parameters) are checked before anything runs; an existing file among the
    latter is replaced only with ``force`` (see :mod:`profiler_kit.util.outputs`). A report
    the scenario cannot write after the run is recorded in ``report_errors``, as are a
    rank's traces that never reached rank 0's run folder (``FILES_LOST``).
    """
    if not is_output_rank():
        quiet_out = tempfile.mkdtemp(prefix="profkit-rank-")
        try:
            return _measure_run(dataclasses.replace(request, out=quiet_out), observer)
        finally:
            shutil.rmtree(quiet_out, ignore_errors=True)
    result = _measure_run(request, observer)
    result = _scenario_extras(request.scenario, result)
    if verdicts is not None:
        result = verdicts(result)
    if summary is not None:
        try:
            artifacts.write_text_atomic(result.run_dir / artifacts.SUMMARY_MD, summary(result))
        except OSError as exc:
            result = replace(result, report_errors=(
                *result.report_errors,
                str(outputs.write_error(result.run_dir / artifacts.SUMMARY_MD, exc))))
    return result


def check_outputs(scenario: Scenario, params: Mapping[str, Any], out: str | Path,
                  force: bool) -> None:
    """Before anything runs: the output folder can take a run folder, and every output
    parameter names a file that may be written."""
    outputs.check_folder(out, "--out")
    for p in scenario.params:
        value = params.get(p.name)
        if p.output and isinstance(value, str) and value:
            outputs.check(value, p.flag, force=force)


def _new_run_dir(out: str | Path, scenario: Scenario) -> Path:
    try:
        return artifacts.new_run_dir(out, scenario.name)
    except OSError as exc:
        raise outputs.write_error(exc.filename or out, exc, after_work=False) from None


def _distributed_environment(scenario: Scenario, result: RunResult) -> dict[str, Any]:
    """Launcher, backend, topology and the host of each rank, for every scenario whose
    strategies run as ranks (processes; a user's own included) and every run torchrun
    started."""
    if not (distributed.under_torchrun()
            or any(s.processes for s in scenario.strategies)):
        return {}
    return {"distributed": distributed.environment(result.device)}


def _scenario_extras(scenario: Scenario, result: RunResult) -> RunResult:
    """The scenario's after-run hooks: ``environment`` adds to run.json's environment,
    ``annotate_run`` adds what the traces say to each strategy's ``info``, ``finish_run``
    writes the scenario's own reports."""
    extra = {**_distributed_environment(scenario, result), **scenario.environment(result.device)}
    if extra:
        result = replace(result, environment={**result.environment, **extra})
    result = scenario.annotate_run(result)
    artifacts.write_json_atomic(result.run_dir / artifacts.RUN_JSON, result.to_json())
    try:
        scenario.finish_run(result)
    except (OutputError, OSError) as exc:  # the run and its summary stand without it
        line = str(exc) if isinstance(exc, OutputError) else str(
            outputs.write_error(getattr(exc, "filename", None) or result.run_dir, exc))
        result = replace(result, report_errors=(*result.report_errors, line))
        artifacts.write_json_atomic(result.run_dir / artifacts.RUN_JSON, result.to_json())
    return result


def _measure_run(request: RunRequest, observer: RunObserver | None) -> RunResult:
    scenario, options, seed = request.scenario, request.options, request.seed
    validate_options(options)
    device = devices.resolve(request.device)
    if options.counters:
        why = gpu_counters.why_not(device != "cpu")
        if why is not None:
            raise UsageError(f"--counters samples the GPU's counters, which cannot be here: "
                             f"{why}")
    if options.memory_snapshot and device == "cpu":
        raise UsageError("--memory-snapshot records the CUDA caching allocator and needs a "
                         "CUDA device; this run is on the CPU (--with-stack records memory "
                         "by category there)")
    resolved = dict(scenario.resolve(resolve_params(scenario, request.params or {}, device)))
    check_outputs(scenario, resolved, request.out, request.force)
    points = points_of(scenario, resolved)
    plans = []
    for point in points:
        point_params = {**resolved, **point}
        scenario.validate(point_params)
        chosen = select_strategies(scenario, point_params, request.strategies, request.opt_in,
                                   request.amp)
        plans.append((point, point_params, chosen))

    run_dir = _new_run_dir(request.out, scenario)
    state = _Run(RunResult(
        run_dir=run_dir,
        scenario=scenario.name,
        description=scenario.description,
        baseline=scenario.baseline,
        item_unit=scenario.item_unit,
        device=device,
        params=resolved,
        sweep=tuple(p.name for p in scenario.params if p.sweep),
        points=tuple(points) if points != [{}] else (),
        options=asdict(options),
        environment=devices.environment(request.argv),
        strategies=(),
        started_at=_now(),
        seed=seed,
    ))
    state.save()
    try:
        for point, point_params, chosen in plans:
            _run_point(state, scenario, point, point_params, chosen, device, seed, options,
                       observer)
    except KeyboardInterrupt:
        state.result = replace(state.result, interrupted=True)
    state.result = replace(state.result, finished_at=_now())
    state.save()
    return state.result


def _run_point(state: _Run, scenario: Scenario, point: Mapping[str, Any],
               point_params: Mapping[str, Any], chosen: list[Strategy], device: str,
               seed: int, options: MeasureOptions, observer: RunObserver | None) -> None:
    label = artifacts.point_dir_name(point)
    reference: list[Any] | None = None
    reference_note = ""
    baseline_needed = any(s.name != scenario.baseline and not s.processes for s in chosen)
    if baseline_needed and scenario.baseline not in {s.name for s in chosen}:
        reference, reference_note = _reference(scenario, point_params, device, seed)
    reference, reference_note = _run_strategies(
        state, scenario, label, point_params, chosen, device, seed, options, observer,
        reference, reference_note)
    # adaptive searches (e.g. stacking the knobs that won): more strategies, chosen from
    # what this point measured so far, until the scenario has none left to try
    while True:
        done = [s for s in state.result.strategies if s.point == label]
        more = [s for s in scenario.next_strategies(done, point_params)
                if s.name not in {d.name for d in done}]
        if not more:
            return
        reference, reference_note = _run_strategies(
            state, scenario, label, point_params, more, device, seed, options, observer,
            reference, reference_note)


def _run_strategies(state: _Run, scenario: Scenario, label: str,
                    point_params: Mapping[str, Any], chosen: Sequence[Strategy], device: str,
                    seed: int, options: MeasureOptions, observer: RunObserver | None,
                    reference: list[Any] | None, reference_note: str
                    ) -> tuple[list[Any] | None, str]:
    """The first round of every strategy (checked against ``reference``, the baseline's
    outputs, and profiled), then the later rounds in turns; the reference (set when the
    baseline is among ``chosen``) and why there is none."""
    timed: list[tuple[Strategy, RunConfig, str]] = []  # measured: repeated in later rounds
    for strategy in chosen:
        common = dict(name=strategy.name, point=label, point_params=dict(point_params),
                      amp=strategy.amp, world_size=strategy.world_size if strategy.processes else 1,
                      amp_dtype=(strategy.options.get("amp_dtype") or devices.amp_dtype(device))
                      if strategy.amp else None)
        if observer:
            observer.strategy_started(f"{label}/{strategy.name}" if label else strategy.name)
        reason = (devices.unmet_requirement(strategy, device)
                  or scenario.skip_reason(strategy, point_params))
        if reason:
            result = StrategyResult(status=SKIPPED, reason=reason, **common)
            state.add(result)
            if observer:
                observer.strategy_finished(result)
            continue
        rel_dir = f"{label}/{strategy.name}" if label else strategy.name
        config = RunConfig(params=dict(point_params), device=device,
                           amp_dtype=common["amp_dtype"], seed=seed)
        is_baseline = strategy.name == scenario.baseline
        try:
            result, outputs = _measure_strategy(
                scenario, strategy, config, options, state.result.run_dir, rel_dir, common,
                reference if not is_baseline else None,
                reference_note, observer,
            )
        except KeyboardInterrupt:
            state.add(StrategyResult(status=INTERRUPTED, error="interrupted (Ctrl-C)",
                                     dir=rel_dir, **common))
            raise
        except UsageError:
            raise
        except Exception as exc:  # a failing strategy must not end the run
            _free_device_memory()
            result = StrategyResult(
                status=FAILED, error=_one_line(exc), traceback=traceback.format_exc(),
                dir=rel_dir, **common,
            )
            outputs = None
        if is_baseline and result.status == OK and outputs is not None:
            reference = outputs
        elif is_baseline and result.status == FAILED:
            reference_note = f"the baseline {scenario.baseline!r} failed"
        if result.status == OK:
            timed.append((strategy, config, rel_dir))
        state.add(result)
        if observer:
            observer.strategy_finished(result)

    # Later rounds take turns over the strategies, so drift of the machine in the
    # meantime (other load, clocks, caches) weighs on every strategy alike.
    for round_no in range(2, options.repeats + 1):
        for strategy, config, rel_dir in timed:
            _repeat(state, scenario, strategy, config, options, label, rel_dir, round_no,
                    observer)
    return reference, reference_note


def _repeat(state: _Run, scenario: Scenario, strategy: Strategy, config: RunConfig,
            options: MeasureOptions, label: str, rel_dir: str, round_no: int,
            observer: RunObserver | None) -> None:
    """One more independent round of a strategy that was measured: a fresh workload (fresh
    ranks for a multi-process strategy), warmed up and timed without the profiler; its
    samples join the strategy's as one more repeat. A failing round fails the strategy."""
    current = state.get(label, strategy.name)
    if current.status != OK:
        return
    if observer:
        observer.strategy_started(f"{current.label} {round_no}/{options.repeats}")
    timing = dataclasses.replace(options, profile=False)
    strategy_dir = state.result.run_dir / rel_dir
    progress = observer.progress if observer else None
    try:
        if strategy.processes:
            per_rank = run_strategy(scenario, strategy, config, timing, strategy_dir)
        else:
            workload = scenario.workload(strategy, config)
            try:
                per_rank = [measure(workload, timing, strategy_dir, DEFAULT_WORKER, progress)]
            finally:
                workload.close()
    except (KeyboardInterrupt, UsageError):
        raise
    except Exception as exc:  # a failing round must not end the run
        _free_device_memory()
        result = replace(current, status=FAILED, traceback=traceback.format_exc(),
                         error=f"round {round_no} of {options.repeats}: {_one_line(exc)}")
    else:
        multi = len(per_rank) > 1
        samples = (results.slowest_rank([m.samples_ns for m in per_rank]) if multi
                   else per_rank[0].samples_ns)
        result = results.add_repeat(current, samples,
                                    [m.samples_ns for m in per_rank] if multi else (),
                                    per_rank[0].phase_samples_ns, per_rank[0].contention)
    state.put(result)
    if observer:
        observer.strategy_finished(result)


def _reference(scenario: Scenario, params: Mapping[str, Any], device: str,
               seed: int) -> tuple[list[Any] | None, str]:
    """The baseline's outputs when the baseline itself is not part of the run."""
    base = next((s for s in scenario.expand(params) if s.name == scenario.baseline), None)
    if base is None or devices.unmet_requirement(base, device):
        return None, f"the baseline {scenario.baseline!r} cannot run here"
    try:
        workload = scenario.workload(base, RunConfig(params=dict(params), device=device, seed=seed))
        try:
            return equivalence.snapshot(workload.outputs()), ""
        finally:
            workload.close()
    except UsageError:
        raise
    except Exception as exc:  # the strategies still run, unchecked, and say why
        _free_device_memory()
        return None, f"the baseline {scenario.baseline!r} failed: {_one_line(exc)}"


def _measure_strategy(
    scenario: Scenario, strategy: Strategy, config: RunConfig, options: MeasureOptions,
    run_dir: Path, rel_dir: str, common: dict[str, Any],
    reference: list[Any] | None, reference_note: str, observer: RunObserver | None,
) -> tuple[StrategyResult, list[Any] | None]:
    progress = observer.progress if observer else None
    strategy_dir = run_dir / rel_dir
    if strategy.processes:
        per_rank = run_strategy(scenario, strategy, config, options, strategy_dir)
        check = Equivalence(False, True, detail="checked by the ranks, if at all")
        return _result_from(per_rank, run_dir, rel_dir, common, check), None

    _free_device_memory()  # an earlier workload's garbage would count in this one's peak
    workload = scenario.workload(strategy, config)
    try:
        if progress:
            progress("checking", 0, 1)
        outputs = equivalence.snapshot(workload.outputs())
        if strategy.name == scenario.baseline:
            check = Equivalence(True, True, 0.0, None, "baseline", "this is the baseline")
        elif reference is None:
            check = Equivalence(False, True, detail=reference_note or "no baseline outputs")
        else:
            check = equivalence.compare(reference, outputs, config.amp_dtype,
                                        workload.amp_tolerance,
                                        _float32_tolerance(workload, reference))
        if not check.ok:
            return StrategyResult(
                status=FAILED, dir=rel_dir, equivalence=check,
                error=f"does not compute what {scenario.baseline!r} computes: {check.detail}",
                **common,
            ), None
        measurement = measure(workload, options, strategy_dir, DEFAULT_WORKER, progress)
    finally:
        workload.close()
    return _result_from([measurement], run_dir, rel_dir, common, check), outputs


def _float32_tolerance(workload: Any, reference: Sequence[Any]) -> float | None:
    """The workload's own, else TF32's where its device may run float32 in TF32. The
    float64 rule (``profkit tune``) needs neither: it measures each error against float64."""
    own = getattr(workload, "float32_tolerance", None)
    if own is not None or isinstance(reference, equivalence.Outputs):
        return own
    return equivalence.tf32_tolerance(list(workload.devices))


def _result_from(per_rank: Sequence[Measurement], run_dir: Path, rel_dir: str,
                 common: dict[str, Any], check: Equivalence) -> StrategyResult:
    """One result from one measurement per rank: each step is the slowest rank's."""
    first = per_rank[0]
    multi = len(per_rank) > 1
    samples = (results.slowest_rank([m.samples_ns for m in per_rank]) if multi
               else first.samples_ns)
    profiled = (results.slowest_rank([m.profiled_samples_ns for m in per_rank]) if multi
                else first.profiled_samples_ns)
    st = results.stats(samples)
    items = sum(m.items_per_step for m in per_rank)
    memory: dict[str, dict[str, int]] = {}
    for rank, m in enumerate(per_rank):
        for dev_name, values in m.peak_memory.items():
            key = f"rank{rank}:{dev_name}" if multi else dev_name
            memory[key] = dict(values)
    info = dict(first.info)
    lost = [m.files_lost for m in per_rank if m.files_lost]
    if lost:  # under torchrun: a host dropped out while sending its traces to rank 0
        info[FILES_LOST] = lost
    phase_samples = {name: tuple(v) for name, v in first.phase_samples_ns.items() if v}
    phases = {name: results.stats(v) for name, v in phase_samples.items()}
    traces = tuple(_relative(f, run_dir) for m in per_rank for f in m.trace_files)
    ka_files = tuple(_relative(f, run_dir) for m in per_rank for f in m.key_averages_files)
    # only the rank that keeps the run folder sees every trace (hosts may not share it)
    shares, basis = (hotspot_summary.from_traces(first.trace_files) if is_output_rank()
                     else ({}, ""))
    return StrategyResult(
        status=OK, dir=rel_dir, samples_ns=tuple(samples), stats=st,
        profiled=results.stats(profiled) if profiled else None, phases=phases,
        phase_samples_ns=phase_samples,
        items_per_step=items, throughput_items_per_s=results.throughput(items, st.median_ns),
        peak_memory=memory, info=info, trace_files=traces,
        key_averages_files=ka_files, hotspots=shares, hotspot_basis=basis, equivalence=check,
        per_rank_samples_ns=tuple(tuple(m.samples_ns) for m in per_rank) if multi else (),
        contention=(first.contention,) if first.contention is not None else (),
        **common,
    )


def _relative(path: str, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:500]


def _free_device_memory() -> None:
    """Collect the garbage of earlier workloads and give cached blocks back, before a
    strategy is built and after a failure (e.g. out of memory). Models hold reference
    cycles: seen on an H200, a training run's 1 GiB stayed allocated into the next run in
    the same process, and counted in each of its strategies' peaks."""
    import gc

    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - best effort cleanup
        pass
