"""JSON for ``profkit analyze --json``: schema ``profkit.analysis/3`` (see docs/analysis-json.md).

The document is the analyses' own fields, raw units (ns, bytes, fractions), with
``klass`` spelled ``class``; a trace's keys, a job's and the comparison's are the presenters'
(:mod:`profiler_kit.render.sections`). Fields are only ever added within one schema
version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from profiler_kit.render import sections
from profiler_kit.render.json import memory_report
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections import Presenter

if TYPE_CHECKING:  # the job view's module is needed only when there is a job
    from profiler_kit.analysis.compare import Comparison
    from profiler_kit.analysis.jobs.job_view import JobView
    from profiler_kit.analysis.trace_analysis import TraceAnalysis
    from profiler_kit.trace.source import Unreadable

SCHEMA = "profkit.analysis/3"


def trace_document(a: TraceAnalysis) -> dict[str, Any]:
    """One trace's analysis as plain JSON data: each presenter's keys, in the presenters'
    order, then any field no presenter writes."""
    doc = _keys(lambda p: p.json(a))
    presented = {f for p in sections.PRESENTERS for f in p.fields}
    # an analysis registered without a presenter: as it is, under its own name
    doc.update({name: plain(getattr(a, name)) for name in a.__struct_fields__
                if name not in presented})
    return doc


def job_document(j: JobView) -> dict[str, Any]:
    """One job's object: each presenter's job keys, in the presenters' order."""
    return _keys(lambda p: p.job_json(j))


def _keys(hook: Callable[[Presenter], dict[str, Any]]) -> dict[str, Any]:
    """Every presenter's keys from one hook, in the presenters' order."""
    doc: dict[str, Any] = {}
    for p in sections.PRESENTERS:
        doc.update(hook(p))
    return doc


def document(analyses: Sequence[TraceAnalysis], comparison: Comparison | None,
             jobs: Sequence[JobView] = (), unreadable: Sequence[Unreadable] = (),
             memory: Any = None) -> dict[str, Any]:
    """The whole ``profkit analyze``/``compare`` result; ``unreadable`` lists the traces
    left out, each with the reason; ``memory`` the memory report of the same paths from
    their categories and snapshots (the console's memory section), or None."""
    comp = None if comparison is None else _keys(lambda p: p.comparison_json(comparison))
    return {
        "schema": SCHEMA,
        "traces": [trace_document(a) for a in analyses],
        "comparison": comp,
        "jobs": [job_document(j) for j in jobs],
        "unreadable": [{"path": u.path, "reason": u.reason} for u in unreadable],
        "memory_explained": None if memory is None else memory_report.document(memory),
    }


def dumps(analyses: Sequence[TraceAnalysis], comparison: Comparison | None,
          jobs: Sequence[JobView] = (), unreadable: Sequence[Unreadable] = (),
          memory: Any = None) -> str:
    # same text as json.dumps(..., indent=1), ten times faster
    doc = document(analyses, comparison, jobs, unreadable, memory)
    return msgspec.json.format(msgspec.json.encode(doc),
                               indent=1).decode() + "\n"
