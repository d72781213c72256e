"""What a run's traces say once it is measured, kept in run.json: each strategy's step
change against its point's baseline, term by term (or why its profiled steps cannot
explain its timing), then the what-if replay's prediction of it from its counterpart's
trace. Figures only: the renderers word them."""

from __future__ import annotations

import msgspec
from msgspec.structs import replace

from profiler_kit.analysis.compare import compare
from profiler_kit.errors import ProfkitError
from profiler_kit.noise import explanation_conflict
from profiler_kit.results import OK, RunResult
from profiler_kit.sources.trace_files import analyze_files
from profiler_kit.trace.source import Unreadable
from profiler_kit.util import artifacts


def after_run(result: RunResult) -> RunResult:
    """The step changes, then the predictions; run.json rewritten with each."""
    return predictions(step_changes(result))


def predictions(result: RunResult) -> RunResult:
    """Each strategy predicted from its counterpart's trace (an AMP twin: ``precision``,
    measured on this machine), or a record that no what-if change models it."""
    from profiler_kit.sources.measured_ops import measure_on_this_machine
    from profiler_kit.sources.run_predictions import predict_run

    result = predict_run(result, measure_on_this_machine())
    artifacts.write_json_atomic(result.run_dir / artifacts.RUN_JSON, result.to_json())
    return result


def step_changes(result: RunResult) -> RunResult:
    """Each strategy against its point's baseline, from their first traces (rank 0): the
    step's change term by term, or, where the profiled steps contradict the timing, the
    reason no explanation is given."""
    ok = [i for i, s in enumerate(result.strategies) if s.status == OK and s.trace_files]
    points: dict[str, list[int]] = {}
    for i in ok:
        points.setdefault(result.strategies[i].point, []).append(i)
    points = {p: idx for p, idx in points.items() if len(idx) > 1 and any(
        result.strategies[i].name == result.baseline for i in idx)}
    if not points:
        return result
    chosen = [i for idx in points.values() for i in idx]
    try:
        analyses = dict(zip(chosen, analyze_files(
            [result.run_dir / result.strategies[i].trace_files[0] for i in chosen],
            [result.strategies[i].name for i in chosen], top=5), strict=True))
    except ProfkitError:  # a trace that cannot be read: the run keeps its other results
        return result
    strategies = list(result.strategies)
    for idx in points.values():
        # an unreadable trace leaves its strategy without a verdict (the baseline's: all)
        idx = [i for i in idx if not isinstance(analyses[i], Unreadable)]
        if len(idx) < 2 or not any(strategies[i].name == result.baseline for i in idx):
            continue
        base = next(k for k, i in enumerate(idx) if strategies[i].name == result.baseline)
        steps = compare([analyses[i] for i in idx], base).steps
        timed_base = strategies[idx[base]].stats
        for i, w in zip(idx, steps.waterfalls if steps else (), strict=True):
            if w is None:
                continue
            timed = strategies[i].stats
            conflict = (explanation_conflict(timed.median_ns / timed_base.median_ns,
                                             w.after_ns / w.before_ns)
                        if timed and timed_base and w.before_ns > 0 else None)
            if conflict:  # never give the reason for the opposite of what was timed
                strategies[i] = replace(strategies[i], explanation=None,
                                        explanation_withheld=conflict, step_change_ns={},
                                        verdict=None)
                continue
            change = {t.name: t.delta_ns for t in w.terms}
            change["step"] = w.delta_ns
            strategies[i] = replace(strategies[i], explanation=_plain(w),
                                    explanation_withheld=None, step_change_ns=change,
                                    verdict=None)
    result = replace(result, strategies=tuple(strategies))
    artifacts.write_json_atomic(result.run_dir / artifacts.RUN_JSON, result.to_json())
    return result


def _plain(value: object) -> object:
    """As run.json holds it (lists, not tuples), so a run read back equals the run."""
    return msgspec.json.decode(msgspec.json.encode(value))
