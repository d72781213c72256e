"""The step-time difference explained term by term, and a verdict per comparison.

Each step's time is decomposed exactly (integer ns) as

    window = sum over classes of busy(class) - overlap + idle

On a GPU trace the window is the step's device-side span
(:mod:`profiler_kit.analysis.core.steps`: from where the previous step ended on the
device, or the step's CPU start, to the end of the last GPU activity launched in it, or its
CPU end); busy(class) sums the durations, clipped to the
window, of the activities launched in the step (linked by correlation id), per class;
overlap is that sum minus the length of their union (time two or more ran at once,
counted once per extra activity); idle is the window minus the union. On a CPU-only
trace the window is the step's CPU span and the activities are CPU ops' self time (ops
starting in the step, every thread), so overlap is the time threads worked at once.
Without steps the whole trace window is one step. Per-step values are totals over the
steps divided by the step count, so traces with different step counts compare, and the
change between two traces splits into per-class, overlap and idle terms that add up to
the change in step time.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.step_windows import (
    activity_steps,
    cpu_spans,
    row_steps,
    step_count,
    windows,
)
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.analysis.diffs.op_diff import DiffRow, OpDiff, status_against
from profiler_kit.analysis.time.idle_causes import KIND_LABELS, KINDS, IdleAttribution
from profiler_kit.trace.table import Cat, EventTable

IDLE_CAUSE = "idle cause"
OVERLAP = "overlap"
IDLE = "idle"
VERDICT_TERMS = 3  # terms named in a verdict
EVIDENCE_NAMES = 2  # kernel or op names given as evidence of a class term


class StepTerms(msgspec.Struct, frozen=True):
    """One trace's step time decomposed, summed over its steps (see the module doc).

    ``window_ns == sum(busy_ns.values()) - overlap_ns + idle_ns`` exactly.
    """

    side: str  # "device" (GPU activities) or "cpu" (CPU op self time)
    window: str  # "steps" or "trace" (no ProfilerStep# spans: the trace is one step)
    steps: int
    window_ns: int
    busy_ns: dict[str, int]  # class -> summed durations (classes with time only)
    overlap_ns: int
    idle_ns: int
    step_window_ns: tuple[int, ...]  # each step's window, in step order


def decompose(table: EventTable, tree: OpTree, gpu: GpuActivity, steps: Steps) -> StepTerms:
    """Decompose every step of one trace (device side when it has GPU activity)."""
    n_steps = step_count(steps)
    if len(gpu):
        step = activity_steps(table, gpu, steps)
        keep = step >= 0
        rows = gpu.row[keep]
        start = table.ts_ns[rows]
        end = start + table.dur_ns[rows]
        return _terms("device", steps, n_steps, step[keep], start, end, gpu.klass[keep],
                      windows(steps), clip_busy=True)
    ops = np.flatnonzero(table.cat[tree.row] == Cat.CPU_OP)
    step = row_steps(table, tree.row[ops], steps)
    keep = step >= 0
    ops = ops[keep]
    return _terms("cpu", steps, n_steps, step[keep], tree.start_ns[ops], tree.end_ns[ops],
                  tree.own_klass[ops], cpu_spans(steps), busy=tree.self_ns[ops])


def _terms(side: str, steps: Steps, n_steps: int, step: np.ndarray, start: np.ndarray,
           end: np.ndarray, klass: np.ndarray, bounds: tuple[np.ndarray, np.ndarray],
           busy: np.ndarray | None = None, clip_busy: bool = False) -> StepTerms:
    """Per step: ``busy`` (default: the clipped durations) per class, the union of the
    intervals clipped to the step's window, and the window."""
    n_cls = len(classify.CLASSES)
    lo, hi = bounds
    s = np.clip(start, lo[np.maximum(step, 0)], hi[np.maximum(step, 0)])
    e = np.clip(end, lo[np.maximum(step, 0)], hi[np.maximum(step, 0)])
    if busy is None or clip_busy:
        busy = e - s
    busy_by_class = np.rint(np.bincount(klass.astype(np.int64), weights=busy,
                                        minlength=n_cls)).astype(np.int64)
    window_ns = (hi - lo).astype(np.int64)
    covered = 0
    order = np.argsort(step, kind="stable")
    cuts = np.searchsorted(step[order], np.arange(n_steps + 1))
    for i in range(n_steps):
        sel = order[cuts[i]:cuts[i + 1]]
        covered += intervals.length(s[sel], e[sel])
    total_busy = int(busy_by_class.sum())
    window = int(window_ns.sum())
    return StepTerms(
        side=side,
        window="steps" if steps.steps else "trace",
        steps=n_steps,
        window_ns=window,
        busy_ns={classify.CLASSES[c]: int(v) for c, v in enumerate(busy_by_class.tolist())
                 if v},
        overlap_ns=total_busy - covered,
        idle_ns=window - covered,
        step_window_ns=tuple(int(w) for w in window_ns.tolist()),
    )


class Evidence(msgspec.Struct, frozen=True):
    """A name behind a term, what changed for it per step: a kernel or op behind a class
    term, or an idle cause behind the idle term (category ``idle cause``, no counts)."""

    name: str
    category: str
    status: str  # added / removed / changed / same
    delta_ns: float
    count_before: float  # per step, baseline
    count_after: float


class Term(msgspec.Struct, frozen=True):
    """One term of the waterfall: a class's busy time, ``overlap`` or ``idle``.

    ``delta_ns`` is its contribution to the change in step time (per step): for
    ``overlap`` it is minus the change in overlap, since more overlap shortens a step.
    """

    name: str
    before_ns: float  # per step, baseline
    after_ns: float
    delta_ns: float
    evidence: tuple[Evidence, ...] = ()


