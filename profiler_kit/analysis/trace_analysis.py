"""One trace, fully analyzed: :func:`analyze_table` runs every registered analysis into a
``TraceAnalysis``.

This is what ``profkit analyze``, ``profkit compare`` and ``profkit run``'s summary
read. It holds raw numbers only (ns, bytes, fractions); renderers format them.

Each field of ``TraceAnalysis`` is one analysis registered below (``@analysis(name,
type)`` over a function of the shared :class:`~profiler_kit.analysis.registry.TraceContext`),
in registration order, grouped as the trace itself, the figures of the steps' window, the
whole trace's, and the findings, and is written out with its type in the class at the end:
adding an analysis is its module in its room plus its registration and its field here
(see :mod:`profiler_kit.analysis.registry`; a test holds the two to each other), then its
presenter (:mod:`profiler_kit.render.sections`).

Windows: with ``ProfilerStep#`` spans, the GPU figures (``gpu``, ``timeline``,
``phases``, ``launches``) cover the GPU activities launched in the steps, over the
GPU-side steps window, and the ``trace_*`` fields the whole trace; without steps both
describe the whole trace (``window`` says which).

A trace whose GPU work went unrecorded (launch calls or a GPU in use, no kernel, memcpy
or memset: :mod:`.time.unrecorded_activity`) is named in ``gpu_activity_missing`` and the
first note; its step breakdown, critical path, GPU rules and every rate against a peak are
withheld, since the CPU-side durations of its launches are not GPU time.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from profiler_kit.analysis.advice.cpu_advice import with_cpu_findings
from profiler_kit.analysis.advice.perf_rules import perf_recommendations
from profiler_kit.analysis.advice.recommend import Findings, recommend
from profiler_kit.analysis.advice.sm_rules import sm_recommendations
from profiler_kit.analysis.code.provenance import Provenance
from profiler_kit.analysis.code.view import CodeView, analyze_code, with_idle_kernel_lines
from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.analysis.diffs.op_diff import NameProfile, name_profile
from profiler_kit.analysis.diffs.step_diff import StepTerms, decompose
from profiler_kit.analysis.jobs.rank_summary import RankSummary, summarize_rank
from profiler_kit.analysis.memory.over_time import MemoryTimeline, memory_timeline
from profiler_kit.analysis.memory.usage import Memory, analyze_memory
from profiler_kit.analysis.perf.gpu_counters import GpuCounters, gpu_counters
from profiler_kit.analysis.perf.precision import Precision, analyze_precision
from profiler_kit.analysis.perf.roofline import Instances, PerfModel, measure, mfu_window
from profiler_kit.analysis.perf.sm_occupancy import SmOccupancy, sm_over_plugin_window
from profiler_kit.analysis.predicted_gains import MIN_GAIN_PCT, Ranked, predict, ranked
from profiler_kit.analysis.registry import Registry, TraceContext
from profiler_kit.analysis.time.busy import Timeline, analyze_timeline
from profiler_kit.analysis.time.copies import Copies, host_copies
from profiler_kit.analysis.time.critical_path import MAX_EVENTS, CriticalPath, critical_path
from profiler_kit.analysis.time.hotspots import (
    Breakdown,
    NameTotal,
    cpu_breakdown,
    gpu_breakdown,
    kernel_table,
)
from profiler_kit.analysis.time.idle_causes import IdleAttribution, attribute_idle
from profiler_kit.analysis.time.idle_gaps import IdleGaps, idle_gaps
from profiler_kit.analysis.time.launches import Launches, analyze_launches
from profiler_kit.analysis.time.phases import Phases, analyze_phases
from profiler_kit.analysis.time.step_timeline import StepTimeline, step_timeline
from profiler_kit.analysis.time.unrecorded_activity import MissingGpuActivity
from profiler_kit.trace.table import EventTable


class DeviceInfo(msgspec.Struct, frozen=True):
    """What ``deviceProperties`` says about one GPU (fields the trace lacks are None)."""

    id: int
    name: str | None
    total_memory_bytes: int | None
    compute_capability: str | None


class Attribution(msgspec.Struct, frozen=True):
    """How GPU activities were linked to the ops that launched them."""

    by_correlation: int
    by_external_id: int
    unlinked: int  # classed by kernel name alone


class TraceAnalysisBase(msgspec.Struct, frozen=True):
    """One trace, fully analyzed: one field per registered analysis (``ANALYSES``), in
    registration order; raw numbers only (ns, bytes, fractions)."""

    @property
    def has_gpu(self) -> bool:
        return self.gpu.count > 0  # type: ignore[attr-defined, no-any-return]


ANALYSES = Registry("TraceAnalysis", TraceAnalysisBase, __name__)
analysis = ANALYSES.register


# --- the trace itself ---


@analysis("path", str)
def _path(ctx: TraceContext) -> str:
    """The trace file."""
    return str(ctx.meta.path)


@analysis("label", str)
def _label(ctx: TraceContext) -> str:
    """The label given, else the trace's name, else its path."""
    return ctx.label or ctx.meta.trace_name or str(ctx.meta.path)


