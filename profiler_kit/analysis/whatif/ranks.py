"""What each rank of a job waits for the others in each collective, for ``no-straggler``.

The job view (:mod:`profiler_kit.analysis.jobs.job_view`) matches the ranks' collectives
(by process group and sequence number) and aligns their clocks; a rank's wait in one
collective is the last rank's arrival less its own (arrivals on the aligned clock).
"""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.jobs.job_view import group_jobs, view_job
from profiler_kit.analysis.jobs.rank_summary import RankSummary


def straggler_waits(summaries: Sequence[RankSummary]) -> list[tuple[tuple[int, int], ...]]:
    """Per summary (in order): (call start on its own clock, wait) of each of its
    collectives that every rank of its job has; empty for a trace in no job of two or more
    ranks."""
    out: list[tuple[tuple[int, int], ...]] = [() for _ in summaries]
    index = {id(s): i for i, s in enumerate(summaries)}
    jobs, _ = group_jobs(list(summaries))
    for members in jobs:
        if len(members) < 2:
            continue
        shift = {c.rank: c.shift_ns for c in view_job(members).clock_shifts}
        calls = [{(c.group, c.seq): c.start_ns for c in m.calls} for m in members]
        common = set(calls[0]).intersection(*calls[1:])
        last = {k: max(cs[k] - shift.get(m.rank, 0) for cs, m in zip(calls, members,
                                                                        strict=True))
                for k in common}
        for cs, m in zip(calls, members, strict=True):
            own = shift.get(m.rank, 0)
            out[index[id(m)]] = tuple(sorted((cs[k], last[k] - (cs[k] - own))
                                             for k in common))
    return out
