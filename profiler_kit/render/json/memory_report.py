"""The memory report as plain JSON data (``profkit memory --json``, schema
``profkit.memory/1``, and ``analyze --json``'s ``memory_explained``): every field as it is,
its notes said as sentences."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from profiler_kit.render.wording.notes import said, say

if TYPE_CHECKING:
    from profiler_kit.analysis.memory.fit import Fit
    from profiler_kit.analysis.memory.strategies import MemoryReport


def document(report: MemoryReport) -> dict[str, Any]:
    doc = msgspec.to_builtins(report)
    for s, d in zip(report.strategies, doc["strategies"], strict=True):
        d["notes"], d["limits"] = said(s.notes), said(s.limits)
        for a, a_doc in zip(s.advice, d["advice"], strict=True):
            a_doc["evidence"] = say(a.evidence)
        d["unrecorded"] = [{**u_doc, "why": say(u.why)}
                           for u, u_doc in zip(s.unrecorded, d["unrecorded"], strict=True)]
        for g, g_doc in zip(s.growth, d["growth"], strict=True):
            g_doc["note"] = None if g.note is None else say(g.note)
            g_doc["held_by_profiler"] = (None if g.held_by_profiler is None
                                         else say(g.held_by_profiler))
        _fit(s.fit, d["fit"])
    _fit(report.fit, doc["fit"])
    return doc


def _fit(fit: Fit | None, doc: dict[str, Any] | None) -> None:
    if fit is not None and doc is not None:
        doc["assumptions"] = said(fit.assumptions)
