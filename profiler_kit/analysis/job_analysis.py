"""One job, fully analyzed: the job view of its ranks and the rules on them together."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from profiler_kit.analysis.advice.job_rules import job_recommendations
from profiler_kit.analysis.core.note import Note
from profiler_kit.analysis.jobs.job_view import JobView, folder_of, group_jobs, view_job
from profiler_kit.analysis.jobs.rank_summary import RankSummary


def analyze_jobs(summaries: Sequence[RankSummary]) -> tuple[JobView, ...]:
    """Every job among ``summaries`` with more than one rank."""
    jobs, warnings = group_jobs(summaries)
    views = []
    for members in jobs:
        if len(members) < 2:
            continue
        folders = {folder_of(m) for m in members}
        views.append(analyze_job(members, warnings=tuple(
            w for w in warnings if w.figures["folder"] in folders)))
    return tuple(views)


def analyze_job(members: Sequence[RankSummary], warnings: tuple[Note, ...] = ()) -> JobView:
    """The job view of the ranks ``members`` (one summary per rank), with the rules'
    recommendations and the notes of the rules that could not be judged."""
    members = sorted(members, key=lambda m: m.rank or 0)
    view = view_job(members, warnings)
    recs, rule_notes = job_recommendations(view, members)
    return msgspec.structs.replace(view, recommendations=recs, rule_notes=rule_notes)
