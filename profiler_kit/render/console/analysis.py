"""Rich console output for ``profkit analyze`` and ``profkit compare``. Formats, never computes."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from profiler_kit.analysis.compare import Comparison, Metric
from profiler_kit.analysis.jobs.job_view import JobView
from profiler_kit.analysis.memory.allocated import IN_TRACE_ONLY
from profiler_kit.analysis.time.hotspots import Breakdown
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.console.diff_tables import diff_table, shape_table, waterfall_table
from profiler_kit.render.console.fit import TEXT, FitTable
from profiler_kit.render.wording import perf_tables, prediction_checks, units
from profiler_kit.render.wording.diff_views import unpaired_line, verdict_lines
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.recommendation_gain import gain_line
from profiler_kit.render.wording.sm_figures import (
    class_figures,
    idle_kernel_lines,
    limiter_text,
    occupancy_text,
    sm_line,
)
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

_TABLE = {"box": box.SIMPLE_HEAD, "pad_edge": False, "title_justify": "left",
          "title_style": "bold"}


def _row(table: Table, *cells: str | Text) -> None:
    """Add a row whose strings are plain text: names like ``[param|cuda]`` are not markup."""
    table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


WIDE_CONSOLE = 120  # columns from which the top-kernel table shows class and limiter too


def _name_width(console_width: int) -> int:
    """Room left for a name column beside four fixed columns, inside the panel."""
    return max(24, console_width - 46)


def _title(a: TraceAnalysis) -> Text:
    parts = [f"{a.events:,} events"]
    if a.rank is not None:
        parts.insert(0, f"rank {a.rank}" + (f" of {a.world_size}" if a.world_size else ""))
    names = sorted({d.name for d in a.devices if d.name})
    if names:
        parts.insert(0, ", ".join(names))
    elif not a.has_gpu:
        parts.insert(0, "CPU only")
    t = Text(a.label, style="bold")
    t.append(f"  ({'; '.join(parts)})", style="dim")
    return t


def _steps(a: TraceAnalysis) -> Text:
    s = a.steps
    if s.source == "window":
        return Text("Steps: no ProfilerStep# spans; whole trace window "
                    f"{units.duration(s.median_ns)}")
    h = s.headline_stats
    spread = f", IQR/median {units.percent(h.spread)}" if s.count > 1 else ""
    side = "device-side" if s.headline == "device" else "CPU-side"
    cpu = f"; CPU-side median {units.duration(s.median_ns)}" if s.headline == "device" else ""
    text = Text(
        f"Steps: {s.count} × ProfilerStep, {side} median {units.duration(h.median_ns)} "
        f"(min {units.duration(h.min_ns)}, max {units.duration(h.max_ns)}{spread}){cpu}"
    )
    if a.step_gpu_busy_share is not None and a.step_device_ns:
        text.append(f"\nGPU busy {units.percent(a.step_gpu_busy_share)} of the device-side "
                    f"step time ({units.duration(a.timeline.busy_ns)} in "
                    f"{units.duration(a.step_device_ns)})")
    line = sm_line(a.sm)
    if line:
        text.append("\n" + line)
    if s.breakdown is not None:
        text.append("\n" + step_breakdown_line(s.breakdown), style="dim")
    return text


def _timeline(a: TraceAnalysis) -> Table | None:
    if not a.timeline.devices:
        return None
    t = FitTable(title=f"GPU timeline ({window_label(a)})", **_TABLE)  # narrow: headers wrap
    for col in ("device", "window", "busy", "idle", "idle %", "2+ str.", "comm.", "exposed"):
        t.add_column(col, justify="left" if col == "device" else "right", no_wrap=True)
    for d in a.timeline.devices:
        _row(t,
            f"gpu:{d.device}", units.duration(d.window_ns), units.duration(d.busy_ns),
            units.duration(d.idle_ns), units.percent(d.idle_share),
            units.duration(d.multi_stream_ns), units.duration(d.communication_busy_ns),
            units.duration(d.exposed_communication_ns),
        )
    lines = []
    for d in a.timeline.devices:
        streams = ", ".join(f"{s.stream}: {units.duration(s.busy_ns)}" for s in d.streams[:6])
        more = f", +{len(d.streams) - 6} more" if len(d.streams) > 6 else ""
        lines.append(f"gpu:{d.device} busy per stream: {streams}{more}")
    if len(a.timeline.devices) > 1:
        lines.append(f"time with 2+ devices busy: {units.duration(a.timeline.multi_device_ns)}")
    if a.window == "steps" and a.trace_timeline is not None:
        lines += [trace_timeline_line(d) for d in a.trace_timeline.devices]
    t.caption = "\n".join(lines)
    t.caption_justify = "left"
    return t


def _launches(a: TraceAnalysis) -> Text | None:
    lines = launch_lines(a)
    if not lines:
        return None
    t = Text(f"GPU idle causes and kernel launches ({window_label(a)})\n", style="bold")
    t.append("\n".join(lines))
    return t


def _breakdown(title: str, bd: Breakdown, what: str, width: int,
               sm: dict[str, tuple[str, str]] | None = None) -> Table:
    """Time per class; with ``sm`` (class -> SM efficiency, occupancy as text) two columns
    more, and below WIDE_CONSOLE the counts give their room to the names."""
    counts = sm is None or width >= WIDE_CONSOLE
    room = max(24, width - 68) if sm is not None and counts else \
        _name_width(width) if counts else max(20, width - 60)
    times = counts or room >= 33  # at 80 columns the names keep what room there is
    t = Table(title=Text(title), **_TABLE)
    t.add_column("class", no_wrap=True, min_width=13)
    if counts:
        t.add_column("count", justify="right", no_wrap=True, min_width=5)
    t.add_column("time", justify="right", no_wrap=True, min_width=7)
    t.add_column("share", justify="right", no_wrap=True, min_width=6)
    if sm is not None:
        t.add_column("SM eff.", justify="right", no_wrap=True, min_width=7)
        t.add_column("occ.", justify="right", no_wrap=True, min_width=6)
    t.add_column(f"top {what} ({'time, ' if times else ''}{'count, ' if counts else ''}name)",
                 overflow="ellipsis", no_wrap=True, max_width=room)
    for c in bd.classes:
        top = "\n".join(
            (f"{units.duration(n.total_ns):>8} " if times else "")
            + (f"×{n.count:<5} " if counts else "")
            + short_name(n.name, room - (18 if counts else 11 if times else 2))
            for n in c.top[:3]
        )
        figures = [] if sm is None else list(sm.get(c.klass, ("-", "-")))
        _row(t, c.klass, *([f"{c.count:,}"] if counts else []), units.duration(c.total_ns),
             units.percent(c.share), *figures, top)
    t.caption = f"total {units.duration(bd.total_ns)} in {bd.count:,} {what}"
    return t


def _kernels(a: TraceAnalysis, top: int, width: int) -> Table:
    t = Table(title=f"Top GPU kernels (of {len(a.kernels):,} names)", **_TABLE)
    sm = {k.name: k for k in a.sm.kernels} if a.sm is not None and a.sm.available else None
    # the SM figures need room: below WIDE_CONSOLE the class (in the table above) and the
    # limiter (in the idle-SM lines below) give theirs to the kernel's name
    wide = sm is None or width >= WIDE_CONSOLE
    name_width = _name_width(width) - (6 if sm is None else 36 if wide else 8)
    t.add_column("kernel", overflow="ellipsis", no_wrap=True, max_width=name_width)
    if wide:
        t.add_column("class", no_wrap=True, min_width=13)
    t.add_column("count", justify="right", no_wrap=True, min_width=5)
    t.add_column("total", justify="right", no_wrap=True, min_width=7)
    t.add_column("mean", justify="right", no_wrap=True, min_width=7)
    if sm is not None:
        for col, w in (("SM eff.", 7), ("occ.", 6), ("limiter", 13))[:3 if wide else 2]:
            t.add_column(col, justify="left" if col == "limiter" else "right", no_wrap=True,
                         min_width=w)
    for k in a.kernels[:top]:
        cells = [short_name(k.name, name_width - 2), *([k.klass] if wide else []),
                 f"{k.count:,}", units.duration(k.total_ns),
                 units.duration(k.total_ns / k.count if k.count else None)]
        if sm is not None:
            f = sm.get(k.name)
            # a kernel Kineto could not estimate (0) reads n/a
            occupancy = occupancy_text(f.achieved_occupancy) if f is not None and \
                f.achieved_occupancy is not None else "n/a"
            figures = [units.percent(f.sm_efficiency), occupancy,
                       limiter_text(f)] if f is not None else ["-", "-", "-"]
            cells += figures if wide else figures[:2]
        _row(t, *cells)
    idle = idle_kernel_lines(a.sm, max(30, width - 70))
    if idle:
        t.caption = "\n".join(idle)
        t.caption_justify = "left"
    return t


def _precision(a: TraceAnalysis) -> Text | None:
    p = a.precision
    if not p.eligible_ns:
        return None
    return Text(
        f"Precision of GEMM + convolution kernels ({units.duration(p.eligible_ns)}): "
        f"fp16/bf16/fp8 {units.percent(p.low_precision_share)}; "
        f"tensor cores incl. tf32 {units.percent(p.tensor_core_share)} "
        f"(data types from {precision_source(p.source)})"
    )


def _perf(a: TraceAnalysis, top: int, width: int) -> list:
    """The perf model: summary, achieved rate per class, the largest op shapes (as plain
    fixed-width text: a rich Table of these cells would double the report's render time)."""
    perf = a.perf
    parts: list = [Text("\n".join(perf_tables.summary_lines(perf)))]
    room = width - 4  # inside the panel
    narrow = width < 110
    if perf.families:
        header = perf_tables.family_header(perf)
        keep = [i for i, col in enumerate(header) if not (narrow and col == "FLOPs")]
        rows = [tuple(r[i] for i in keep) for r in perf_tables.family_rows(perf)]
        lines = perf_tables.text_table(tuple(header[i] for i in keep), rows, room,
                                       frozenset({0}), ((0, 8),))
        parts.append(_titled("Achieved rate by class (modelled ops)", lines))
    if perf.groups:
        header = perf_tables.group_header(perf)
        rows = perf_tables.group_rows(perf, top)
        details = None
        sm = ("SM eff.", "occ.") if perf_tables.has_sm(perf) else ()
        if narrow:  # no mean, bandwidth or intensity; shapes (and SM figures) on a line
            keep = [i for i, col in enumerate(header) if col not in (
                "mean", "TB/s", "GB/s", "FLOP/B", "dtype, input shapes", *sm)]
            details = [r[-1] + (f"; SM eff. {r[-3]}, occ. {r[-2]}" if sm else "")
                       for r in rows]
        else:  # below 150 columns the SM figures take the mean's and intensity's room
            keep = [i for i, col in enumerate(header)
                    if not (sm and width < 150 and col in ("mean", "FLOP/B"))]
        n = len(keep)
        cols = tuple(header[i] for i in keep)
        lines = perf_tables.text_table(
            cols, [tuple(r[i] for i in keep) for r in rows], room,
            frozenset({0, n - 1} | ({cols.index("bound: % of peak")} if not narrow else set())),
            ((n - 1, 28), (0, 20), (n - 1, 12)), details)
        parts.append(_titled(f"Ops by input shape (largest total first, "
                             f"{min(top, len(perf.groups))} of {len(perf.groups):,})", lines))
    return parts


def _titled(title: str, lines: list[str]) -> Text:
    t = Text("\n" + title + "\n", style="bold")
    t.append("\n".join(lines) + "\n", style="")
    return t


def _memory(a: TraceAnalysis) -> Table | Group | Text:
    m = a.memory
    if not m.recorded:
        return Text("Memory: not recorded (no [memory] events; profile with profile_memory=True)")
    t = Table(title="Memory", **_TABLE)
    for col in ("device", "peak allocated", "peak reserved", "allocations", "capacity"):
        t.add_column(col, justify="left" if col == "device" else "right")
    for d in m.devices:
        _row(t, d.device, units.nbytes(d.peak_allocated_bytes),
                  units.nbytes(d.peak_reserved_bytes), f"{d.allocations:,}",
                  units.nbytes(d.capacity_bytes))
    in_trace = [d.device for d in m.devices if not d.counts_before_trace]
    if in_trace:
        t.caption = f"{', '.join(in_trace)}: {IN_TRACE_ONLY}"
    if not m.top_ops:
        return t
    ops = Table(title="Ops that allocated most", **_TABLE)
    ops.add_column("op", overflow="fold")
    ops.add_column("allocations", justify="right")
    ops.add_column("bytes", justify="right")
    for o in m.top_ops[:5]:
        _row(ops, short_name(o.name), f"{o.allocations:,}", units.nbytes(o.allocated_bytes))
    return Group(t, ops)


def _critical_path(a: TraceAnalysis, top: int, width: int) -> Table | None:
    c = a.critical_path
    if c is None or not c.length_ns:
        return None
    t = Table(title=Text(critical_path_title(a)), **_TABLE)
    t.add_column("on the path", overflow="ellipsis", no_wrap=True,
                 max_width=_name_width(width) - 6)
    t.add_column("kind", no_wrap=True, min_width=13)
    t.add_column("count", justify="right", no_wrap=True, min_width=5)
    t.add_column("time", justify="right", no_wrap=True, min_width=7)
    t.add_column("share", justify="right", no_wrap=True, min_width=6)
    for label, ns, share in critical_path_shares(a):
        _row(t, Text(label, style="bold"), "", "", units.duration(ns), units.percent(share))
    for e in c.entries[:top]:
        _row(t, short_name(e.name, _name_width(width) - 8), f"{e.category} {e.klass}"
             if e.klass != "other" else e.category, f"{e.count:,}", units.duration(e.ns),
             units.percent(e.ns / c.length_ns))
    return t


def _phases(a: TraceAnalysis, top: int) -> Table | None:
    if not a.phases.phases:
        return None
    # narrow: the names break at their dots and words, the headers at their spaces
    t = FitTable(title=f"Phases (record_function; {window_label(a)})", kinds={"annotation": TEXT},
                 **_TABLE)
    t.add_column("annotation", overflow="fold")
    t.add_column("count", justify="right")
    t.add_column("CPU time", justify="right")
    t.add_column("of window", justify="right")
    t.add_column("GPU work", justify="right")
    t.add_column("of GPU window", justify="right")
    for p in a.phases.phases[:top]:
        _row(t, short_name(p.name, 60), f"{p.count:,}", units.duration(p.cpu_total_ns),
             units.percent(p.share_of_window),
             units.duration(p.gpu_total_ns) if p.gpu_total_ns else "-",
             units.percent(p.gpu_share_of_window) if p.gpu_total_ns else "-")
    t.caption = ("CPU time: union of the spans; GPU work: busy time of the GPU activities "
                 "launched inside them")
    t.caption_justify = "left"
    return t


def _recommendations(a: TraceAnalysis) -> Text:
    t = Text()
    if not a.recommendations:
        t.append("Recommendations: none fired.\n", style="bold")
    else:
        t.append("Recommendations\n", style="bold")
    for i, r in enumerate(a.recommendations, 1):
        head, body = recommendation_lines(r)
        t.append(f"{i}. {head}\n", style="yellow")
        gain = gain_line(r)
        if gain is not None:
            t.append(f"   {gain}\n", style="bold")
        t.append(f"   {body}\n")
    shown = a.gpu_activity_missing.line if a.gpu_activity_missing is not None else None
    for n in a.notes:
        if n != shown:  # at the top already
            t.append(f"note: {n}\n", style="dim")
    return t


def trace_view(a: TraceAnalysis, top: int = 10, width: int = 120) -> Group:
    """One trace's sections; ``width`` is the console width the name columns must fit."""
    parts: list = [_title(a), _steps(a)]
    if a.gpu_activity_missing is not None:
        parts.append(Text(a.gpu_activity_missing.line, style="yellow"))
    for what, counts in (("skipped", a.skipped), ("kept after a fix", a.normalized)):
        if counts:
            detail = ", ".join(f"{reason}: {n:,}" for reason, n in sorted(counts.items()))
            parts.append(Text(f"Events {what}: {sum(counts.values()):,} ({detail})",
                              style="yellow"))
    tl = _timeline(a)
    if tl is not None:
        parts.append(tl)
    lt = _launches(a) if a.has_gpu else None
    if lt is not None:
        parts.append(lt)
    if a.has_gpu:
        parts.append(_breakdown(f"GPU time by class ({window_label(a)})", a.gpu, "kernels",
                                width, class_figures(a.sm)))
        for dev, bd in a.gpu_by_device:
            parts.append(_breakdown(f"GPU time by class, gpu:{dev}", bd, "kernels", width))
        parts.append(_kernels(a, top, width))
    if a.cpu.count:
        parts.append(_breakdown("CPU ops by self time", a.cpu, "ops", width))
    cp = _critical_path(a, top, width)
    if cp is not None:
        parts.append(cp)
    prec = _precision(a)
    if prec is not None:
        parts.append(prec)
    parts += _perf(a, top, width)
    parts.append(_memory(a))
    ph = _phases(a, top)
    if ph is not None:
        parts.append(ph)
    comm = a.communication
    if comm is not None and comm.calls:
        from profiler_kit.render.console.job import rank_communication

        parts.append(rank_communication(comm.kinds, comm.exposed_ns, comm.on_device))
    parts.append(_recommendations(a))
    return Group(*parts)


def comparison_table(c: Comparison, traces: Sequence[int] | None = None) -> Table:
    """Metrics as rows, the traces (all, or those at ``traces``) as columns."""
    shown = list(range(len(c.labels))) if traces is None else list(traces)
    t = Table(title=Text(f"Comparison (baseline: {c.labels[c.baseline]}; best in bold green)"
                         if traces is None else
                         f"Comparison, {', '.join(c.labels[i] for i in shown[1:3])}"
                         f"{' ...' if len(shown) > 3 else ''} against {c.labels[c.baseline]}"),
              **_TABLE)
    t.add_column("metric")
    whole = [i for i, w in enumerate(c.windows) if w == "trace"]
    for i in shown:
        mark = " †" if i in whole else ""
        t.add_column(Text(c.labels[i] + mark + (" (baseline)" if i == c.baseline else "")),
                     justify="right", overflow="fold")
    for m in c.metrics:
        _row(t, m.label, *(_cell(m, i, c.baseline) for i in shown))
    if set(whole) & set(shown):
        t.caption = WHOLE_TRACE_NOTE
        t.caption_justify = "left"
    return t


def _cell(m: Metric, i: int, baseline: int) -> Text:
    text = value(m.values[i], m.unit)
    if i != baseline and m.deltas[i] is not None:
        text += f" ({units.signed_percent(m.deltas[i])})"
    return Text(text, style="bold green" if m.best == i else "")


_COLUMN_WIDTH = 16  # a value and its delta
_METRIC_WIDTH = 28


def columns_that_fit(width: int) -> int:
    """Traces side by side in one table at this console width (at least the baseline and
    one other)."""
    return max(2, (width - _METRIC_WIDTH) // _COLUMN_WIDTH)


def comparison_tables(c: Comparison, width: int = 120) -> list[Table]:
    """The comparison as one table when its traces fit side by side; else a summary (one
    row per trace, the headline metrics as columns) and the full table per group of
    traces (traces of one folder together, the baseline in each)."""
    fits = columns_that_fit(width)
    if len(c.labels) <= fits:
        return [comparison_table(c)]
    tables = [summary_table(c, width)]
    for group in trace_groups(c.labels, c.baseline, fits - 1):
        tables.append(comparison_table(c, (c.baseline, *group)))
    return tables


def summary_table(c: Comparison, width: int = 120) -> Table:
    """One row per trace, the headline metrics as columns (as many as fit)."""
    by_key = {m.key: m for m in c.metrics}
    shown = [by_key[k] for k in SUMMARY_METRICS
             if k in by_key and any(v is not None for v in by_key[k].values)]
    room = max(1, (width - 30) // _COLUMN_WIDTH)
    shown = shown[:room]
    t = Table(title=Text(f"Comparison of {len(c.labels)} traces (baseline: "
                         f"{c.labels[c.baseline]}; best in bold green); details per group "
                         "below"), **_TABLE)
    t.add_column("trace", overflow="fold")
    for m in shown:
        t.add_column(Text(m.label), justify="right", overflow="fold")
    whole = {i for i, w in enumerate(c.windows) if w == "trace"}
    for i, label in enumerate(c.labels):
        name = label + (" †" if i in whole else "") + (" (baseline)" if i == c.baseline else "")
        _row(t, name, *(_cell(m, i, c.baseline) for m in shown))
    if whole:
        t.caption = WHOLE_TRACE_NOTE
        t.caption_justify = "left"
    return t


def comparison_view(c: Comparison, top: int = 10, width: int = 120,
                    by_shape: bool = False) -> Group:
    """The comparison table (a summary and tables per group when the traces do not fit
    side by side), then per trace its step-time waterfall, the kernels and ops that
    changed most (``by_shape``: and the ops by input shape), and the verdict lines last,
    where the eye lands."""
    parts: list = list(comparison_tables(c, width))
    if c.steps is not None:
        base = c.labels[c.baseline]
        parts += [waterfall_table(w, w.against or base) for w in c.steps.waterfalls
                  if w is not None]
    for kind in ("kernels", "ops"):
        table = diff_table(c, kind, top, width)
        if table is not None:
            parts.append(table)
    if by_shape:
        shapes = shape_table(c, top, width)
        if shapes is not None:
            parts.append(shapes)
    if c.predictions:
        parts.append(prediction_table(c))
    lines = verdict_lines(c)
    if lines:
        verdict = Text("Verdict\n", style="bold")
        for line in lines:
            verdict.append(f"{line}\n")
        parts.append(verdict)
    if c.unpaired:
        parts.append(Text(unpaired_line(c) + "\n", style="dim"))
    return Group(*parts)


def prediction_table(c: Comparison) -> Table:
    """The baseline's what-if predictions against the other traces' measured steps."""
    t = Table(title="Predicted against measured", caption=prediction_checks.title(c),
              caption_justify="left", **_TABLE)
    for i, head in enumerate(prediction_checks.HEAD):
        t.add_column(head, justify="right" if i >= 2 else "left")
    for row in prediction_checks.rows(c):
        _row(t, *row)
    return t


def render(console: Console, analyses: Sequence[TraceAnalysis],
           comparison: Comparison | None = None, top: int = 10,
           jobs: Sequence[JobView] = (), by_shape: bool = False) -> None:
    """Print every analysis, then the comparison when there is one, then the job views."""
    for a in analyses:
        console.print(Panel(trace_view(a, top, console.width), box=box.ROUNDED, expand=True))
    if comparison is not None:
        console.print(comparison_view(comparison, top, console.width, by_shape))
    render_jobs(console, jobs)


def render_jobs(console: Console, jobs: Sequence[JobView]) -> None:
    """The job view of every job of several ranks."""
    if jobs:
        from profiler_kit.render.console.job import job_view

        for j in jobs:
            console.print(job_view(j))
