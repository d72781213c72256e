"""Each strategy of a run predicted by the what-if replay from its counterpart's trace.

A strategy has a counterpart where a what-if change models what it does differently:
an AMP twin (``X+amp``) is ``X`` with autocast, which ``precision`` models (bf16 or fp16,
the dtype the twin's autocast used). Its counterpart's first profiled trace (rank 0) is
replayed with the change, and the predicted step is set against the twin's timed median
and the step of its own profiled trace. Other strategies (threads, streams, one model per
GPU) run the same work at once, which no change of the replay models: they get a record
that says so, never a number.
"""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from profiler_kit.analysis.perf.device_specs import device_of_table
from profiler_kit.analysis.whatif.changes import Precision
from profiler_kit.analysis.whatif.replay import replay, what_if
from profiler_kit.errors import ProfkitError
from profiler_kit.results import OK, Prediction, RunResult, StrategyResult
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import EventTable

AMP_SUFFIX = "+amp"
# the fixed delays of the steps' GPU work over the steps' time above which the predicted
# gain is a lower bound: the work they hold does not move (docs/analyses/whatif.md)
LOWER_BOUND_SHARE = 0.10
# autocast's dtype as run.json records it -> the precision change's name
DTYPES = {"bfloat16": "bf16", "float16": "fp16"}
NOT_MODELED = ("no what-if models this strategy: the replay has no change for what it does "
               "differently from the baseline (running models at once in threads, on streams "
               "or devices is none: no change moves one trace's work onto another thread or "
               "stream)")


def predict_run(result: RunResult) -> RunResult:
    """``result`` with a :class:`Prediction` on every timed strategy other than its point's
    baseline (see the module docstring); the traces are read once each."""
    tables: dict[str, EventTable | str] = {}
    strategies = list(result.strategies)
    for i, s in enumerate(strategies):
        if s.status != OK or not s.stats or s.name == result.baseline:
            continue
        counterpart = _counterpart(result, s)
        if counterpart is None:
            strategies[i] = replace(s, prediction=Prediction(measured_ns=s.stats.median_ns,
                                                             note=NOT_MODELED))
            continue
        try:
            prediction = _precision(result, s, counterpart, tables)
        except Exception as exc:  # noqa: BLE001 - a trace the replay cannot take: the run stands
            prediction = Prediction(change="precision", source=counterpart.name,
                                    measured_ns=s.stats.median_ns,
                                    note=f"no prediction: the replay failed "
                                         f"({type(exc).__name__}: {exc})")
        strategies[i] = replace(s, prediction=prediction)
    return replace(result, strategies=tuple(strategies))


def _counterpart(result: RunResult, s: StrategyResult) -> StrategyResult | None:
    if not s.amp or not s.name.endswith(AMP_SUFFIX):
        return None
    name = s.name.removesuffix(AMP_SUFFIX)
    return next((c for c in result.at(s.point) if c.name == name and c.status == OK), None)


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
               tables: dict[str, EventTable | str]) -> Prediction:
    assert s.stats is not None
    measured = s.stats.median_ns
    dtype = DTYPES.get(s.amp_dtype or "")
    label = f"precision {dtype}" if dtype else "precision"
    out = Prediction(change=label, source=base.name, measured_ns=measured)
    if dtype is None:
        return replace(out, note=f"no prediction: autocast ran {s.amp_dtype or 'no dtype'}, "
                                 f"which the precision change does not model")
    table = _table(result, base, tables)
    if isinstance(table, str):
        return replace(out, note=f"no prediction: {table}")
    own = _table(result, s, tables)
    trace_step = float(replay(own).measured_step_ns) if not isinstance(own, str) else None
    w = what_if(table, changes=[Precision(dtype)]).replay
    out = replace(out, source_step_ns=float(w.measured_step_ns), trace_step_ns=trace_step,
                  trusted=w.trusted)
    notes = "; ".join(w.notes)
    name, peak, _ = device_of_table(table)
    if peak is None or w.gpu_activities == 0:
        why = ("the trace ran on the CPU: precision changes the durations of GPU kernels "
               "by the device's matrix peaks, and CPU ops keep their recorded durations"
               if w.gpu_activities == 0 else f"{name or 'the device'} has no known peaks")
        return replace(out, note=f"no prediction: {why} ({notes})")
    predicted = float(w.predicted_step_ns)
    note = notes if w.trusted else f"not trusted: {w.untrusted_because}; {notes}"
    if w.fixed_delay_share > LOWER_BOUND_SHARE:
        note += (f"; the gain is a lower bound: the fixed delays of the steps' GPU work come "
                 f"to {w.fixed_delay_share:.0%} of the steps' time and do not move")
    return replace(out, predicted_ns=predicted, note=note,
                   error=_error(predicted, measured),
                   trace_error=_error(predicted, trace_step) if trace_step else None)


def _error(predicted: float, measured: float) -> float | None:
    return (predicted - measured) / measured if measured > 0 else None
