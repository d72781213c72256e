"""Charts drawn from trace analyses: profiled step times, time by hotspot class, one step's
timeline and memory over time. Any traces work, a run's or anyone's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.steps import STEP_PARTS
from profiler_kit.analysis.time.hotspots import Breakdown
from profiler_kit.analysis.time.idle_causes import KIND_LABELS, KINDS
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import (
    Chart,
    axis,
    byte_unit,
    class_color,
    ms,
    series_color,
    step_part_color,
    strategy_colors,
)
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name

TIME_BY_CLASS = "Where the time goes"
ONE_STEP = "One step"
MEMORY = "Memory"
STEPS = "Step time"


def name_of(a: TraceAnalysis) -> str:
    """A trace's name on a chart: its label, with a rank's file name (a worker name and
    a timestamp) shortened to the rank, as in ``ddp-w2 rank 1``."""
    folder, _, rest = a.label.rpartition("/")
    if a.rank is not None and folder and rest.startswith(("rank", "worker")):
        return f"{folder} rank {a.rank}"
    return a.label


def trace_colors(analyses: Sequence[TraceAnalysis]) -> dict[str, str]:
    """Each trace's colour by its path, where no run names the strategies: one apiece."""
    return strategy_colors(a.path for a in analyses)


def profiled_steps_chart(analyses: Sequence[TraceAnalysis],
                         colors: Mapping[str, str] | None = None) -> Chart | None:
    """Every profiled step of every trace and the median, on the side each trace leads with
    (device side on GPU traces, CPU side otherwise): for traces without a run.json.
    ``colors``: each trace's (its strategy's) colour by path, the report's."""
    with_steps = [a for a in analyses if a.steps.steps]
    if not with_steps:
        return None
    colors = colors or trace_colors(analyses)
    data: list[dict[str, Any]] = []
    sides = set()
    for a in with_steps:
        device = a.steps.headline == "device"
        sides.add("device" if device else "CPU")
        durations = [s.device_dur_ns if device else s.dur_ns for s in a.steps.steps]
        side = "device side" if device else "CPU side"
        data.append({
            "type": "scatter", "mode": "markers", "name": name_of(a), "legendgroup": name_of(a),
            "x": [name_of(a)] * len(durations), "y": [ms(d) for d in durations],
            "text": [f"ProfilerStep#{s.number} ({side})" for s in a.steps.steps],
            "marker": {"color": colors[a.path], "size": 8, "opacity": 0.7},
            "hovertemplate": "%{text}: %{y:.4g} ms<extra>%{x}</extra>",
        })
        data.append({
            "type": "scatter", "mode": "markers", "name": f"{name_of(a)} median",
            "legendgroup": name_of(a), "showlegend": False,
            "x": [name_of(a)], "y": [ms(a.steps.headline_median_ns)],
            "marker": {"symbol": "line-ew-open", "size": 40, "color": colors[a.path],
                       "line": {"width": 3}},
            "hovertemplate": f"median ({side}) %{{y:.4g}} ms<extra>%{{x}}</extra>",
        })
    which = {"device": "device side (from the end of the previous step on the device to the "
                       "end of the last GPU activity the step launched)",
             "CPU": "CPU side (the ProfilerStep# span)"}
    return Chart(
        id="profiled-steps", section=STEPS, title="Profiled step times",
        caption="Each point is one profiled step, the bar the median; "
                + " or ".join(which[s] for s in sorted(sides, reverse=True)) + ".",
        data=data, layout={"yaxis": axis("step time (ms)", rangemode="tozero"),
                           "xaxis": axis("")},
    )


