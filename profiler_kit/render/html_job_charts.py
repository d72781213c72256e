"""Charts of a multi-rank job (the job view): each rank's time in collectives split into
waiting for the last rank to arrive and transferring, the straggler named."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.job import JobView
from profiler_kit.render import units
from profiler_kit.render.html_figures import Chart, axis, ms, series_color

ACROSS_RANKS = "Across ranks"


def job_charts(jobs: Sequence[JobView]) -> list[Chart]:
    """One chart per job whose ranks ran collectives that could be matched."""
    charts = []
    for job in jobs:
        ranks = [r for r in job.per_rank if r.instances]
        if not ranks:
            continue
        straggler = job.straggler.rank if job.straggler else None
        labels = [f"rank {r.rank}" + (" (straggler)" if r.rank == straggler else "")
                  for r in ranks]
        data = [
            {"type": "bar", "name": "waiting", "x": labels,
             "y": [ms(r.wait_ns) for r in ranks], "marker": {"color": series_color(1)},
             "customdata": [[units.duration(r.wait_per_step_ns)] for r in ranks],
             "hovertemplate": "waiting %{y:.4g} ms (%{customdata[0]} per step)"
                              "<extra>%{x}</extra>"},
            {"type": "bar", "name": "transferring", "x": labels,
             "y": [ms(r.transfer_ns) for r in ranks], "marker": {"color": series_color(0)},
             "hovertemplate": "transferring %{y:.4g} ms<extra>%{x}</extra>"},
        ]
        if job.straggler is not None:
            verdict = (f"rank {job.straggler.rank} arrived last in "
                       f"{job.straggler.last_arrivals} of {job.straggler.instances} "
                       "collectives someone waited in; the others waited "
                       f"{units.duration(job.straggler.others_wait_per_step_ns)} per step "
                       "for it.")
        else:
            verdict = "No straggler: no rank arrived last often enough to be one."
        charts.append(Chart(
            id=f"job-wait-{len(charts)}", section=ACROSS_RANKS,
            title=f"Collectives of {job.name}: waiting and transferring per rank",
            caption="Each rank's time in the collectives matched across ranks, split into "
                    "waiting for the last rank to arrive and transferring after it did, "
                    f"summed over {job.step_count} steps. {verdict}",
            data=data,
            layout={"barmode": "stack", "yaxis": axis("time in collectives (ms)"),
                    "xaxis": axis("")},
        ))
    return charts
