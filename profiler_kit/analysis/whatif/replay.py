"""Replay a trace and predict its step after changes: ``replay`` (one set of changes) and
``what_if`` (each change alone and all together).

The replay of the unchanged trace is checked against the measurement, step by step and
over the whole window: within :data:`TRUSTED_ERROR` it is trusted; else the result says
so, and names the dependencies the graph lacks. Gains are measured against the
replay of the unchanged trace, so the model's own error does not count as a gain.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from profiler_kit.analysis.core.arrays import median
from profiler_kit.analysis.core.launch_links import GpuActivity, attribute_gpu
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.op_tree import OpTree, build_op_tree
from profiler_kit.analysis.whatif import engine
from profiler_kit.analysis.whatif.changes import Change, Context
from profiler_kit.analysis.whatif.graph import Graph, MissingDependency, Model, build
from profiler_kit.trace.table import EventTable

TRUSTED_ERROR = 0.03  # the replay's largest error (median step, window) still trusted


class StepTime(msgspec.Struct, frozen=True):
    """One step: as measured, as replayed unchanged and as predicted after the changes."""

    number: int | None  # the ProfilerStep number (None: the whole window)
    measured_ns: int
    replayed_ns: int
    predicted_ns: int


class Replay(msgspec.Struct, frozen=True):
    """A trace replayed unchanged and with ``changes``.

    ``step`` says which step time the figures are: ``"device"`` (the device-side step,
    on GPU traces), ``"cpu"`` (the ProfilerStep span) or ``"window"`` (no steps: the whole
    trace). Step figures are medians over the steps. ``step_error`` is the median over
    the steps of the replay's relative error, ``window_error`` that of the whole window.
    """

    step: str
    steps: tuple[StepTime, ...]
    measured_step_ns: int
    replayed_step_ns: int
    predicted_step_ns: int
    step_error: float
    # the median over the steps of how far the end of the GPU work launched in the step
    # moved in the replay, against the measured step (None without GPU work): a check that
    # does not rest on the CPU side, which the replay keeps as recorded
    gpu_end_error: float | None
    measured_window_ns: int
    replayed_window_ns: int
    predicted_window_ns: int
    window_error: float
    trusted: bool
    # why the prediction is not trusted (None when it is): the replay's miss and the
    # dependencies it lacks
    untrusted_because: Note | None
    missing: tuple[MissingDependency, ...]
    fixed_delay_ns: int  # the late waits kept as fixed delays, summed
    # those of the GPU work launched in the steps (all of it without steps), against the
    # steps' measured time: where it is large, a change that would shorten what they wait
    # for cannot move them, and the prediction leans toward no gain
    fixed_delay_share: float
    # the replay's errors with those fixed delays left out: how much the missing
    # dependencies weigh
    step_error_without_fixed_delays: float
    window_error_without_fixed_delays: float
    model: Model
    changes: tuple[str, ...]
    notes: tuple[Note, ...]  # what each change touched and the bound it used
    gpu_activities: int
    blocking_calls: int


class Gain(msgspec.Struct, frozen=True):
    """What one change (or all together) gives: the predicted step and its gain over the
    unchanged replay."""

    change: str
    predicted_step_ns: int
    gain_ns: int
    gain_pct: float
    notes: tuple[Note, ...]


class WhatIf(msgspec.Struct, frozen=True):
    """Each change alone and all together (``together``; None with fewer than two)."""

    replay: Replay  # with every change
    gains: tuple[Gain, ...]
    together: Gain | None


def _error(replayed: np.ndarray | int, measured: np.ndarray | int) -> np.ndarray:
    m = np.maximum(np.asarray(measured, dtype=np.float64), 1.0)
    return np.abs(np.asarray(replayed, dtype=np.float64) - m) / m


class _Prepared:
    """The graph and the unchanged replay of one trace, shared by its what-ifs."""

    def __init__(self, table: EventTable, gpu: GpuActivity | None,
                 tree: OpTree | None = None) -> None:
        if gpu is None:
            tree = build_op_tree(table) if tree is None else tree
            gpu = attribute_gpu(table, tree)
        self.table, self.gpu = table, gpu
        self.graph: Graph = build(table, gpu)
        self.ctx = Context(table, gpu, self.graph, tree)
        g = self.graph
        recorded = engine.recorded(g, table.ts_ns, table.dur_ns)
        self.measured, self.measured_window = engine.step_times(g, recorded)
        replayed = engine.simulate(g, engine.Edits(g), table.ts_ns, table.dur_ns)
        self.replayed, self.replayed_window = engine.step_times(g, replayed)
        # where the GPU work of each step ends, against the step's time (its start is the
        # recording's in both: the first event does not move)
        m_end, r_end = engine.gpu_ends(g, recorded), engine.gpu_ends(g, replayed)
        has = m_end >= 0
        self.gpu_end_error = float(median(np.abs(r_end[has] - m_end[has])
                                             / np.maximum(self.measured[has], 1))) \
            if has.any() else None

    def run(self, changes: Sequence[Change]) -> tuple[np.ndarray, int, list[Note]]:
        e = engine.Edits(self.graph)
        for c in changes:
            c.apply(self.ctx, e)
        if e.unchanged(self.graph):
            return self.replayed, self.replayed_window, e.notes
        times = engine.simulate(self.graph, e, self.table.ts_ns, self.table.dur_ns)
        steps, window = engine.step_times(self.graph, times)
        return steps, window, e.notes


def replay(table: EventTable, gpu: GpuActivity | None = None,
           changes: Sequence[Change] = ()) -> Replay:
    """Replay ``table`` unchanged and with ``changes`` (see the module docstring)."""
    return _replay(_Prepared(table, gpu), changes)


def _replay(p: _Prepared, changes: Sequence[Change],
            ran: tuple[np.ndarray, int, list[Note]] | None = None) -> Replay:
    """The replay with ``changes`` (``ran``: its result when already run)."""
    g = p.graph
    if ran is not None:
        predicted, p_window, notes = ran
    elif changes:
        predicted, p_window, notes = p.run(changes)
    else:
        predicted, p_window, notes = p.replayed, p.replayed_window, []
    step_error = float(median(_error(p.replayed, p.measured)))
    window_error = float(_error(p.replayed_window, p.measured_window))
    bare = engine.Edits(g)
    bare.delay[:] = 0
    bare.sync_delay[:] = 0
    bare_steps, bare_window = engine.step_times(
        g, engine.simulate(g, bare, p.table.ts_ns, p.table.dur_ns))
    trusted = step_error <= TRUSTED_ERROR and window_error <= TRUSTED_ERROR
    numbers = g.step_number.tolist() if len(g.step_row) else [None]
    return Replay(
        step=g.headline,
        steps=tuple(StepTime(n, int(m), int(r), int(q)) for n, m, r, q in
                    zip(numbers, p.measured.tolist(), p.replayed.tolist(), predicted.tolist(),
                        strict=True)),
        measured_step_ns=int(median(p.measured)),
        replayed_step_ns=int(median(p.replayed)),
        predicted_step_ns=int(median(predicted)),
        step_error=step_error,
        gpu_end_error=p.gpu_end_error,
        measured_window_ns=p.measured_window,
        replayed_window_ns=p.replayed_window,
        predicted_window_ns=p_window,
        window_error=window_error,
        trusted=trusted,
        untrusted_because=None if trusted else _why(step_error, window_error, g.missing),
        missing=g.missing,
        fixed_delay_ns=int(g.delay.sum() + g.sync_delay.sum()),
        fixed_delay_share=_delay_share(g, p.measured),
        step_error_without_fixed_delays=float(median(_error(bare_steps, p.measured))),
        window_error_without_fixed_delays=float(_error(bare_window, p.measured_window)),
        model=g.model,
        changes=tuple(c.label() for c in changes),
        notes=tuple(notes),
        gpu_activities=len(g),
        blocking_calls=int(g.sync_waits.sum()),
    )


def measured_step_ns(table: EventTable) -> int:
    """The median measured step as the replay counts it (see :class:`Replay`'s ``step``),
    without replaying: the graph gives the steps' bounds."""
    g = build(table, attribute_gpu(table, build_op_tree(table)))
    steps, _ = engine.step_times(g, engine.recorded(g, table.ts_ns, table.dur_ns))
    return int(median(steps))


def _delay_share(g: Graph, measured: np.ndarray) -> float:
    in_steps = g.act_step >= 0 if len(g.step_row) else np.ones(len(g), dtype=bool)
    total = int(measured.sum())
    return float(g.delay[in_steps].sum()) / total if total > 0 else 0.0


def _why(step_error: float, window_error: float,
         missing: tuple[MissingDependency, ...]) -> Note:
    """The replay's miss and the dependencies the graph lacks (none: one the trace does
    not record), each as its kind, events and wait."""
    return note("replay_untrusted", step_error=step_error, window_error=window_error,
                missing=tuple((m.kind, m.events, m.wait_ns) for m in missing))


def what_if(table: EventTable, gpu: GpuActivity | None = None,
            changes: Sequence[Change] = (), tree: OpTree | None = None) -> WhatIf:
    """Each of ``changes`` alone and all of them together (``tree``: the trace's op tree,
    where the caller has it)."""
    p = _Prepared(table, gpu, tree)
    base = int(median(p.replayed))
    gains = []
    last = None
    for c in changes:
        last = p.run([c])
        gains.append(_gain(c.label(), base, int(median(last[0])), last[2]))
    together = None
    full = _replay(p, changes, last if len(changes) == 1 else None)
    if len(changes) > 1:
        together = _gain("all together", base, full.predicted_step_ns, list(full.notes))
    return WhatIf(full, tuple(gains), together)


class Baseline(msgspec.Struct, frozen=True):
    """The unchanged replay against the measurement, as :class:`Replay` has it (without
    the figures with the fixed delays left out, which take one more replay)."""

    step: str
    measured_step_ns: int
    replayed_step_ns: int
    step_error: float
    window_error: float
    trusted: bool
    untrusted_because: Note | None
    fixed_delay_share: float


def each_alone(table: EventTable, gpu: GpuActivity | None = None,
               changes: Sequence[Change] = (), tree: OpTree | None = None
               ) -> tuple[Baseline, tuple[Gain, ...]]:
    """The unchanged replay against the measurement (whether it is trusted) and each of
    ``changes`` alone, the graph built once: the gains are :func:`what_if`'s, without the
    replay of all the changes together."""
    p = _Prepared(table, gpu, tree)
    base = int(median(p.replayed))
    gains = []
    for c in changes:
        steps, _, notes = p.run([c])
        gains.append(_gain(c.label(), base, int(median(steps)), notes))
    step_error = float(median(_error(p.replayed, p.measured)))
    window_error = float(_error(p.replayed_window, p.measured_window))
    trusted = step_error <= TRUSTED_ERROR and window_error <= TRUSTED_ERROR
    return Baseline(
        step=p.graph.headline, measured_step_ns=int(median(p.measured)),
        replayed_step_ns=base, step_error=step_error, window_error=window_error,
        trusted=trusted,
        untrusted_because=None if trusted else _why(step_error, window_error,
                                                    p.graph.missing),
        fixed_delay_share=_delay_share(p.graph, p.measured)), tuple(gains)


def _gain(label: str, base: int, predicted: int, notes: list[Note]) -> Gain:
    gain = base - predicted
    return Gain(label, predicted, gain, gain / base if base else 0.0, tuple(notes))


class TraceWhatIf(msgspec.Struct, frozen=True):
    """The what-if of one trace file."""

    path: str
    label: str
    result: WhatIf