@analysis("rank", int | None)
def _rank(ctx: TraceContext) -> int | None:
    """The rank, from ``distributedInfo``."""
    return ctx.meta.rank


@analysis("world_size", int | None)
def _world_size(ctx: TraceContext) -> int | None:
    """The world size, from ``distributedInfo``."""
    return _int_or_none(ctx.meta.distributed_info.get("world_size"))


@analysis("devices", tuple[DeviceInfo, ...])
def _devices(ctx: TraceContext) -> tuple[DeviceInfo, ...]:
    """What ``deviceProperties`` says of each GPU."""
    return tuple(_device_info(p) for p in ctx.meta.device_properties)


@analysis("events", int)
def _events(ctx: TraceContext) -> int:
    """The rows of the event table."""
    return len(ctx.table)


@analysis("skipped", dict[str, int])
def _skipped(ctx: TraceContext) -> dict[str, int]:
    """Reason -> events left out of the table."""
    return dict(ctx.table.skipped)


@analysis("normalized", dict[str, int])
def _normalized(ctx: TraceContext) -> dict[str, int]:
    """Reason -> events kept after a fix."""
    return dict(ctx.table.normalized)


@analysis("gpu_activity_missing", MissingGpuActivity | None, default=None)
def _gpu_activity_missing(ctx: TraceContext) -> MissingGpuActivity | None:
    """Launches or a GPU in use but no GPU activity recorded: what shows it (None: not
    so)."""
    return ctx.missing


@analysis("window", str, default="trace")
def _window(ctx: TraceContext) -> str:
    """``"steps"``: gpu, gpu_by_device, timeline, phases and launches cover the steps (the
    activities launched in them, over the GPU-side steps window); ``"trace"``: the whole
    trace."""
    return ctx.window


# --- the figures of the steps' window (the whole trace where it has no steps: ``window``) ---


@analysis("steps", Steps)
def _steps(ctx: TraceContext) -> Steps:
    """The ``ProfilerStep#`` steps (or the trace window), CPU and device side."""
    return ctx.steps


@analysis("step_device_ns", int | None, default=None)
def _step_device_ns(ctx: TraceContext) -> int | None:
    """The steps' device-side time, summed (None: no device-side steps)."""
    steps = ctx.steps
    if ctx.in_steps is None or steps.device is None:
        return None
    return sum(st.device_dur_ns for st in steps.steps)


@analysis("step_gpu_busy_share", float | None, default=None)
def _step_gpu_busy_share(ctx: TraceContext) -> float | None:
    """The steps' GPU busy time (per device, averaged) over their device-side time: a
    step of 13 s with 2 µs of GPU work is 0.00002 busy, although its GPU window is all
    busy."""
    return _busy_share(ctx.result("timeline"), ctx.result("step_device_ns"))


@analysis("step_terms", StepTerms)
def _step_terms(ctx: TraceContext) -> StepTerms:
    """Step time decomposed into class busy time, overlap and idle."""
    return decompose(ctx.table, ctx.tree, ctx.gpu, ctx.steps)


