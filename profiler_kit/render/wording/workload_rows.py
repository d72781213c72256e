"""The per-workload table (phase medians, build time, parameters, idle per rank) as text cells.

Shared by the console and Markdown renderers so both show the same columns.
"""

from __future__ import annotations

from profiler_kit.render.wording import units
from profiler_kit.results import OK, RunResult


def workload_rows(result: RunResult, point: str) -> tuple[list[str], list[list[str]]] | None:
    """``(column headings, rows)``; the first cell of each row is the strategy name.

    None when no strategy at this point has phases or workload information.
    """
    rows = [s for s in result.at(point) if s.status == OK and (s.phases or s.info)]
    names: list[str] = []
    for s in rows:
        names += [n for n in s.phases if n not in names]
    build = any("build_time_ns" in s.info for s in rows)
    params = any("param_count" in s.info for s in rows)
    idle = any("idle_share_by_rank" in s.info for s in rows)
    if not names and not build and not params and not idle:
        return None
    head = (["strategy"] + names + (["build"] if build else []) + (["params"] if params else [])
            + (["idle per rank"] if idle else []))
    body: list[list[str]] = []
    for s in rows:
        cells = [s.name]
        cells += [units.duration(s.phases[n].median_ns) if n in s.phases else "-" for n in names]
        if build:
            cells.append(units.duration(s.info.get("build_time_ns")))
        if params:
            count = s.info.get("param_count")
            cells.append(f"{count:,}" if isinstance(count, int) else "-")
        if idle:
            cells.append(idle_cell(s.info.get("idle_share_by_rank")))
        body.append(cells)
    return head, body


def has_phases(result: RunResult, point: str) -> bool:
    return any(s.phases for s in result.at(point) if s.status == OK)


def idle_cell(shares: object) -> str:
    """``[0.43, 0.19]`` -> ``"43.0 % / 19.0 %"`` (one share per rank, from its trace)."""
    if not isinstance(shares, (list, tuple)) or not shares:
        return "-"
    return " / ".join(units.percent(v) for v in shares)


def job_lines(result: RunResult, point: str) -> list[str]:
    """One line per strategy with a job view in its info (``info["job"]``, from its ranks'
    traces): the straggler, its exposed communication split into waiting and
    transferring, and for pipelines the send/recv waits and the bubble."""
    lines = []
    for s in result.at(point):
        job = s.info.get("job") if s.status == OK else None
        if not isinstance(job, dict):
            continue
        straggler = job.get("straggler")
        parts = []
        if not job.get("collectives"):
            pass  # no collective matched: nothing to say about stragglers or exposure
        elif straggler:
            on = f" on {straggler['host']}" if straggler.get("host") else ""
            verdict = (f"straggler rank {straggler['rank']}{on} (last in "
                       f"{straggler['last_arrivals']} of {straggler['instances']} collectives; "
                       f"the others wait {units.duration(straggler['others_wait_per_step_ns'])}"
                       " per step for it)")
        else:
            verdict = "no straggler"
        if job.get("collectives"):
            parts.append(verdict)
            parts.append("exposed communication per rank per step: wait "
                         f"{units.duration(job.get('exposed_wait_per_rank_per_step_ns'))}, "
                         "transfer "
                         f"{units.duration(job.get('exposed_transfer_per_rank_per_step_ns'))}")
        if job.get("p2p_transfers"):
            parts.append(f"{job['p2p_transfers']} send/recv pairs, waiting "
                         f"{units.duration(job.get('p2p_wait_per_rank_per_step_ns'))} per rank "
                         "per step")
        if job.get("pipeline_bubble_share") is not None:
            parts.append(f"pipeline bubble {units.percent(job['pipeline_bubble_share'])}")
        if parts:
            lines.append(f"{s.name}: " + "; ".join(parts))
    return lines
