"""JSON for ``profkit analyze --json``: schema ``profkit.analysis/3`` (see docs/analysis-json.md).

The document is the analyses' own fields, raw units (ns, bytes, fractions), with
``klass`` spelled ``class``. Fields are only ever added within one schema version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:  # the job view's module is needed only when there is a job
    from profiler_kit.analysis.compare import Comparison
    from profiler_kit.analysis.jobs.job_view import JobView
    from profiler_kit.analysis.time.busy import Timeline
    from profiler_kit.analysis.time.launches import Launches
    from profiler_kit.analysis.trace_analysis import TraceAnalysis
    from profiler_kit.trace.source import Unreadable

SCHEMA = "profkit.analysis/3"


def _plain(value: Any) -> Any:
    """Plain JSON data: Structs as dicts (``klass`` fields are named ``class``), tuples as
    lists. NaN stays a float, which the JSON encoder writes as ``null``."""
    return msgspec.to_builtins(value, str_keys=True)


# The fields of ``TraceAnalysis`` written below, each with the keys of the trace object
# that hold it (none: ``names`` is read by the comparison only). Every other field, an
# analysis registered without a formatter here, is written as it is, under its own name,
# after these.
FIELD_KEYS: dict[str, tuple[str, ...]] = {
    "path": ("path",), "label": ("label",), "rank": ("rank",), "world_size": ("world_size",),
    "devices": ("devices",), "events": ("events",), "skipped": ("skipped",),
    "normalized": ("normalized",), "gpu": ("gpu_hotspots",),
    "gpu_by_device": ("gpu_hotspots_by_device",), "cpu": ("cpu_hotspots",),
    "kernels": ("kernels",), "attribution": ("attribution",), "timeline": ("timeline",),
    "steps": ("steps",), "precision": ("precision",), "perf": ("perf",),
    "memory": ("memory",), "phases": ("phases",), "recommendations": ("recommendations",),
    "notes": ("notes",), "memory_timeline": ("memory_timeline",),
    "step_timeline": ("step_timeline",), "names": (), "step_terms": ("step_terms",),
    "critical_path": ("critical_path",), "communication": ("communication",),
    "window": ("window",), "trace_gpu": ("trace",), "trace_timeline": ("trace",),
    "trace_phases": ("trace",), "launches": ("launches",), "trace_launches": ("trace",),
    "idle": ("idle_attribution",), "step_gpu_busy_share": ("step_gpu_busy_share",),
    "step_device_ns": ("step_device_ns",), "gpu_activity_missing": ("gpu_activity_missing",),
    "code": ("modules", "module_steps", "backward_links", "module_coverage", "source_lines",
             "compiled_kernels", "graph_replays"),
    "sm": ("sm_occupancy",),
}


def trace_document(a: TraceAnalysis) -> dict[str, Any]:
    """One trace's analysis as plain JSON data."""
    tl = a.timeline
    return {
        "label": a.label,
        "path": a.path,
        "rank": a.rank,
        "world_size": a.world_size,
        "devices": _plain(a.devices),
        "events": a.events,
        "skipped": dict(a.skipped),
        "normalized": dict(a.normalized),
        "steps": _plain(a.steps),
        "step_gpu_busy_share": a.step_gpu_busy_share,
        "step_device_ns": a.step_device_ns,
        "gpu_activity_missing": _plain(a.gpu_activity_missing),
        "gpu_hotspots": _plain(a.gpu),
        "gpu_hotspots_by_device": [
            {"device": dev, **_plain(bd)} for dev, bd in a.gpu_by_device
        ],
        "cpu_hotspots": _plain(a.cpu),
        "kernels": _plain(a.kernels),
        "attribution": _plain(a.attribution),
        "timeline": _with_sm(_timeline(tl), a),
        "precision": {
            **_plain(a.precision),
            "fp32_simt_top": [{"name": n, "total_ns": ns} for n, ns in a.precision.fp32_simt_top],
            "gemm_fp32_simt_top": [{"name": n, "total_ns": ns}
                                   for n, ns in a.precision.gemm_fp32_simt_top],
            "low_precision_share": a.precision.low_precision_share,
            "tensor_core_share": a.precision.tensor_core_share,
        },
        "perf": _plain(a.perf),
        "memory": _plain(a.memory),
        "memory_timeline": _plain(a.memory_timeline),
        "step_timeline": {**_plain(a.step_timeline), "downsampled": a.step_timeline.downsampled},
        "phases": _plain(a.phases.phases),
        "window": a.window,
        "launches": _launches(a.launches),
        "idle_attribution": _plain(a.idle),
        "trace": {
            "gpu_hotspots": _plain(a.trace_gpu),
            "timeline": _timeline(a.trace_timeline),
            "phases": _plain(a.trace_phases.phases) if a.trace_phases else [],
            "launches": _launches(a.trace_launches),
        },
        "step_terms": _plain(a.step_terms),
        "critical_path": _plain(a.critical_path),
        "recommendations": _plain(a.recommendations),
        "notes": list(a.notes),
        "communication": _communication(a),
        **_code(a),
        **_sm(a),
        **{name: _plain(getattr(a, name)) for name in a.__struct_fields__
           if name not in FIELD_KEYS},
    }


