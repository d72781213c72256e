"""Each strategy of a run predicted by the what-if replay from its counterpart's trace.

A strategy has a counterpart where a what-if change models what it does differently:
an AMP twin (``X+amp``) is ``X`` with autocast, which ``precision`` models (bf16 or fp16,
the dtype the twin's autocast used); in ``profkit tune``, the ``autocast`` knobs are the
eager baseline with autocast (``precision``), ``channels_last`` the baseline's ops timed
in that layout (measured only), and ``cuda_graphs`` and ``compile_reduce_overhead``
(which captures CUDA graphs) the baseline with its launches collapsed (``cuda-graphs``).
The counterpart's first profiled trace (rank 0) is replayed with the change, and the
predicted step is set against the strategy's timed median and
the step of its own profiled trace. Other strategies (threads, streams, one model per
GPU; tune's thread and plain compile knobs, whose fusions the replay does not model)
get a record that says so, never a number.

Where torch is at hand (in ``profkit run``), ``precision`` is measured, not assumed: the
counterpart trace's hot ops are timed on this machine as recorded and under autocast
(:mod:`profiler_kit.sources.measured_ops`), on the CPU as on a GPU. The timed step is
predicted as the counterpart's timed median times the replay's ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
from msgspec.structs import replace

from profiler_kit.analysis.perf.device_specs import device_of_table
from profiler_kit.analysis.whatif.changes import CudaGraphs, MeasuredOps, Precision
from profiler_kit.analysis.whatif.replay import Replay, measured_step_ns, what_if
from profiler_kit.errors import ProfkitError
from profiler_kit.results import OK, Prediction, RunResult, StrategyResult
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import EventTable

# a trace's tables and an alternative (bf16, fp16) -> the change measured on this machine
Measure = Callable[[Sequence[EventTable], str], MeasuredOps]
AMP_SUFFIX = "+amp"
# the fixed delays of the steps' GPU work over the steps' time above which the predicted
# gain is a lower bound: the work they hold does not move (docs/analyses/whatif.md)
LOWER_BOUND_SHARE = 0.10
# autocast's dtype as run.json records it -> the precision change's name
DTYPES = {"bfloat16": "bf16", "float16": "fp16"}
# the changes the replay has no model of, only the ops timed under them -> the alternative
MEASURED_ONLY = {"channels-last": "channels_last", "tf32": "tf32",
                 "compile": "compile"}  # compile: its chains of elementwise ops fused
NOT_MODELED = ("no what-if models this strategy: the replay has no change for what it does "
               "differently from the baseline (running models at once in threads, on streams "
               "or devices is none: no change moves one trace's work onto another thread or "
               "stream; nor are fusion, memory layouts and thread counts)")
# profkit tune's knobs that a change models, against the run's baseline
TUNE_SCENARIO = "tune"
TUNE_CHANGES = {"autocast": "precision", "autocast_bf16": "precision",
                "channels_last": "channels-last", "tf32": "tf32", "compile": "compile",
                "cuda_graphs": "cuda-graphs", "compile_reduce_overhead": "cuda-graphs"}


def predict_run(result: RunResult, measure: Measure | None = None) -> RunResult:
    """``result`` with a :class:`Prediction` on every timed strategy other than its point's
    baseline (see the module docstring); the traces are read once each. With ``measure``
    (a trace's tables and the dtype -> its measured change), ``precision`` replays the
    ops timed on this machine instead of the device's peak ratios."""
    tables: dict[str, EventTable | str] = {}
    strategies = list(result.strategies)
    for i, s in enumerate(strategies):
        if s.status != OK or not s.stats or s.name == result.baseline:
            continue
        found = _counterpart(result, s)
        if found is None:
            strategies[i] = replace(s, prediction=Prediction(measured_ns=s.stats.median_ns,
                                                             note=NOT_MODELED))
            continue
        counterpart, change = found
        try:
            if change == "precision":
                prediction = _precision(result, s, counterpart, tables, measure)
            elif change in MEASURED_ONLY:
                prediction = _measured_only(result, s, counterpart, tables, measure, change)
            else:
                prediction = _cuda_graphs(result, s, counterpart, tables)
        except Exception as exc:  # noqa: BLE001 - a trace the replay cannot take: the run stands
            prediction = Prediction(change=change, source=counterpart.name,
                                    measured_ns=s.stats.median_ns,
                                    note=f"no prediction: the replay failed "
                                         f"({type(exc).__name__}: {exc})")
        strategies[i] = replace(s, prediction=prediction)
    return replace(result, strategies=tuple(strategies))


def _counterpart(result: RunResult, s: StrategyResult) -> tuple[StrategyResult, str] | None:
    """The strategy ``s`` is a change of, and the change's name; None where none is."""
    if result.scenario == TUNE_SCENARIO and s.name in TUNE_CHANGES:
        name, change = result.baseline, TUNE_CHANGES[s.name]
    elif s.amp and s.name.endswith(AMP_SUFFIX):
        name, change = s.name.removesuffix(AMP_SUFFIX), "precision"
    else:
        return None
    base = next((c for c in result.at(s.point) if c.name == name and c.status == OK), None)
    return None if base is None else (base, change)


def _table(result: RunResult, s: StrategyResult,
           tables: dict[str, EventTable | str]) -> EventTable | str:
    """``s``'s first trace, or why there is none."""
    if not s.trace_files:
        return f"{s.name} has no profiled trace"
    key = s.trace_files[0]
    if key not in tables:
        try:
            tables[key] = load(Path(result.run_dir) / key)
        except (ProfkitError, OSError) as exc:
            tables[key] = f"{key} could not be read ({exc})"
    return tables[key]


def _precision(result: RunResult, s: StrategyResult, base: StrategyResult,
               tables: dict[str, EventTable | str], measure: Measure | None) -> Prediction:
    assert s.stats is not None
    dtype = DTYPES.get(s.amp_dtype or "")
    label = f"precision {dtype}" if dtype else "precision"
    out = Prediction(change=label, source=base.name, measured_ns=s.stats.median_ns)
    if dtype is None:
        return replace(out, note=f"no prediction: autocast ran {s.amp_dtype or 'no dtype'}, "
                                 f"which the precision change does not model")
    table = _table(result, base, tables)
    if isinstance(table, str):
        return replace(out, note=f"no prediction: {table}")
    if measure is not None:
        found = _measured(out, result, s, base, table, tables, measure, dtype)
        if isinstance(found, Prediction):
            return found
        out = replace(out, note=f"ops not measured ({found}); ")
    w = what_if(table, changes=[Precision(dtype)]).replay
    name, peak, _ = device_of_table(table)
    if peak is None or w.gpu_activities == 0:
        why = ("the trace ran on the CPU: precision changes the durations of GPU kernels "
               "by the device's matrix peaks, and CPU ops keep their recorded durations"
               if w.gpu_activities == 0 else f"{name or 'the device'} has no known peaks")
        return replace(out, source_step_ns=float(w.measured_step_ns), trusted=w.trusted,
                       trace_step_ns=_trace_step(result, s, tables),
                       note=f"{out.note}no prediction: {why}",
                       replay_notes=tuple(msgspec.to_builtins(w.notes)))
    return _with(out, result, s, base, w, tables)


def _measured_only(result: RunResult, s: StrategyResult, base: StrategyResult,
                   tables: dict[str, EventTable | str], measure: Measure | None,
                   change: str) -> Prediction:
    """The baseline's trace with its hot ops timed under the change on this machine: a
    layout or a math mode the replay cannot model, only measure."""
    assert s.stats is not None
    alternative = MEASURED_ONLY[change]
    out = Prediction(change=change, source=base.name, measured_ns=s.stats.median_ns)
    table = _table(result, base, tables)
    if isinstance(table, str):
        return replace(out, note=f"no prediction: {table}")
    if measure is None:
        return replace(out, note=f"no prediction: {alternative} is measured, not modeled, "
                                 "and timing the ops needs torch")
    found = _measured(out, result, s, base, table, tables, measure, alternative)
    return found if isinstance(found, Prediction) else replace(
        out, note=f"no prediction: the ops could not be timed ({found})")


def _measured(out: Prediction, result: RunResult, s: StrategyResult, base: StrategyResult,
              table: EventTable, tables: dict[str, EventTable | str], measure: Measure,
              alternative: str) -> Prediction | str:
    """``out`` predicted from ``base``'s ops timed under ``alternative`` on this machine,
    or why they could not be."""
    try:
        change = measure([table], alternative)
    except ProfkitError as exc:
        return str(exc)
    w = what_if(table, changes=[change]).replay
    return _with(replace(out, change=change.label()), result, s, base, w, tables)


def _cuda_graphs(result: RunResult, s: StrategyResult, base: StrategyResult,
                 tables: dict[str, EventTable | str]) -> Prediction:
    """The baseline's trace with each step's launches and launching ops collapsed."""
    assert s.stats is not None
    out = Prediction(change="cuda-graphs", source=base.name, measured_ns=s.stats.median_ns)
    table = _table(result, base, tables)
    if isinstance(table, str):
        return replace(out, note=f"no prediction: {table}")
    w = what_if(table, changes=[CudaGraphs()]).replay
    if w.gpu_activities == 0:
        return replace(out, note="no prediction: the trace ran on the CPU, where there are "
                                 "no launches for a graph to collapse")
    return _with(out, result, s, base, w, tables)


def _with(out: Prediction, result: RunResult, s: StrategyResult, base: StrategyResult,
          w: Replay, tables: dict[str, EventTable | str]) -> Prediction:
    """``out`` with the replay ``w``'s prediction, its trust and caveats, the timed step
    it implies, and their errors against the strategy's timed median and its own
    profiled trace."""
    trace_step = _trace_step(result, s, tables)
    predicted, measured = float(w.predicted_step_ns), out.measured_ns or 0.0
    timed = (base.stats.median_ns * predicted / w.replayed_step_ns
             if base.stats and w.replayed_step_ns > 0 else None)
    return replace(out, source_step_ns=float(w.measured_step_ns), trace_step_ns=trace_step,
                   trusted=w.trusted, predicted_ns=predicted, timed_ns=timed,
                   replay_notes=tuple(msgspec.to_builtins(w.notes)),
                   untrusted_because=msgspec.to_builtins(w.untrusted_because),
                   lower_bound_share=(w.fixed_delay_share
                                      if w.fixed_delay_share > LOWER_BOUND_SHARE else None),
                   error=_error(timed if timed is not None else predicted, measured),
                   trace_error=_error(predicted, trace_step) if trace_step else None)


def _trace_step(result: RunResult, s: StrategyResult,
                tables: dict[str, EventTable | str]) -> float | None:
    """The median step of ``s``'s own profiled trace, as the replay counts steps."""
    own = _table(result, s, tables)
    return None if isinstance(own, str) else float(measured_step_ns(own))


def _error(predicted: float, measured: float) -> float | None:
    return (predicted - measured) / measured if measured > 0 else None