@analysis("gpu", Breakdown)
def _gpu(ctx: TraceContext) -> Breakdown:
    """All GPU activity (kernels, memcpy, memset) by class, in ``window``."""
    if ctx.in_steps is None:
        return ctx.result("trace_gpu")
    return gpu_breakdown(ctx.table, ctx.gpu, ctx.in_steps, top=ctx.top)


@analysis("gpu_by_device", tuple[tuple[int, Breakdown], ...])
def _gpu_by_device(ctx: TraceContext) -> tuple[tuple[int, Breakdown], ...]:
    """One breakdown per GPU, in ``window``; only when the trace has several."""
    table, gpu = ctx.table, ctx.gpu
    devices = distinct(table.device[gpu.row])
    if len(devices) <= 1:
        return ()
    sel = np.ones(len(gpu), dtype=bool) if ctx.in_steps is None else ctx.in_steps
    return tuple(
        (int(d), gpu_breakdown(table, gpu, sel & (table.device[gpu.row] == d), top=ctx.top))
        for d in devices.tolist()
    )


@analysis("cpu", Breakdown)
def _cpu(ctx: TraceContext) -> Breakdown:
    """CPU op self time by class."""
    return cpu_breakdown(ctx.table, ctx.tree, top=ctx.top)


@analysis("kernels", tuple[NameTotal, ...])
def _kernels(ctx: TraceContext) -> tuple[NameTotal, ...]:
    """Every GPU activity name, largest total first."""
    return tuple(kernel_table(ctx.table, ctx.gpu))


@analysis("attribution", Attribution)
def _attribution(ctx: TraceContext) -> Attribution:
    """How the GPU activities were linked to the ops that launched them."""
    linked_by = ctx.gpu.linked_by
    return Attribution(
        by_correlation=int((linked_by == 1).sum()),
        by_external_id=int((linked_by == 2).sum()),
        unlinked=int((linked_by == 0).sum()),
    )


@analysis("timeline", Timeline)
def _timeline(ctx: TraceContext) -> Timeline:
    """GPU busy and idle per device and stream, in ``window``."""
    if ctx.in_steps is None:
        return ctx.result("trace_timeline")
    gpu_window = ctx.gpu_window
    return analyze_timeline(ctx.table, ctx.gpu, ctx.in_steps, gpu_window) if gpu_window \
        else analyze_timeline(ctx.table, ctx.gpu, ctx.in_steps)


@analysis("launches", Launches | None, default=None)
def _launches(ctx: TraceContext) -> Launches | None:
    """Launch statistics and idle causes, in ``window``."""
    if ctx.in_steps is None:
        return ctx.result("trace_launches")
    return analyze_launches(ctx.table, ctx.gpu, ctx.in_steps)


@analysis("idle", IdleAttribution | None, default=None)
def _idle(ctx: TraceContext) -> IdleAttribution | None:
    """The idle gaps of ``launches`` by what the launching CPU thread was doing
    meanwhile."""
    return attribute_idle(ctx.table, ctx.tree, ctx.gpu, ctx.in_steps,
                          ctx.steps.start_ns if ctx.in_steps is not None else None)


@analysis("idle_gaps", IdleGaps | None, default=None)
def _idle_gaps(ctx: TraceContext) -> IdleGaps | None:
    """Each device's idle time by the length of its gaps, in ``window`` (None: no GPU
    activity)."""
    windows = _device_windows(ctx)
    return idle_gaps(ctx.table, ctx.gpu, ctx.in_steps, windows) if windows else None


def _device_windows(ctx: TraceContext) -> dict[int, tuple[int, int]]:
    """Each device's window in the timeline: device -> [start, end) in ns."""
    return {d.device: (d.window_start_ns, d.window_start_ns + d.window_ns)
            for d in ctx.result("timeline").devices}


@analysis("sm", SmOccupancy | None, default=None)
def _sm(ctx: TraceContext) -> SmOccupancy | None:
    """SM efficiency and achieved occupancy per device (as the TensorBoard plugin's, over
    its window) and step, per kernel name with its limiter, the kernels that idle the SMs
    with their line."""
    sm = sm_over_plugin_window(ctx.table, ctx.gpu, ctx.in_steps, _device_windows(ctx),
                               ctx.steps)
    return with_idle_kernel_lines(sm, ctx.result("code"))


