"""GPU busy and idle per device and stream, in the steps' window and over the whole trace."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.time.busy import Timeline
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import Block, Column, Grid
from profiler_kit.render.wording import units
from profiler_kit.render.wording.trace_words import trace_timeline_line, window_label


def timeline_json(tl: Timeline | None) -> dict[str, Any] | None:
    """A timeline with the totals its devices add up to."""
    if tl is None:
        return None
    return {**plain(tl), "busy_ns": tl.busy_ns, "window_ns": tl.window_ns,
            "idle_share": tl.idle_share}


class GpuTimeline(Presenter):
    fields = ("timeline",)
    order = 50

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        if not a.timeline.devices:
            return []
        columns = tuple(Column(c, justify="left" if c == "device" else "right", no_wrap=True)
                        for c in ("device", "window", "busy", "idle", "idle %", "2+ str.",
                                  "comm.", "exposed"))
        rows = tuple((f"gpu:{d.device}", units.duration(d.window_ns),
                      units.duration(d.busy_ns), units.duration(d.idle_ns),
                      units.percent(d.idle_share), units.duration(d.multi_stream_ns),
                      units.duration(d.communication_busy_ns),
                      units.duration(d.exposed_communication_ns))
                     for d in a.timeline.devices)
        lines = []
        for d in a.timeline.devices:
            streams = ", ".join(f"{s.stream}: {units.duration(s.busy_ns)}"
                                for s in d.streams[:6])
            more = f", +{len(d.streams) - 6} more" if len(d.streams) > 6 else ""
            lines.append(f"gpu:{d.device} busy per stream: {streams}{more}")
        if len(a.timeline.devices) > 1:
            lines.append("time with 2+ devices busy: "
                         f"{units.duration(a.timeline.multi_device_ns)}")
        if a.window == "steps" and a.trace_timeline is not None:
            lines += [trace_timeline_line(d) for d in a.trace_timeline.devices]
        # a FitTable: on a narrow console the headers wrap
        return [Grid(f"GPU timeline ({window_label(a)})", columns, rows, "\n".join(lines),
                     caption_left=True, fit={})]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        if not a.timeline.devices:
            return []
        rows = [[f"gpu:{d.device}", units.duration(d.window_ns), units.duration(d.busy_ns),
                 units.percent(d.idle_share), units.duration(d.multi_stream_ns),
                 units.duration(d.communication_busy_ns),
                 units.duration(d.exposed_communication_ns)] for d in a.timeline.devices]
        out = [f"### GPU timeline ({window_label(a)})", ""] + table(
            ["device", "window", "busy", "idle", "2+ streams", "comm.", "comm. exposed"], rows)
        if a.window == "steps" and a.trace_timeline is not None:
            out += [trace_timeline_line(d) + "." for d in a.trace_timeline.devices] + [""]
        return out

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        """Each device's SM efficiency and achieved occupancy sit beside its busy time,
        where the trace records them (left out, never 0, where it does not)."""
        timeline = timeline_json(a.timeline)
        sm = a.sm
        if timeline is not None and sm is not None and sm.available:
            by_device = {d.device: d for d in sm.devices}
            for d in timeline["devices"]:
                f = by_device.get(d["device"])
                if f is not None:
                    d["sm_efficiency"] = f.sm_efficiency
                    d["achieved_occupancy"] = f.achieved_occupancy
        return {"timeline": timeline}