class Waterfall(msgspec.Struct, frozen=True):
    """One trace against the baseline (or, when the comparison pairs two sides, against
    the same strategy on the other side): the change in step time, term by term.

    ``sum(t.delta_ns for t in terms) == delta_ns`` (exactly, up to float rounding of the
    per-step division). ``terms`` are ordered by size, largest first.
    """

    label: str
    side: str
    before_ns: float  # step time per step, baseline
    after_ns: float
    delta_ns: float
    terms: tuple[Term, ...]
    # the label of the trace it is measured against when the comparison pairs two sides
    # strategy by strategy (see ``StepDiff.against``); "" when it is the baseline
    against: str = ""

    @property
    def verdict_terms(self) -> tuple[Term, ...]:
        """The terms a verdict names: the largest few that moved at all."""
        return tuple(t for t in self.terms if t.delta_ns != 0)[:VERDICT_TERMS]


class StepDiff(msgspec.Struct, frozen=True):
    """Waterfalls of every trace against the baseline (``None`` where sides differ), or
    against the trace ``against`` names."""

    baseline: int
    side: str
    waterfalls: tuple[Waterfall | None, ...]  # indexed like the labels; None at the baseline
    # per trace, the index of the trace its waterfall is measured against (None: it has
    # none); empty when every trace is measured against the baseline
    against: tuple[int | None, ...] = ()


def step_diff(labels: Sequence[str], terms: Sequence[StepTerms], baseline: int,
              ops: OpDiff | None = None,
              idle: Sequence[IdleAttribution | None] | None = None,
              against: Sequence[int | None] | None = None) -> StepDiff:
    """Each trace's step-time change against the baseline, split into terms; with ``idle``
    (each trace's idle attribution), the idle term names the causes that moved most.
    ``against``: per trace, the index of the trace to measure it against instead (None:
    no waterfall), as when two runs are compared strategy by strategy."""
    base = terms[baseline]
    refs = (list(against) if against is not None
            else [None if i == baseline else baseline for i in range(len(terms))])
    falls: list[Waterfall | None] = []
    for i, t in enumerate(terms):
        ref = refs[i]
        if ref is None or ref == i or t.side != terms[ref].side:
            falls.append(None)
            continue
        causes = (_idle_causes(idle[ref], idle[i], terms[ref].steps, t.steps)
                  if idle else ())
        falls.append(_waterfall(labels[i], i, terms[ref], t, ops, causes, ref,
                                labels[ref] if against is not None else ""))
    return StepDiff(baseline=baseline, side=base.side, waterfalls=tuple(falls),
                    against=tuple(refs) if against is not None else ())


def _waterfall(label: str, index: int, base: StepTerms, t: StepTerms,
               ops: OpDiff | None, idle_causes: tuple[Evidence, ...] = (),
               ref: int | None = None, against: str = "") -> Waterfall:
    def per(a: StepTerms, value: int) -> float:
        return value / a.steps

    terms = []
    for klass in classify.CLASSES:
        b, a = per(base, base.busy_ns.get(klass, 0)), per(t, t.busy_ns.get(klass, 0))
        if a or b:
            terms.append(Term(klass, b, a, a - b,
                              _evidence(ops, index, klass, base.side, ref)))
    b, a = per(base, base.overlap_ns), per(t, t.overlap_ns)
    terms.append(Term(OVERLAP, b, a, b - a))
    b, a = per(base, base.idle_ns), per(t, t.idle_ns)
    terms.append(Term(IDLE, b, a, a - b, idle_causes))
    terms.sort(key=lambda x: -abs(x.delta_ns))
    before, after = per(base, base.window_ns), per(t, t.window_ns)
    return Waterfall(label, t.side, before, after, after - before, tuple(terms), against)


def _idle_causes(base: IdleAttribution | None, other: IdleAttribution | None,
                 base_steps: int, other_steps: int) -> tuple[Evidence, ...]:
    """The kinds of GPU idle cause (see idle_attribution) whose time per step moved most."""
    if base is None or other is None:
        return ()
    found = []
    for kind in KINDS:
        b, a = base.kind_ns(kind) / base_steps, other.kind_ns(kind) / other_steps
        if a != b:
            found.append(Evidence(KIND_LABELS[kind], IDLE_CAUSE, "changed", a - b, 0, 0))
    found.sort(key=lambda e: -abs(e.delta_ns))
    return tuple(found[:EVIDENCE_NAMES])


def _evidence(ops: OpDiff | None, index: int, klass: str, side: str,
              ref: int | None = None) -> tuple[Evidence, ...]:
    """The names of this class whose time per step moved most (kernels, or CPU ops),
    against trace ``ref`` (default: the baseline)."""
    if ops is None:
        return ()
    ref = ops.baseline if ref is None else ref
    rows: Sequence[DiffRow] = ops.kernels if side == "device" else ops.ops
    found = []
    for r in rows:
        # the CPU side counts self time, so nested ops are not counted twice
        d = r.self_ns_per_step[index] - r.self_ns_per_step[ref]
        if r.klass != klass or not d:
            continue
        status = r.status[index] if ref == ops.baseline else status_against(r, index, ref)
        found.append(Evidence(r.name, r.category, status, d,
                              r.count_per_step[ref], r.count_per_step[index]))
    found.sort(key=lambda e: -abs(e.delta_ns))
    return tuple(found[:EVIDENCE_NAMES])