@analysis("counters", GpuCounters | None, default=None)
def _counters(ctx: TraceContext) -> GpuCounters | None:
    """The GPU counters the trace sampled (power, clocks, SM active %), per device over its
    window and each step (None: the trace has none)."""
    return gpu_counters(ctx.table.counters, ctx.steps, _device_windows(ctx),
                        ctx.items_per_step)


@analysis("copies", Copies | None, default=None)
def _copies(ctx: TraceContext) -> Copies | None:
    """The copies (memcpy) by direction and memory, with the ops that launched them, in
    ``window`` (None: none there)."""
    return host_copies(ctx.table, ctx.gpu, ctx.in_steps, len(ctx.steps.steps))


@analysis("phases", Phases)
def _phases(ctx: TraceContext) -> Phases:
    """Time per ``record_function`` annotation, in ``window``."""
    if ctx.in_steps is None:
        return ctx.result("trace_phases")
    return analyze_phases(ctx.table, ctx.tree, ctx.gpu, (ctx.steps.start_ns, ctx.steps.end_ns),
                          ctx.gpu_window, ctx.in_steps)


@analysis("precision", Precision)
def _precision(ctx: TraceContext) -> Precision:
    """The GEMMs' and convolutions' precision and tensor-core use."""
    return analyze_precision(ctx.table, ctx.gpu, top=ctx.top)


@analysis("perf", PerfModel)
def _perf(ctx: TraceContext) -> PerfModel:
    """FLOPs, bytes and rates per op and input shape, against the device's peak."""
    return ctx.memo(_measured)[0]


@analysis("memory", Memory)
def _memory(ctx: TraceContext) -> Memory:
    """Peak memory per device."""
    return analyze_memory(ctx.table, ctx.tree, top=max(ctx.top, 10))


@analysis("memory_timeline", MemoryTimeline)
def _memory_timeline(ctx: TraceContext) -> MemoryTimeline:
    """Allocated and reserved memory over time per device."""
    return memory_timeline(ctx.table)


@analysis("step_timeline", StepTimeline)
def _step_timeline(ctx: TraceContext) -> StepTimeline:
    """One representative step as intervals on lanes."""
    return step_timeline(ctx.table, ctx.tree, ctx.gpu, ctx.steps)


@analysis("names", NameProfile)
def _names(ctx: TraceContext) -> NameProfile:
    """Count and time per op and kernel name over the steps."""
    return name_profile(ctx.table, ctx.tree, ctx.gpu, ctx.steps)


@analysis("critical_path", CriticalPath | None)
def _critical_path(ctx: TraceContext) -> CriticalPath | None:
    """The critical path of the median step (None: its window is too large, or the GPU's
    work went unrecorded)."""
    if ctx.missing is not None:
        return None
    return critical_path(ctx.table, ctx.gpu, ctx.steps, top=max(ctx.top, 10))


@analysis("code", CodeView | None, default=None)
def _code(ctx: TraceContext) -> CodeView | None:
    """Time by nn.Module instance and source line, forward and backward, compiled
    kernels' ops and CUDA graph replays (``modules`` and ``lines`` empty without module
    events or stacks; its notes say how to record them)."""
    return analyze_code(ctx.table, ctx.tree, ctx.gpu, top=ctx.top, provenance=ctx.provenance)


@analysis("communication", RankSummary | None, default=None)
def _communication(ctx: TraceContext) -> RankSummary | None:
    """The rank's collectives and steps, for the job view across ranks (None: not
    computed)."""
    return summarize_rank(ctx.table, label=ctx.label or ctx.meta.trace_name, steps=ctx.steps,
                          tree=ctx.tree, gpu=ctx.gpu)


# --- the whole trace's, where the window is the steps' ---


