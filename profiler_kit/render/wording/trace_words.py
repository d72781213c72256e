"""The words of one trace's analysis that every format shares: figure values with their
units, the step split, the GPU's idle causes and launch queue, the critical path's title,
a recommendation's head and evidence, which window the figures cover (plain strings: the
console, Markdown and the HTML report each set them in their own form)."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.core.recommendation import Evidence, Recommendation
from profiler_kit.analysis.core.steps import STEP_PARTS, StepBreakdown
from profiler_kit.analysis.time.busy import DeviceTimeline
from profiler_kit.analysis.time.idle_causes import KIND_LABELS
from profiler_kit.analysis.time.unrecorded_activity import MissingGpuActivity
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.wording import rules, units
from profiler_kit.render.wording.names import short_name


def value(v: float | int | str | None, unit: str) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if unit == "ns":
        return units.duration(v)
    if unit == "bytes":
        return units.nbytes(v)
    if unit == "fraction":
        return units.percent(v)
    if unit == "count":
        return f"{int(v):,}"
    if unit == "FLOP/s":
        return units.decimal_rate(v, "FLOP")
    return units.significant(v, 6) if isinstance(v, float) else str(v)

def step_breakdown_line(b: StepBreakdown) -> str:
    """The steps' time split as the TensorBoard plugin's Overview, largest parts first."""
    parts = [(label, getattr(b, f"{key}_ns")) for key, label in STEP_PARTS]
    whole = sum(ns for _, ns in parts)
    shown = [f"{label} {units.percent(ns / whole)}" for label, ns in
             sorted(parts, key=lambda p: -p[1]) if ns > 0 and whole > 0]
    return "Step time: " + ", ".join(shown)

def trace_timeline_line(d: DeviceTimeline) -> str:
    return (f"gpu:{d.device} whole trace: busy {units.duration(d.busy_ns)} of "
            f"{units.duration(d.window_ns)} (idle {units.percent(d.idle_share)}), "
            f"exposed communication {units.duration(d.exposed_communication_ns)}")

IDLE_CAUSES_SHOWN = 5

def idle_cause_label(kind: str, name: str) -> str:
    """One idle cause as a reader names it."""
    if kind == "synchronization" and name:
        return f"sync {name}"
    if kind == "phase" and name:
        return f"range {short_name(name, 40)}"
    if kind in ("optimizer", "cpu_op") and name:
        return short_name(name, 40)
    return KIND_LABELS.get(kind, kind)

def idle_cause_lines(a: TraceAnalysis) -> list[str]:
    """Per GPU, what the launching CPU thread was doing while the GPU idled."""
    if a.idle is None:
        return []
    lines = []
    for d in a.idle.devices:
        if d.idle_ns <= 0:
            continue
        parts = [f"{idle_cause_label(c.kind, c.name)} {units.duration(c.ns)} "
                 f"({units.percent(c.ns / d.idle_ns)})" for c in d.causes[:IDLE_CAUSES_SHOWN]]
        more = len(d.causes) - IDLE_CAUSES_SHOWN
        if more > 0:
            parts.append(f"{more} more")
        line = f"gpu:{d.device} idle while the CPU was in: " + ", ".join(parts)
        if d.after_sync_gaps:
            line += (f"; {d.after_sync_gaps:,} gaps began in a synchronizing call "
                     f"({units.duration(d.after_sync_ns)} outside the DataLoader)")
        lines.append(line)
    return lines

def launch_lines(a: TraceAnalysis) -> list[str]:
    """Idle causes per stream and launch statistics (HTA's definitions), as lines."""
    la = a.launches
    if la is None or not la.streams:
        return []
    lines = [
        f"gpu:{d.device}: idle {units.duration(d.idle_ns)} = host wait "
        f"{units.duration(d.host_wait_ns)} + kernel wait {units.duration(d.kernel_wait_ns)} + "
        f"other {units.duration(d.other_wait_ns)}" for d in la.devices]
    for s in la.streams:
        lines.append(
            f"gpu:{s.device} stream {s.stream}: idle {units.duration(s.idle_ns)} = host wait "
            f"{units.duration(s.host_wait_ns)} + kernel wait {units.duration(s.kernel_wait_ns)}"
            f" + other {units.duration(s.other_wait_ns)}; queue up to {s.max_queue_length:,}")
    lines += idle_cause_lines(a)
    if la.launch_delay is not None and la.cpu_launch is not None:
        d, c = la.launch_delay, la.cpu_launch
        lines.append(
            f"launches: {la.launched:,} linked; launch delay median {units.duration(d.p50_ns)}"
            f", p90 {units.duration(d.p90_ns)}; launch call median {units.duration(c.p50_ns)}"
            f", p90 {units.duration(c.p90_ns)}")
    return lines

def precision_source(source: str) -> str:
    return {"input_type": "the ops' Input type", "kernel_name": "kernel names",
            "mixed": "the ops' Input type and kernel names"}.get(source, source)

def window_label(a: TraceAnalysis) -> str:
    """What the GPU figures of ``a`` cover, in words."""
    return ("steps: GPU work launched in the ProfilerStep# spans" if a.window == "steps"
            else "whole trace")

def critical_path_shares(a: TraceAnalysis) -> list[tuple[str, int, float | None]]:
    """(label, time, share of the path) for what bounds the critical path."""
    c = a.critical_path
    if c is None:
        return []
    parts = [("CPU work", c.cpu_ns), ("GPU compute", c.gpu_compute_ns),
             ("communication", c.communication_ns), ("launch delay", c.launch_ns),
             ("gaps between kernels", c.kernel_gap_ns)]
    return [(label, ns, ns / c.length_ns if c.length_ns else None)
            for label, ns in parts if ns]

def critical_path_title(a: TraceAnalysis) -> str:
    c = a.critical_path
    assert c is not None
    where = f"step {c.step}" if c.step is not None else "the whole trace"
    syncs = f", {c.syncs} GPU→CPU syncs" if c.syncs else ""
    return (f"Critical path of {where}: {units.duration(c.length_ns)} "
            f"({c.events:,} events{syncs})")

def _evidence(ev: Sequence[Evidence]) -> str:
    return "; ".join(
        f"{e.label}{' ' + short_name(e.name, 60) if e.name else ''} {value(e.value, e.unit)}"
        for e in ev
    )

def recommendation_lines(r: Recommendation) -> tuple[str, str]:
    """Headline (with measured vs threshold) and evidence line of one recommendation."""
    cmp = "<" if r.fires_when == "below" else "≥"
    head = (f"{rules.title(r)} [{r.scope}]: {value(r.measured, r.unit)} {cmp} "
            f"{value(r.threshold, r.unit)} ({r.rule})")
    return head, f"{rules.advice(r)} Evidence: {_evidence(r.evidence)}"

WHOLE_TRACE_NOTE = ("† no ProfilerStep# steps (or no GPU work linked to them): its figures, "
                    "step time included, cover the whole trace window")

# the columns of the summary of a comparison too wide for one table, in this order
SUMMARY_METRICS = ("step_median_ns", "step_gpu_busy_share", "gpu_idle_share", "gpu_busy_ns",
                   "exposed_communication_ns", "peak_allocated_bytes", "kernels")

def trace_groups(labels: Sequence[str], baseline: int, size: int) -> list[list[int]]:
    """The traces other than the baseline in groups of at most ``size``: a folder's traces
    (the label before its last ``/``) stay together where they fit."""
    folders: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        if i != baseline:
            folders.setdefault(label.rpartition("/")[0], []).append(i)
    groups: list[list[int]] = []
    for members in folders.values():
        for start in range(0, len(members), size):
            chunk = members[start:start + size]
            if groups and len(groups[-1]) + len(chunk) <= size:
                groups[-1].extend(chunk)
            else:
                groups.append(list(chunk))
    return groups


NAMED_LAUNCHES = 3  # launch call names named in the line, most frequent first


def missing_gpu_line(m: MissingGpuActivity) -> str:
    """The one line that names GPU work gone unrecorded, what shows it, and the likely
    cause (every format's, the first note)."""
    if m.launch_calls:
        named = ", ".join(m.launch_names[:NAMED_LAUNCHES])
        more = ", …" if len(m.launch_names) > NAMED_LAUNCHES else ""
        evidence = f"{m.launch_calls:,} launch calls ({named}{more})"
        cause = ("CUPTI dropped its activity buffer, or CUDA activity was not enabled: "
                 "activities=[ProfilerActivity.CUDA] missing")
    else:
        signs = [f"{what} {n:,}" for what, n in (
            ("runtime calls", m.runtime_calls), ("GPU memory events", m.device_memory_events),
            ("GPU-only ops", m.gpu_only_ops)) if n]
        evidence = "deviceProperties" + (f" ({', '.join(sorted(set(m.devices)))})"
                                         if m.devices else "") + ", " + ", ".join(signs)
        cause = ("CUDA activity was not recorded: activities=[ProfilerActivity.CUDA] "
                 "missing, or CUPTI dropped its buffer")
    return (f"GPU activity missing: {evidence} but no kernel, memcpy or memset (likely "
            f"cause: {cause}); GPU shares, % of peak, MFU, the GPU rules and the critical "
            f"path withheld: the CPU-side durations of asynchronous launches are not GPU "
            f"time")