def step_breakdown_chart(analyses: Sequence[TraceAnalysis]) -> Chart | None:
    """The profiled steps split as the TensorBoard plugin's Overview, stacked per trace."""
    rows = [(name_of(a), a.steps.breakdown) for a in analyses if a.steps.breakdown is not None]
    if not rows:
        return None
    data = []
    for field, label in STEP_PARTS:
        values = [getattr(bd, f"{field}_ns") for _, bd in rows]
        if not any(values):
            continue
        data.append({
            "type": "bar", "name": label, "x": [name for name, _ in rows],
            "y": [ms(v) for v in values], "marker": {"color": step_part_color(field)},
            "hovertemplate": f"{label}: %{{y:.4g}} ms<extra>%{{x}}</extra>",
        })
    return Chart(
        id="step-breakdown", section=TIME_BY_CLASS, title="What the profiled steps spent",
        caption="The profiled steps' time, all steps together, split as TensorBoard's "
                "Overview splits it: each part is the time covered by that kind of activity "
                "and by none listed before it, so the parts add up to the steps.",
        data=data, layout={"barmode": "stack", "yaxis": axis("time (ms)"), "xaxis": axis("")},
    )


def idle_causes_chart(analyses: Sequence[TraceAnalysis]) -> Chart | None:
    """GPU idle time by what the launching CPU thread was doing, stacked per trace."""
    rows = [(name_of(a), a.idle) for a in analyses
            if a.idle is not None and any(d.idle_ns for d in a.idle.devices)]
    if not rows:
        return None
    data = []
    for j, kind in enumerate(KINDS):
        values = [idle.kind_ns(kind) for _, idle in rows]
        if not any(values):
            continue
        tops = [", ".join(f"{short_name(c.name, 40)} {units.duration(c.ns)}"
                          for d in idle.devices for c in d.causes if c.kind == kind and c.name)
                for _, idle in rows]
        data.append({
            "type": "bar", "name": KIND_LABELS[kind], "x": [name for name, _ in rows],
            "y": [ms(v) for v in values], "customdata": [[t[:200] or "-"] for t in tops],
            "marker": {"color": series_color(j)},
            "hovertemplate": f"{KIND_LABELS[kind]}: %{{y:.4g}} ms (%{{customdata[0]}})"
                             "<extra>%{x}</extra>",
        })
    return Chart(
        id="idle-causes", section=TIME_BY_CLASS, title="Why the GPU idled",
        caption="GPU idle time between its work (summed over GPUs), by what the CPU thread "
                "that launched the next work was doing meanwhile: the DataLoader, a call "
                "waiting for the GPU, the optimizer, ops, record_function ranges or Python; "
                "already queued is time after the launch call (launch latency, waits on "
                "events or other streams).",
        data=data, layout={"barmode": "stack", "yaxis": axis("idle (ms)"), "xaxis": axis("")},
    )


def class_breakdown_chart(analyses: Sequence[TraceAnalysis], which: str) -> Chart | None:
    """Stacked bars of time per hotspot class; ``which`` is "gpu" or "cpu" (self time)."""
    if which == "gpu":
        rows = [(name_of(a), a.gpu) for a in analyses if a.has_gpu]
        title, what = "GPU time by class", "GPU activity time (kernels, memcpy, memset)"
    else:
        rows = [(name_of(a), a.cpu) for a in analyses if a.cpu.count]
        title, what = "CPU self time by class", "CPU op self time"
    if not rows:
        return None
    data = []
    for klass in classify.CLASSES:
        if not any(_class_total(bd, klass) for _, bd in rows):
            continue
        totals = [_class_total(bd, klass) for _, bd in rows]
        data.append({
            "type": "bar", "name": klass, "x": [label for label, _ in rows],
            "y": [ms(t.total_ns) if t else 0 for t in totals],
            "customdata": [[units.percent(t.share) if t else "-", t.count if t else 0]
                           for t in totals],
            "marker": {"color": class_color(klass)},
            "hovertemplate": f"{klass}: %{{y:.4g}} ms (%{{customdata[0]}} of the total, "
                             "%{customdata[1]} events)<extra>%{x}</extra>",
        })
    return Chart(
        id=f"{which}-classes", section=TIME_BY_CLASS, title=title,
        caption=f"{what} per hotspot class, summed over the whole trace, stacked per "
                f"{'strategy' if len(rows) > 1 else 'trace'}; click a class to hide it.",
        data=data,
        layout={"barmode": "stack", "yaxis": axis("time (ms)"), "xaxis": axis("")},
    )