@analysis("trace_gpu", Breakdown | None, default=None)
def _trace_gpu(ctx: TraceContext) -> Breakdown | None:
    """The whole trace's GPU activity by class (the same as ``gpu`` for ``"trace"``)."""
    return gpu_breakdown(ctx.table, ctx.gpu, top=ctx.top)


@analysis("trace_timeline", Timeline | None, default=None)
def _trace_timeline(ctx: TraceContext) -> Timeline | None:
    """The whole trace's GPU busy and idle."""
    return analyze_timeline(ctx.table, ctx.gpu)


@analysis("trace_phases", Phases | None, default=None)
def _trace_phases(ctx: TraceContext) -> Phases | None:
    """The whole trace's time per annotation."""
    tl: Timeline = ctx.result("trace_timeline")
    window = (tl.trace_start_ns, tl.trace_start_ns + tl.trace_window_ns)
    return analyze_phases(ctx.table, ctx.tree, ctx.gpu, window)


@analysis("trace_launches", Launches | None, default=None)
def _trace_launches(ctx: TraceContext) -> Launches | None:
    """The whole trace's launch statistics."""
    return analyze_launches(ctx.table, ctx.gpu)


# --- the findings ---


@analysis("recommendations", tuple[Recommendation, ...])
def _recommendations(ctx: TraceContext) -> tuple[Recommendation, ...]:
    """The rules that fire (the general rules', the perf model's, the SM rules'), each with
    the change that models its advice and the step the replay predicts with it, ranked by
    that gain; those under ``min_gain_pct`` are in ``held_back``."""
    return ctx.memo(_ranked).shown


@analysis("held_back", tuple[Recommendation, ...], default=())
def _held_back(ctx: TraceContext) -> tuple[Recommendation, ...]:
    """The rules that fired but whose trusted predicted gain is under ``min_gain_pct``:
    not recommended, named in a note."""
    return ctx.memo(_ranked).held_back


@analysis("notes", tuple[Note, ...])
def _notes(ctx: TraceContext) -> tuple[Note, ...]:
    """Rules that could not be evaluated and why, and what the figures cover."""
    missing = ctx.missing
    notes = list(ctx.memo(_findings).notes)
    held = ctx.memo(_ranked).note
    if held is not None:
        notes.append(held)
    if missing is not None:  # gpu_activity_missing says why the GPU rules did not run
        notes = [n for n in notes if n.code != "cpu_only_trace"]
    if ctx.steps.source == "window":
        notes.insert(0, note("no_step_spans"))
    if ctx.unlinked_steps:
        notes.insert(0, note("gpu_not_linked_to_steps"))
    if ctx.result("critical_path") is None and missing is None:
        notes.append(note("critical_path_too_large", max_events=MAX_EVENTS))
    return tuple(notes)


def _ranked(ctx: TraceContext) -> Ranked:
    """The rules that fire with their predictions, ranked, and those held back."""
    perf, instances = ctx.memo(_measured)
    recs = ctx.memo(_findings).recommendations + perf_recommendations(
        ctx.table, ctx.tree, ctx.result("gpu"), perf, instances) + sm_recommendations(
        ctx.result("sm"))
    return ranked(predict(ctx.table, ctx.gpu, ctx.tree, recs), ctx.min_gain_pct)


def _findings(ctx: TraceContext) -> Findings:
    """The rules' findings (recommendations and notes), the CPU rules' included."""
    table, tree, gpu, steps = ctx.table, ctx.tree, ctx.gpu, ctx.steps
    findings = recommend(table, tree, gpu, ctx.result("gpu"), ctx.result("timeline"), steps,
                         ctx.result("precision"), ctx.result("memory"), ctx.result("launches"),
                         ctx.result("step_device_ns"), ctx.result("idle"))
    return with_cpu_findings(findings, table, tree, gpu, steps)


def _measured(ctx: TraceContext) -> tuple[PerfModel, Instances]:
    """The perf model and the op instances it counted."""
    window = mfu_window(ctx.steps, len(ctx.result("timeline").devices),
                        ctx.result("step_device_ns"))
    return measure(ctx.table, ctx.tree, ctx.gpu, window,
                   device_time_missing=ctx.missing is not None)


