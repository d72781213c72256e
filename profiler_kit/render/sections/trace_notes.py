"""What the trace lacks or had mended: GPU work that went unrecorded, events left out or
kept after a fix."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines
from profiler_kit.render.wording.trace_words import missing_gpu_line


def _fixes(a: TraceAnalysis) -> list[str]:
    out = []
    for what, counts in (("skipped", a.skipped), ("kept after a fix", a.normalized)):
        if counts:
            detail = ", ".join(f"{reason}: {n:,}" for reason, n in sorted(counts.items()))
            out.append(f"Events {what}: {sum(counts.values()):,} ({detail})")
    return out


class TraceNotes(Presenter):
    fields = ("gpu_activity_missing", "skipped", "normalized")
    order = 40

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        out = []
        if a.gpu_activity_missing is not None:
            out.append(Lines.of(missing_gpu_line(a.gpu_activity_missing), "yellow"))
        return out + [Lines.of(line, "yellow") for line in _fixes(a)]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        out = []
        if a.gpu_activity_missing is not None:
            out += [f"**{missing_gpu_line(a.gpu_activity_missing)}.**", ""]
        for line in _fixes(a):
            out += [line + ".", ""]
        return out

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        m = a.gpu_activity_missing
        return {"skipped": dict(a.skipped), "normalized": dict(a.normalized),
                "gpu_activity_missing": None if m is None else {
                    **plain(m), "line": missing_gpu_line(m)}}