def _code(a: TraceAnalysis) -> dict[str, Any]:
    """The code view's keys, only where the trace has what they describe (so traces
    without module events, stacks, compiled kernels or graph replays keep their document)."""
    c = a.code
    if c is None:
        return {}
    out: dict[str, Any] = {}
    if c.modules:
        out["modules"] = _plain(c.modules)
        out["module_steps"] = c.steps
        out["backward_links"] = {"backward_ops": c.backward_ops, "linked": c.backward_linked}
        out["module_coverage"] = _plain(c.coverage)
    if c.lines:
        out["source_lines"] = _plain(c.lines)
    if c.compiled:
        out["compiled_kernels"] = _plain(c.compiled)
    if c.graph_replays is not None:
        out["graph_replays"] = _plain(c.graph_replays)
    return out


def _with_sm(timeline: dict[str, Any] | None, a: TraceAnalysis) -> dict[str, Any] | None:
    """Each device's SM efficiency and achieved occupancy beside its busy time, where the
    trace records them (the keys are left out, never 0, where it does not)."""
    sm = a.sm
    if timeline is None or sm is None or not sm.available:
        return timeline
    by_device = {d.device: d for d in sm.devices}
    for d in timeline["devices"]:
        f = by_device.get(d["device"])
        if f is not None:
            d["sm_efficiency"] = f.sm_efficiency
            d["achieved_occupancy"] = f.achieved_occupancy
    return timeline


def _sm(a: TraceAnalysis) -> dict[str, Any]:
    """SM efficiency and occupancy in full (per step, per kernel, over time), for traces
    with GPU kernels."""
    sm = a.sm
    if sm is None or (not sm.available and sm.note is None):
        return {}
    return {"sm_occupancy": _plain(sm)}


def _timeline(tl: Timeline | None) -> dict[str, Any] | None:
    if tl is None:
        return None
    return {**_plain(tl), "busy_ns": tl.busy_ns, "window_ns": tl.window_ns,
            "idle_share": tl.idle_share}


def _launches(launches: Launches | None) -> dict[str, Any] | None:
    if launches is None:
        return None
    return {**_plain(launches), "idle_ns": launches.idle_ns,
            "host_wait_share": launches.host_wait_share}


def _communication(a: TraceAnalysis) -> dict[str, Any] | None:
    """What the trace alone says of its communication (its calls are in the summaries
    that ``--summary-only`` writes)."""
    c = a.communication
    if c is None:
        return None
    return {
        "on_device": c.on_device,
        "calls": len(c.calls),
        "exposed_ns": c.exposed_ns,
        "kinds": _plain(c.kinds),
        "groups": _plain(c.groups),
    }


def document(analyses: Sequence[TraceAnalysis], comparison: Comparison | None,
             jobs: Sequence[JobView] = (), unreadable: Sequence[Unreadable] = (),
             memory: Any = None) -> dict[str, Any]:
    """The whole ``profkit analyze``/``compare`` result; ``unreadable`` lists the traces
    left out, each with the reason; ``memory`` the memory report of the same paths from
    their categories and snapshots (the console's memory section), or None."""
    comp = None
    if comparison is not None:
        from profiler_kit.render.wording.diff_views import verdict_line  # a comparison's

        comp = {
            "labels": list(comparison.labels),
            "windows": list(comparison.windows),
            "baseline": comparison.labels[comparison.baseline],
            "metrics": [
                {**_plain(m), "best": comparison.labels[m.best] if m.best is not None else None}
                for m in comparison.metrics
            ],
            "ops": _plain(comparison.ops),
            "steps": None if comparison.steps is None else {
                "baseline": comparison.labels[comparison.steps.baseline],
                "side": comparison.steps.side,
                "waterfalls": [
                    None if w is None else {**_plain(w), "verdict": verdict_line(w)}
                    for w in comparison.steps.waterfalls
                ],
            },
            "verdicts": [verdict_line(w) for w in (comparison.steps.waterfalls
                                                   if comparison.steps else ()) if w],
            "unpaired": list(comparison.unpaired),
            "predictions": [_plain(p) for p in comparison.predictions],
        }
    return {
        "schema": SCHEMA,
        "traces": [trace_document(a) for a in analyses],
        "comparison": comp,
        "jobs": [_plain(j) for j in jobs],
        "unreadable": [{"path": u.path, "reason": u.reason} for u in unreadable],
        "memory_explained": None if memory is None else msgspec.to_builtins(memory),
    }


def dumps(analyses: Sequence[TraceAnalysis], comparison: Comparison | None,
          jobs: Sequence[JobView] = (), unreadable: Sequence[Unreadable] = (),
          memory: Any = None) -> str:
    # same text as json.dumps(..., indent=1), ten times faster
    doc = document(analyses, comparison, jobs, unreadable, memory)
    return msgspec.json.format(msgspec.json.encode(doc),
                               indent=1).decode() + "\n"
