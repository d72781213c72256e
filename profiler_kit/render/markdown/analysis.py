"""Markdown report for ``profkit analyze --markdown``. Formats, never computes."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.memory.allocated import IN_TRACE_ONLY
from profiler_kit.analysis.time.hotspots import Breakdown
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.wording import perf_tables, units
from profiler_kit.render.wording.diff_views import (
    delta_cell,
    per_step_cell,
    signed_duration,
    verdict_lines,
)
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.recommendation_gain import gain_line
from profiler_kit.render.wording.sm_figures import class_figures, limiter_text, sm_line
from profiler_kit.render.wording.trace_words import (
    SUMMARY_METRICS,
    WHOLE_TRACE_NOTE,
    critical_path_shares,
    critical_path_title,
    launch_lines,
    precision_source,
    recommendation_lines,
    step_breakdown_line,
    trace_groups,
    trace_timeline_line,
    value,
    window_label,
)
from profiler_kit.trace.source import Unreadable


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def _breakdown(title: str, bd: Breakdown, what: str,
               sm: dict[str, tuple[str, str]] | None = None) -> list[str]:
    rows = [
        [c.klass, f"{c.count:,}", units.duration(c.total_ns), units.percent(c.share),
         *(sm.get(c.klass, ("-", "-")) if sm is not None else ()),
         "; ".join(f"`{short_name(n.name, 60)}` {units.duration(n.total_ns)}" for n in c.top[:3])]
        for c in bd.classes
    ]
    figures = ["SM eff.", "occ."] if sm is not None else []
    return [f"### {title}", ""] + _table(["class", "count", "time", "share", *figures,
                                          f"top {what}"], rows)


def _sm(a: TraceAnalysis) -> list[str]:
    """SM efficiency and achieved occupancy per GPU (or the note why not), as the console's
    line under GPU busy."""
    line = sm_line(a.sm)
    return [line + ".", ""] if line else []


def _idle_kernels(a: TraceAnalysis) -> list[str]:
    """The kernels that leave most SMs idle while the GPU reads busy, with their launch."""
    sm = a.sm
    if sm is None or not sm.available or not sm.idle_kernels:
        return []
    out = ["SMs left idle while busy (time × (1 − SM efficiency)):", ""]
    for k in sm.idle_kernels:
        config = f"; grid {k.grid_blocks:,} × {k.block_threads}" \
            if k.grid_blocks is not None and k.block_threads is not None else ""
        launch = ", ".join(f"`{x}`" for x in (k.op, k.source) if x)
        out.append(f"- {units.duration(k.idle_sm_ns)} `{short_name(k.name, 80)}` (SM eff. "
                   f"{units.percent(k.sm_efficiency)}, {limiter_text(k)}{config})"
                   + (f", launched by {launch}" if launch else ""))
    return out + [""]


def trace_section(a: TraceAnalysis, top: int = 10) -> list[str]:
    out = [f"## {a.label}", "", f"`{a.path}` — {a.events:,} events"
           + (f", rank {a.rank}" if a.rank is not None else ""), ""]
    if a.gpu_activity_missing is not None:
        out += [f"**{a.gpu_activity_missing.line}.**", ""]
    for what, counts in (("skipped", a.skipped), ("kept after a fix", a.normalized)):
        if counts:
            detail = ", ".join(f"{reason}: {n:,}" for reason, n in sorted(counts.items()))
            out += [f"Events {what}: {sum(counts.values()):,} ({detail}).", ""]
    s = a.steps
    if s.source == "window":
        out += [f"No `ProfilerStep#` spans: whole trace window {units.duration(s.median_ns)}.", ""]
    else:
        h = s.headline_stats
        side = "device-side" if s.headline == "device" else "CPU-side"
        cpu = f"; CPU-side median {units.duration(s.median_ns)}" if s.headline == "device" else ""
        out += [f"Steps: {s.count}, {side} median {units.duration(h.median_ns)} (min "
                f"{units.duration(h.min_ns)}, max {units.duration(h.max_ns)}){cpu}.", ""]
        if s.breakdown is not None:
            out += [step_breakdown_line(s.breakdown) + ".", ""]
    if a.timeline.devices:
        rows = [[f"gpu:{d.device}", units.duration(d.window_ns), units.duration(d.busy_ns),
                 units.percent(d.idle_share), units.duration(d.multi_stream_ns),
                 units.duration(d.communication_busy_ns),
                 units.duration(d.exposed_communication_ns)] for d in a.timeline.devices]
        out += [f"### GPU timeline ({window_label(a)})", ""] + _table(
            ["device", "window", "busy", "idle", "2+ streams", "comm.", "comm. exposed"], rows)
        if a.window == "steps" and a.trace_timeline is not None:
            out += [trace_timeline_line(d) + "." for d in a.trace_timeline.devices] + [""]
    out += _sm(a)
    lines = launch_lines(a)
    if lines:
        out += [f"### GPU idle causes and kernel launches ({window_label(a)})", ""]
        out += [f"- {line}" for line in lines] + [""]
    if a.has_gpu:
        out += _breakdown(f"GPU time by class ({window_label(a)})", a.gpu, "kernels",
                          class_figures(a.sm))
        rows = [[f"`{short_name(k.name)}`", k.klass, f"{k.count:,}", units.duration(k.total_ns)]
                for k in a.kernels[:top]]
        out += ["### Top GPU kernels", ""] + _table(["kernel", "class", "count", "total"], rows)
        out += _idle_kernels(a)
    if a.cpu.count:
        out += _breakdown("CPU ops by self time", a.cpu, "ops")
    c = a.critical_path
    if c is not None and c.length_ns:
        rows = [[f"**{label}**", "", "", units.duration(ns), units.percent(share)]
                for label, ns, share in critical_path_shares(a)]
        rows += [[f"`{short_name(e.name, 60)}`", e.category, f"{e.count:,}",
                  units.duration(e.ns), units.percent(e.ns / c.length_ns)]
                 for e in c.entries[:top]]
        out += [f"### {critical_path_title(a)}", ""] + _table(
            ["on the path", "kind", "count", "time", "share"], rows)
    p = a.precision
    if p.eligible_ns:
        out += [f"Precision: GEMM + convolution {units.duration(p.eligible_ns)}; fp16/bf16/fp8 "
                f"{units.percent(p.low_precision_share)}, tensor/matrix cores "
                f"{units.percent(p.tensor_core_share)} (data types from "
                f"{precision_source(p.source)}).", ""]
    out += ["### Perf model", ""] + [line + "  " for line in perf_tables.summary_lines(a.perf)]
    out.append("")
    if a.perf.families:
        out += _table(perf_tables.family_header(a.perf), perf_tables.family_rows(a.perf))
    if a.perf.groups:
        rows = [(f"`{r[0]}`", *r[1:]) for r in perf_tables.group_rows(a.perf, top)]
        out += ["#### Ops by input shape (largest total first)", ""] + _table(
            perf_tables.group_header(a.perf), rows)
    m = a.memory
    if not m.recorded:
        out += ["Memory: not recorded.", ""]
    else:
        rows = [[d.device, units.nbytes(d.peak_allocated_bytes),
                 units.nbytes(d.peak_reserved_bytes), units.nbytes(d.capacity_bytes)]
                for d in m.devices]
        out += ["### Memory", ""] + _table(["device", "peak allocated", "peak reserved",
                                            "capacity"], rows)
        in_trace = [d.device for d in m.devices if not d.counts_before_trace]
        if in_trace:
            out += [f"Peak allocated on {', '.join(in_trace)}: {IN_TRACE_ONLY}.", ""]
        if m.top_ops:
            out += ["Allocated most: " + ", ".join(
                f"`{o.name}` {units.nbytes(o.allocated_bytes)}" for o in m.top_ops[:5]), ""]
    if a.phases.phases:
        rows = [[f"`{ph.name}`", f"{ph.count:,}", units.duration(ph.cpu_total_ns),
                 units.percent(ph.share_of_window),
                 units.duration(ph.gpu_total_ns) if ph.gpu_total_ns else "-",
                 units.percent(ph.gpu_share_of_window) if ph.gpu_total_ns else "-"]
                for ph in a.phases.phases[:top]]
        out += [f"### Phases ({window_label(a)})", ""] + _table(
            ["annotation", "count", "CPU time", "of window", "GPU work", "of GPU window"], rows)
        out += ["CPU time: union of the spans; GPU work: busy time of the GPU activities "
                "launched inside them.", ""]
    out += ["### Recommendations", ""]
    if not a.recommendations:
        out.append("None fired.")
    for r in a.recommendations:
        head, body = recommendation_lines(r)
        gain = gain_line(r)
        out.append(f"- **{head}**  \n  " + (f"_{gain}_  \n  " if gain else "") + body)
    shown = a.gpu_activity_missing.line if a.gpu_activity_missing is not None else None
    out += [f"- _note: {n}_" for n in a.notes if n != shown] + [""]
    return out


# traces side by side in one Markdown table; with more, a summary row per trace comes
# first and the full tables follow per group of traces (the baseline in each)
MAX_COLUMNS = 8


def _groups(c: Comparison) -> list[tuple[int, ...]]:
    """The traces of each side-by-side table: all of them when they fit, else the baseline
    with each group of a folder's traces."""
    if len(c.labels) <= MAX_COLUMNS:
        return [tuple(range(len(c.labels)))]
    return [(c.baseline, *g) for g in trace_groups(c.labels, c.baseline, MAX_COLUMNS - 1)]