def _class_total(bd: Breakdown, klass: str):
    return next((c for c in bd.classes if c.klass == klass), None)


def timeline_charts(analyses: Sequence[TraceAnalysis]) -> list[Chart]:
    """One mini trace view per strategy folder (its ranks' lanes together), else per trace."""
    charts = []
    for group in _by_folder(analyses):
        ranked = len(group) > 1 and all(a.rank is not None for a in group)
        for members in ([group] if ranked else [[a] for a in group]):
            label = _folder_label(group) if ranked else members[0].label
            charts.append(_timeline_chart(f"timeline-{len(charts)}", label, members, ranked))
    return charts


def _by_folder(analyses: Sequence[TraceAnalysis]) -> list[list[TraceAnalysis]]:
    groups: dict[Path, list[TraceAnalysis]] = {}
    for a in analyses:
        groups.setdefault(Path(a.path).parent, []).append(a)
    return list(groups.values())


def _folder_label(group: Sequence[TraceAnalysis]) -> str:
    label = group[0].label
    return label.rsplit("/", 1)[0] if "/" in label else Path(group[0].path).parent.name


def _timeline_chart(chart_id: str, label: str, members: Sequence[TraceAnalysis],
                    ranked: bool) -> Chart:
    lanes: list[dict[str, Any]] = []
    name_index: dict[str, int] = {}
    cols: dict[str, list[int]] = {"row": [], "offset_ns": [], "dur_ns": [], "name": [],
                                  "klass": []}
    rows_used = 0
    steps_text = []
    shown = total = 0
    for a in sorted(members, key=lambda m: (m.rank if m.rank is not None else -1)):
        st = a.step_timeline
        prefix = f"rank {a.rank} · " if ranked else ""
        lane_row = []
        for lane in st.lanes:
            lane_row.append(rows_used)
            lanes.append({"label": prefix + lane.label, "row": rows_used, "rows": lane.rows,
                          "kind": lane.kind})
            rows_used += lane.rows
        local = [name_index.setdefault(n, len(name_index)) for n in st.names]
        cols["row"] += [lane_row[ln] + d for ln, d in zip(st.lane, st.depth, strict=True)]
        cols["offset_ns"] += list(st.offset_ns)
        cols["dur_ns"] += list(st.dur_ns)
        cols["name"] += [local[i] for i in st.name]
        cols["klass"] += list(st.klass)
        shown += len(st.lane)
        total += st.intervals_total
        which = f"ProfilerStep#{st.step}" if st.step is not None else "the whole trace"
        steps_text.append(f"{prefix}{which} ({units.duration(st.step_dur_ns)})")
    names = list(name_index)
    first = members[0].step_timeline
    note = ""
    if shown < total:
        note = (f"Downsampled: the {shown:,} longest of {total:,} intervals are drawn "
                f"(at most {first.max_intervals:,} per trace).")
    return Chart(
        id=chart_id, section=ONE_STEP, title=f"One step of {label}",
        caption=f"{', '.join(steps_text)}, the step nearest the median: CPU ops by thread "
                "(nested ops one row down) above the GPU streams' kernels, coloured by class; "
                "drag to zoom, double-click to reset.",
        note=note, kind="timeline",
        timeline={"classes": list(first.classes),
                  "colors": [class_color(c) for c in first.classes],
                  "lanes": lanes, "rows": rows_used, "names": names, **cols},
        layout={"xaxis": axis("ms from the step's start"), "yaxis": {"automargin": True}},
    )


