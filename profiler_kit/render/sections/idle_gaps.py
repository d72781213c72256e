"""GPU idle time by the length of its gaps: many short gaps are launch overhead, a few long
ones the GPU waiting on something else (:mod:`profiler_kit.analysis.time.idle_gaps`)."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.time.idle_gaps import DeviceGaps, GapBucket
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import Chart, axis, counted_bar
from profiler_kit.render.html.trace_charts import TIME_BY_CLASS, name_of
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines
from profiler_kit.render.wording import units


def bucket_label(b: GapBucket) -> str:
    """``< 10 µs``, ``10 µs-100 µs``, ``≥ 1 ms``."""
    if b.low_ns == 0:
        return f"< {units.duration(b.high_ns)}"
    if b.high_ns is None:
        return f"≥ {units.duration(b.low_ns)}"
    return f"{units.duration(b.low_ns)}-{units.duration(b.high_ns)}"


def gaps_line(d: DeviceGaps) -> str:
    """One device's gaps in a line: how many, the median, each length range's time."""
    ranges = ", ".join(f"{bucket_label(b)}: {b.count:,} ({units.duration(b.idle_ns)})"
                       for b in d.buckets if b.count)
    return (f"gpu:{d.device} idle gaps: {d.count:,} in {units.duration(d.idle_ns)}, median "
            f"{units.duration(d.median_ns)}; {ranges}")


def _lines(a: TraceAnalysis) -> list[str]:
    gaps = a.idle_gaps
    return [gaps_line(d) for d in gaps.devices if d.count] if gaps is not None else []


class IdleGapsPresenter(Presenter):
    fields = ("idle_gaps",)
    order = 90

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        return [Lines.of(line) for line in _lines(a)]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        lines = _lines(a)
        return [f"- {line}" for line in lines] + [""] if lines else []

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"idle_gaps": plain(a.idle_gaps)}

    def charts(self, page: Page) -> list[Chart]:
        """Idle time per gap length, stacked per trace (its GPUs summed)."""
        rows = [(name_of(a), a.idle_gaps.devices) for a in page.analyses
                if a.idle_gaps is not None and any(d.count for d in a.idle_gaps.devices)]
        if not rows:
            return []
        data = []
        for j, b in enumerate(rows[0][1][0].buckets):
            label = bucket_label(b)
            idle = [sum(d.buckets[j].idle_ns for d in devices) for _, devices in rows]
            count = [sum(d.buckets[j].count for d in devices) for _, devices in rows]
            data.append(counted_bar(j, label, [name for name, _ in rows], idle, count,
                                    f"gaps {label}", "gaps"))
        return [Chart(
            id="idle-gaps", section=TIME_BY_CLASS, title="GPU idle time by gap length",
            caption="The GPU's idle time (summed over GPUs) by the length of each gap "
                    "between its work: short gaps are launch overhead (fusion or CUDA "
                    "graphs close them), long ones the GPU waiting on the host, a "
                    "synchronization or the data loader.",
            data=data,
            layout={"barmode": "stack", "yaxis": axis("idle (ms)"), "xaxis": axis("")})]
