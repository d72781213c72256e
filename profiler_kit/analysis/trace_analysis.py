"""One trace, fully analyzed: :func:`analyze_table` bundles every analysis into a ``TraceAnalysis``.

This is what ``profkit analyze``, ``profkit compare`` and ``profkit run``'s summary
read. It holds raw numbers only (ns, bytes, fractions); renderers format them.

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
from profiler_kit.analysis.advice.recommend import recommend
from profiler_kit.analysis.advice.sm_rules import sm_recommendations
from profiler_kit.analysis.code.provenance import Provenance
from profiler_kit.analysis.code.view import CodeView, analyze_code
from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.analysis.core.steps import Steps, analyze_steps, cpu_steps, step_of_activities
from profiler_kit.analysis.diffs.op_diff import NameProfile, name_profile
from profiler_kit.analysis.diffs.step_diff import StepTerms, decompose
from profiler_kit.analysis.jobs.rank_summary import RankSummary, summarize_rank
from profiler_kit.analysis.memory.over_time import MemoryTimeline, memory_timeline
from profiler_kit.analysis.memory.usage import Memory, analyze_memory
from profiler_kit.analysis.perf.precision import Precision, analyze_precision
from profiler_kit.analysis.perf.roofline import MfuWindow, PerfModel, measure
from profiler_kit.analysis.perf.sm_occupancy import SmOccupancy, analyze_sm_occupancy
from profiler_kit.analysis.time.busy import Timeline, analyze_timeline
from profiler_kit.analysis.time.critical_path import MAX_EVENTS, CriticalPath, critical_path
from profiler_kit.analysis.time.hotspots import (
    Breakdown,
    NameTotal,
    cpu_breakdown,
    gpu_breakdown,
    kernel_table,
)
from profiler_kit.analysis.time.idle_causes import IdleAttribution, attribute_idle
from profiler_kit.analysis.time.launches import Launches, analyze_launches
from profiler_kit.analysis.time.phases import Phases, analyze_phases
from profiler_kit.analysis.time.step_timeline import StepTimeline, step_timeline
from profiler_kit.analysis.time.unrecorded_activity import MissingGpuActivity, missing_gpu_activity
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


class TraceAnalysis(msgspec.Struct, frozen=True):
    path: str
    label: str
    rank: int | None
    world_size: int | None
    devices: tuple[DeviceInfo, ...]
    events: int
    skipped: dict[str, int]  # reason -> events left out of the table
    normalized: dict[str, int]  # reason -> events kept after a fix
    gpu: Breakdown  # all GPU activity (kernels, memcpy, memset) by class
    gpu_by_device: tuple[tuple[int, Breakdown], ...]  # only when several devices
    cpu: Breakdown  # CPU op self time by class
    kernels: tuple[NameTotal, ...]  # every GPU activity name, largest total first
    attribution: Attribution
    timeline: Timeline
    steps: Steps
    precision: Precision
    perf: PerfModel  # FLOPs, bytes and rates per op and input shape, against the device's peak
    memory: Memory
    phases: Phases
    recommendations: tuple[Recommendation, ...]
    notes: tuple[str, ...]
    memory_timeline: MemoryTimeline  # allocated/reserved over time per device
    step_timeline: StepTimeline  # one representative step as intervals on lanes
    names: NameProfile  # count and time per op and kernel name over the steps
    step_terms: StepTerms  # step time decomposed into class busy time, overlap and idle
    critical_path: CriticalPath | None  # of the median step (None: window too large)
    # the rank's collectives and steps, for the job view across ranks (None: not computed)
    communication: RankSummary | None = None
    # "steps": gpu, gpu_by_device, timeline, phases and launches cover the steps (the
    # activities launched in them, over the GPU-side steps window); "trace": the whole trace
    window: str = "trace"
    trace_gpu: Breakdown | None = None  # the whole trace's figures (same as above for "trace")
    trace_timeline: Timeline | None = None
    trace_phases: Phases | None = None
    launches: Launches | None = None  # launch statistics and idle causes, in ``window``
    trace_launches: Launches | None = None
    # the idle gaps of ``launches`` by what the launching CPU thread was doing meanwhile
    idle: IdleAttribution | None = None
    # the steps' GPU busy time (per device, averaged) over their device-side time: a step
    # of 13 s with 2 µs of GPU work is 0.00002 busy, although its GPU window is all busy
    step_gpu_busy_share: float | None = None
    step_device_ns: int | None = None  # the steps' device-side time, summed
    # launches or a GPU in use but no GPU activity recorded: what shows it (None: not so)
    gpu_activity_missing: MissingGpuActivity | None = None
    # time by nn.Module instance and source line, forward and backward, compiled kernels'
    # ops and CUDA graph replays (``modules`` and ``lines`` empty without module events or
    # stacks; its notes say how to record them)
    code: CodeView | None = None
    # SM efficiency and achieved occupancy per device and step (the GPU busy window), per
    # kernel name with its limiter (None: not computed)
    sm: SmOccupancy | None = None

    @property
    def has_gpu(self) -> bool:
        return self.gpu.count > 0


def analyze_table(table: EventTable, label: str | None = None, top: int = 5,
                  provenance: Provenance | None = None) -> TraceAnalysis:
    """Run every analysis on one event table; ``provenance``: Inductor's, saved beside
    the trace of a compiled model (compiled kernels to the user's lines)."""
    tree = build_op_tree(table)
    gpu = attribute_gpu(table, tree)
    missing = missing_gpu_activity(table, gpu)
    steps = analyze_steps(table, gpu)
    if missing is not None:  # a split without the GPU's work says nothing of the step
        steps = msgspec.structs.replace(steps, breakdown=None, steps=tuple(
            msgspec.structs.replace(st, breakdown=None) for st in steps.steps))
    in_steps = None  # mask of the activities launched in the steps
    window = "trace"
    unlinked_steps = False
    if steps.source == "ProfilerStep":
        in_steps = step_of_activities(table, gpu, cpu_steps(table)) >= 0
        if len(gpu) and not in_steps.any():
            in_steps, unlinked_steps = None, True  # nothing to tell the steps' work apart
        else:
            window = "steps"
    gpu_window = (steps.gpu_window_start_ns, steps.gpu_window_end_ns) \
        if steps.gpu_window_start_ns is not None else None
    trace_bd = gpu_breakdown(table, gpu, top=top)
    gpu_bd = gpu_breakdown(table, gpu, in_steps, top=top) if in_steps is not None else trace_bd
    devices = distinct(table.device[gpu.row])
    by_device: tuple[tuple[int, Breakdown], ...] = ()
    if len(devices) > 1:
        sel = np.ones(len(gpu), dtype=bool) if in_steps is None else in_steps
        by_device = tuple(
            (int(d), gpu_breakdown(table, gpu, sel & (table.device[gpu.row] == d), top=top))
            for d in devices.tolist()
        )
    trace_timeline = analyze_timeline(table, gpu)
    trace_launches = analyze_launches(table, gpu)
    trace_window = (trace_timeline.trace_start_ns,
                    trace_timeline.trace_start_ns + trace_timeline.trace_window_ns)
    trace_phases = analyze_phases(table, tree, gpu, trace_window)
    if in_steps is not None:
        timeline = analyze_timeline(table, gpu, in_steps, gpu_window) if gpu_window \
            else analyze_timeline(table, gpu, in_steps)
        launches = analyze_launches(table, gpu, in_steps)
        phases = analyze_phases(table, tree, gpu, (steps.start_ns, steps.end_ns),
                                gpu_window, in_steps)
    else:
        timeline, launches, phases = trace_timeline, trace_launches, trace_phases
    sm = _sm_occupancy(table, gpu, in_steps, timeline, steps)
    idle = attribute_idle(table, tree, gpu, in_steps,
                          steps.start_ns if in_steps is not None else None)
    precision = analyze_precision(table, gpu, top=top)
    memory = analyze_memory(table, tree, top=max(top, 10))
    step_device_ns = sum(st.device_dur_ns for st in steps.steps) \
        if in_steps is not None and steps.device is not None else None
    findings = recommend(table, tree, gpu, gpu_bd, timeline, steps, precision, memory,
                         launches, step_device_ns, idle)
    findings = with_cpu_findings(findings, table, tree, gpu, steps)
    perf, instances = measure(table, tree, gpu, _mfu_window(steps, timeline, step_device_ns),
                              device_time_missing=missing is not None)
    meta = table.meta
    notes = list(findings.notes)
    if missing is not None:  # the line says why the GPU rules did not run
        notes = [missing.line] + [n for n in notes if not n.startswith("CPU-only trace")]
    if steps.source == "window":
        notes.insert(0, "no ProfilerStep# spans: step and GPU figures describe the whole "
                        "trace window")
    if unlinked_steps:
        notes.insert(0, "no GPU activity is linked to a launch inside the steps (no runtime "
                        "correlation): GPU figures describe the whole trace window")
    path = critical_path(table, gpu, steps, top=max(top, 10)) if missing is None else None
    if path is None and missing is None:
        notes.append(f"critical path left out: its window holds more than {MAX_EVENTS:,} "
                     "events (profile with a schedule to get ProfilerStep# spans)")
    code = analyze_code(table, tree, gpu, top=top, provenance=provenance)
    sm = _with_sources(sm, code)
    return TraceAnalysis(
        path=str(meta.path),
        label=label or meta.trace_name or str(meta.path),
        rank=meta.rank,
        world_size=_int_or_none(meta.distributed_info.get("world_size")),
        devices=tuple(_device_info(p) for p in meta.device_properties),
        events=len(table),
        skipped=dict(table.skipped),
        normalized=dict(table.normalized),
        gpu=gpu_bd,
        gpu_by_device=by_device,
        cpu=cpu_breakdown(table, tree, top=top),
        kernels=tuple(kernel_table(table, gpu)),
        attribution=Attribution(
            by_correlation=int((gpu.linked_by == 1).sum()),
            by_external_id=int((gpu.linked_by == 2).sum()),
            unlinked=int((gpu.linked_by == 0).sum()),
        ),
        timeline=timeline,
        steps=steps,
        precision=precision,
        perf=perf,
        memory=memory,
        phases=phases,
        recommendations=findings.recommendations + perf_recommendations(
            table, tree, gpu_bd, perf, instances) + sm_recommendations(sm),
        notes=tuple(notes),
        memory_timeline=memory_timeline(table),
        step_timeline=step_timeline(table, tree, gpu, steps),
        names=name_profile(table, tree, gpu, steps),
        step_terms=decompose(table, tree, gpu, steps),
        critical_path=path,
        communication=summarize_rank(table, label=label or meta.trace_name, steps=steps,
                                     tree=tree, gpu=gpu),
        window=window,
        trace_gpu=trace_bd,
        trace_timeline=trace_timeline,
        trace_phases=trace_phases,
        launches=launches,
        trace_launches=trace_launches,
        idle=idle,
        step_gpu_busy_share=_busy_share(timeline, step_device_ns),
        step_device_ns=step_device_ns,
        gpu_activity_missing=missing,
        code=code,
        sm=sm,
    )


def _mfu_window(steps: Steps, timeline: Timeline, step_device_ns: int | None
                ) -> MfuWindow | None:
    """MFU's wall time: the steps' device-side time where the steps' GPU work is known
    (their ops' FLOPs count); else None, and the perf model takes the trace's GPU window."""
    if not step_device_ns or not timeline.devices:
        return None
    return MfuWindow("steps", step_device_ns, len(timeline.devices),
                     tuple((st.start_ns, st.start_ns + st.dur_ns) for st in steps.steps))


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


def _sm_occupancy(table: EventTable, gpu: Any, in_steps: np.ndarray | None, timeline: Timeline,
                  steps: Steps) -> SmOccupancy:
    """SM efficiency and occupancy over GPU busy's window: the steps' device-side time
    (as the TensorBoard plugin's), else each device's GPU window; and per step."""
    windows = {d.device: (d.window_start_ns, d.window_start_ns + d.window_ns)
               for d in timeline.devices}
    step_windows = tuple((st.number, st.device_start_ns, st.device_start_ns + st.device_dur_ns)
                         for st in steps.steps if st.device_dur_ns > 0) \
        if in_steps is not None else ()
    if step_windows:
        span = (step_windows[0][1], step_windows[-1][2])
        windows = {d: span for d in windows}
    return analyze_sm_occupancy(table, gpu, in_steps, windows, step_windows)


def _with_sources(sm: SmOccupancy, code: CodeView | None) -> SmOccupancy:
    """The kernels that idle the SMs with the user's line that launched most of their
    time, from the code view (traces recorded with stacks)."""
    if code is None or not sm.idle_kernels or not code.lines:
        return sm
    best: dict[str, tuple[int, str]] = {}
    for line in code.lines:
        for k in line.kernels:
            if k.name not in best or k.device_ns > best[k.name][0]:
                best[k.name] = (k.device_ns, line.site)
    if not best:
        return sm
    idle = tuple(msgspec.structs.replace(k, source=best[k.name][1]) if k.name in best else k
                 for k in sm.idle_kernels)
    return msgspec.structs.replace(sm, idle_kernels=idle)
