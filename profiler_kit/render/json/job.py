"""The job view in a few numbers (a run's ``info["job"]``), its notes said as sentences;
``profkit analyze --json``'s ``jobs`` are the presenters' (``render/sections/job``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profiler_kit.render.wording.notes import said

if TYPE_CHECKING:  # the job view's module is needed only when there is a job
    from profiler_kit.analysis.jobs.job_view import JobView


def run_info(job: JobView) -> dict[str, Any]:
    """The job view in a few numbers (a run's ``info["job"]``, kept in run.json): per step,
    averaged over the ranks where it says "per rank"."""
    n = max(job.step_count, 1)
    ranks = max(len(job.per_rank), 1)
    s = job.straggler
    p = job.pipeline
    return {
        "ranks": list(job.ranks),
        "missing_ranks": list(job.missing_ranks),
        "steps": job.step_count,
        "collectives": len(job.instances),
        "straggler": None if s is None else {
            "rank": s.rank, "host": s.host, "last_arrivals": s.last_arrivals,
            "instances": s.instances, "others_wait_per_step_ns": s.others_wait_per_step_ns},
        "wait_per_step_ns": {str(r.rank): r.wait_per_step_ns for r in job.per_rank},
        "exposed_wait_per_rank_per_step_ns":
            sum(r.exposed_wait_ns for r in job.per_rank) / ranks / n,
        "exposed_transfer_per_rank_per_step_ns":
            sum(r.exposed_transfer_ns for r in job.per_rank) / ranks / n,
        "pipeline_bubble_share": None if p is None else p.bubble_share,
        "p2p_wait_per_rank_per_step_ns": None if p is None else
            sum(st.recv_wait_ns + st.send_wait_ns for st in p.stages) / ranks / n,
        "p2p_transfers": None if p is None else len(p.transfers),
        "warnings": said(job.warnings),
    }
