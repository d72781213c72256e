"""One trace, fully analyzed: :func:`analyze_table` bundles every analysis into a ``TraceAnalysis``.

This is what ``profkit analyze``, ``profkit compare`` and ``profkit run``'s summary
read. It holds raw numbers only (ns, bytes, fractions); renderers format them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from profiler_kit.analysis.arrays import distinct
from profiler_kit.analysis.attribution import attribute_gpu
from profiler_kit.analysis.collectives import RankSummary, summarize_rank
from profiler_kit.analysis.hotspots import (
    Breakdown,
    NameTotal,
    cpu_breakdown,
    gpu_breakdown,
    kernel_table,
)
from profiler_kit.analysis.memory import Memory, analyze_memory
from profiler_kit.analysis.memory_timeline import MemoryTimeline, memory_timeline
from profiler_kit.analysis.nesting import build_op_tree
from profiler_kit.analysis.perf_rules import perf_recommendations
from profiler_kit.analysis.phases import Phases, analyze_phases
from profiler_kit.analysis.precision import Precision, analyze_precision
from profiler_kit.analysis.recommend import Recommendation, recommend
from profiler_kit.analysis.roofline import PerfModel, measure
from profiler_kit.analysis.step_timeline import StepTimeline, step_timeline
from profiler_kit.analysis.steps import Steps, analyze_steps
from profiler_kit.analysis.timeline import Timeline, analyze_timeline
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
    # the rank's collectives and steps, for the job view across ranks (None: not computed)
    communication: RankSummary | None = None

    @property
    def has_gpu(self) -> bool:
        return self.gpu.count > 0


def analyze_table(table: EventTable, label: str | None = None, top: int = 5) -> TraceAnalysis:
    """Run every analysis on one event table."""
    tree = build_op_tree(table)
    gpu = attribute_gpu(table, tree)
    gpu_bd = gpu_breakdown(table, gpu, top=top)
    devices = distinct(table.device[gpu.row])
    by_device: tuple[tuple[int, Breakdown], ...] = ()
    if len(devices) > 1:
        by_device = tuple(
            (int(d), gpu_breakdown(table, gpu, table.device[gpu.row] == d, top=top))
            for d in devices.tolist()
        )
    timeline = analyze_timeline(table, gpu)
    steps = analyze_steps(table, gpu)
    precision = analyze_precision(table, gpu, top=top)
    memory = analyze_memory(table, tree, top=max(top, 10))
    phases = analyze_phases(table, steps.end_ns - steps.start_ns)
    findings = recommend(table, tree, gpu, gpu_bd, timeline, steps, precision, memory)
    perf, instances = measure(table, tree, gpu)
    meta = table.meta
    notes = list(findings.notes)
    if steps.source == "window":
        notes.insert(0, "no ProfilerStep# spans: step figures describe the whole trace window")
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
            table, tree, gpu_bd, perf, instances),
        notes=tuple(notes),
        memory_timeline=memory_timeline(table),
        step_timeline=step_timeline(table, tree, gpu, steps),
        communication=summarize_rank(table, label=label or meta.trace_name, steps=steps),
    )


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