def _metric_cell(c: Comparison, m, i: int) -> str:
    text = value(m.values[i], m.unit)
    if i != c.baseline and m.deltas[i] is not None:
        text += f" ({units.signed_percent(m.deltas[i])})"
    return f"**{text}**" if m.best == i else text


def _trace_name(c: Comparison, i: int, whole: set[int]) -> str:
    return (c.labels[i] + (" †" if i in whole else "")
            + (" (baseline)" if i == c.baseline else ""))


def comparison_section(c: Comparison) -> list[str]:
    whole = {i for i, w in enumerate(c.windows) if w == "trace"}
    out = ["## Comparison", "", "Best value in bold.", ""]
    groups = _groups(c)
    if len(groups) > 1:
        by_key = {m.key: m for m in c.metrics}
        shown = [by_key[k] for k in SUMMARY_METRICS
                 if k in by_key and any(v is not None for v in by_key[k].values)]
        rows = [[_trace_name(c, i, whole), *(_metric_cell(c, m, i) for m in shown)]
                for i in range(len(c.labels))]
        out += [f"{len(c.labels)} traces: one row each, then every metric per group of "
                "traces.", ""] + _table(["trace", *(m.label for m in shown)], rows)
    for group in groups:
        header = ["metric"] + [_trace_name(c, i, whole) for i in group]
        rows = [[m.label, *(_metric_cell(c, m, i) for i in group)] for m in c.metrics]
        out += _table(header, rows)
    return out + ([WHOLE_TRACE_NOTE + ".", ""] if whole else [])