class TraceAnalysis(TraceAnalysisBase, frozen=True, kw_only=True):
    """One trace, fully analyzed: the fields of the analyses registered above, declared
    here with their types (in registration order: ``ANALYSES.struct()`` is this class
    while the registrations match it, which ``tests/analysis/test_registry.py`` holds)."""

    # the trace itself
    path: str
    label: str
    rank: int | None
    world_size: int | None
    devices: tuple[DeviceInfo, ...]
    events: int
    skipped: dict[str, int]  # reason -> events left out
    normalized: dict[str, int]  # reason -> events kept after a fix
    gpu_activity_missing: MissingGpuActivity | None = None
    window: str = "trace"  # "steps" or "trace": what the window figures cover
    # the steps' window (the whole trace where it has no steps: ``window``)
    steps: Steps
    step_device_ns: int | None = None
    step_gpu_busy_share: float | None = None
    step_terms: StepTerms  # the step split term by term (the waterfall's input)
    gpu: Breakdown  # GPU time by class
    gpu_by_device: tuple[tuple[int, Breakdown], ...]
    cpu: Breakdown  # CPU op self time by class
    kernels: tuple[NameTotal, ...]
    attribution: Attribution  # how the kernels were linked to their ops
    timeline: Timeline  # busy, idle and overlap per device
    launches: Launches | None = None  # the launch queue in the window
    idle: IdleAttribution | None = None  # why the GPU idled
    idle_gaps: IdleGaps | None = None  # the idle time by the length of its gaps
    sm: SmOccupancy | None = None
    counters: GpuCounters | None = None  # what the GPU's own counters measured
    copies: Copies | None = None  # the copies by direction and memory
    phases: Phases  # record_function ranges
    precision: Precision
    perf: PerfModel  # FLOPs, bytes, roofline and MFU
    memory: Memory
    memory_timeline: MemoryTimeline
    step_timeline: StepTimeline
    names: NameProfile  # op and kernel names, for the comparison
    critical_path: CriticalPath | None
    code: CodeView | None = None  # time by module and line
    communication: RankSummary | None = None  # collectives, for the job view
    # the whole trace, where the window is the steps'
    trace_gpu: Breakdown | None = None
    trace_timeline: Timeline | None = None
    trace_phases: Phases | None = None
    trace_launches: Launches | None = None
    # findings
    recommendations: tuple[Recommendation, ...]
    held_back: tuple[Recommendation, ...] = ()  # predicted gain under the threshold
    notes: tuple[Note, ...]


ANALYSES.declare(TraceAnalysis)


def analyze_table(table: EventTable, label: str | None = None, top: int = 5,
                  provenance: Provenance | None = None,
                  min_gain_pct: float = MIN_GAIN_PCT,
                  items_per_step: int | None = None) -> TraceAnalysis:
    """Run every registered analysis on one event table; ``provenance``: Inductor's, saved
    beside the trace of a compiled model (compiled kernels to the user's lines);
    ``min_gain_pct``: the predicted gain under which a rule is held back;
    ``items_per_step``: what one step processes, where the run says (figures per item)."""
    return ANALYSES.analyze(table, label=label, top=top, provenance=provenance,
                            min_gain_pct=min_gain_pct, items_per_step=items_per_step)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _device_info(p: dict[str, Any]) -> DeviceInfo:
    major, minor = p.get("computeMajor"), p.get("computeMinor")
    cc = f"{major}.{minor}" if isinstance(major, int) and isinstance(minor, int) else None
    name = p.get("name")
    return DeviceInfo(
        id=_int_or_none(p.get("id")) if _int_or_none(p.get("id")) is not None else -1,
        name=name if isinstance(name, str) else None,
        total_memory_bytes=_int_or_none(p.get("totalGlobalMem")),
        compute_capability=cc,
    )


def _busy_share(timeline: Timeline, step_device_ns: int | None) -> float | None:
    """GPU busy time over the steps' device-side time, per device, averaged."""
    if not step_device_ns or not timeline.devices:
        return None
    return min(1.0, timeline.busy_ns / (len(timeline.devices) * step_device_ns))