def memory_charts(analyses: Sequence[TraceAnalysis],
                  colors: Mapping[str, str] | None = None) -> list[Chart]:
    """One chart per device: allocated (solid) and, where the trace records it, reserved
    (dashed) per trace in its colour (``colors``, by path), peaks marked."""
    colors = colors or trace_colors(analyses)
    devices: dict[str, list[tuple[TraceAnalysis, Any]]] = {}
    for a in analyses:
        for series in a.memory_timeline.devices:
            devices.setdefault(series.device, []).append((a, series))
    charts = []
    for device, entries in devices.items():
        data: list[dict[str, Any]] = []
        thinned = []
        unit, size = byte_unit(max(max((s.peak_allocated_bytes, *s.reserved_bytes))
                                   for _, s in entries))
        for a, s in entries:
            color = colors[a.path]
            data.append({
                "type": "scatter", "mode": "lines",
                "name": f"{name_of(a)} allocated (peak {units.nbytes(s.peak_allocated_bytes)})",
                "legendgroup": name_of(a), "x": [ms(t) for t in s.ts_ns],
                "y": [b / size for b in s.allocated_bytes],
                "line": {"color": color, "width": 2, "shape": "hv"},
                "hovertemplate": f"%{{y:.4g}} {unit} allocated at %{{x:.4g}} ms<extra>"
                                 f"{name_of(a)}</extra>",
            })
            if s.reserved_bytes:
                data.append({
                    "type": "scatter", "mode": "lines", "name": f"{name_of(a)} reserved",
                    "legendgroup": name_of(a), "x": [ms(t) for t in s.ts_ns],
                    "y": [b / size for b in s.reserved_bytes],
                    "line": {"color": color, "width": 1.5, "dash": "dash", "shape": "hv"},
                    "hovertemplate": f"%{{y:.4g}} {unit} reserved at %{{x:.4g}} ms<extra>"
                                     f"{name_of(a)}</extra>",
                })
            data.append({
                "type": "scatter", "mode": "markers+text" if len(entries) == 1 else "markers",
                "name": f"{name_of(a)} peak",
                "legendgroup": name_of(a), "showlegend": False,
                "x": [ms(s.peak_ts_ns)], "y": [s.peak_allocated_bytes / size],
                "text": [f"peak {units.nbytes(s.peak_allocated_bytes)}"],
                "textposition": "top center",
                "marker": {"color": color, "size": 10, "symbol": "triangle-down"},
                "hovertemplate": "%{text} at %{x:.4g} ms<extra>" f"{name_of(a)}</extra>",
            })
            if s.downsampled:
                thinned.append(f"{name_of(a)}: {len(s.ts_ns):,} of {s.events:,} events drawn")
        charts.append(Chart(
            id=f"memory-{len(charts)}", section=MEMORY, title=f"Memory over time on {device}",
            caption=f"{_memory_drawn(entries)} on {device} after each allocation and free of "
                    "the profiled steps, from the trace's [memory] events; the triangle "
                    "marks the peak.",
            note=("Thinned, keeping each run's lowest and highest point and the peak: "
                  + "; ".join(thinned) + ".") if thinned else "",
            data=data,
            layout={"xaxis": axis("ms from the trace's start"),
                    "yaxis": axis(unit, rangemode="tozero")},
        ))
    return charts


def _memory_drawn(entries: Sequence[tuple[TraceAnalysis, Any]]) -> str:
    """What the lines are: reserved bytes are named only where a trace records them (the
    CPU has no caching allocator, so its traces have none), and then for which traces."""
    reserved = [name_of(a) for a, s in entries if s.reserved_bytes]
    if not reserved:
        return "Bytes allocated (the traces record no reserved bytes here)"
    if len(reserved) == len(entries):
        return "Bytes allocated (solid) and reserved by the caching allocator (dashed)"
    return ("Bytes allocated (solid) and reserved by the caching allocator (dashed, "
            f"recorded for {', '.join(reserved)} only)")