def diff_sections(c: Comparison, top: int) -> list[str]:
    """Verdicts, waterfalls and the op/kernel differences as Markdown lines."""
    out: list[str] = []
    lines = verdict_lines(c)
    if lines:
        out += ["## Verdict", ""] + [f"- {line}" for line in lines] + [""]
    if c.steps is not None:
        base = c.labels[c.baseline]
        for w in c.steps.waterfalls:
            if w is None:
                continue
            rows = [[x.name if x.name != "overlap" else "overlap (−)",
                     units.duration(x.before_ns), units.duration(x.after_ns),
                     signed_duration(x.delta_ns)] for x in w.terms]
            rows.append(["**step**", units.duration(w.before_ns), units.duration(w.after_ns),
                         signed_duration(w.delta_ns)])
            side = "device side" if w.side == "device" else "CPU side"
            ref = w.against or base
            out += [f"### Step time, {w.label} against {ref} ({side}, per step)", ""]
            out += _table(["term", ref, w.label, "change"], rows)
    if c.ops is not None:
        for kind, rows_ in (("kernels", c.ops.kernels), ("ops", c.ops.ops)):
            if not rows_:
                continue
            what = "GPU kernels" if kind == "kernels" else "CPU ops"
            out += [f"### {what} that changed most, per step", ""]
            for group in _groups(c):
                header = ["name", "class"]
                for i in group:
                    header.append(c.labels[i] + (" (base)" if i == c.baseline else ""))
                    if i != c.baseline:
                        header.append("Δ")
                body = []
                for r in rows_[:top]:
                    cells = [f"`{short_name(r.name, 60)}`", r.klass]
                    for i in group:
                        cells.append(per_step_cell(r, i))
                        if i != c.baseline:
                            cells.append(delta_cell(r, i))
                    body.append(cells)
                out += _table(header, body)
    return out


def render(analyses: Sequence[TraceAnalysis], comparison: Comparison | None = None,
           top: int = 10, unreadable: Sequence[Unreadable] = ()) -> str:
    out = ["# profkit analysis", ""]
    if unreadable:
        out += [f"**Left out, unreadable:** `{u.path}` ({u.reason})" for u in unreadable]
        out += [""]
    if comparison is not None:
        out += comparison_section(comparison)
        out += diff_sections(comparison, top)
    for a in analyses:
        out += trace_section(a, top)
    return "\n".join(out) + "\n"
