"""Charts of a multi-rank job (the job view): each rank's time in collectives split into
waiting for the last rank to arrive and transferring, the straggler named; and for a
pipeline, each stage's computation and bubble."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.jobs.job_view import JobView, PipelineView
from profiler_kit.render.html.figures import Chart, axis, ms, series_color
from profiler_kit.render.wording import units

ACROSS_RANKS = "Across ranks"


def job_charts(jobs: Sequence[JobView]) -> list[Chart]:
    """Per job: the wait/transfer chart when its ranks ran collectives that could be
    matched, the stage chart when they sent to each other (a pipeline)."""
    charts = []
    for job in jobs:
        if job.pipeline is not None and any(s.steps for s in job.pipeline.stages):
            charts.append(_pipeline_chart(job.name, job.pipeline, len(charts)))
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


def _pipeline_chart(name: str, p: PipelineView, index: int) -> Chart:
    """Each stage's step windows split into computation and bubble (they add up to the
    windows), with its time in send/recv and waiting for its peer on hover."""
    stages = [s for s in p.stages if s.steps]
    labels = [f"rank {s.rank}" for s in stages]
    hover = [[units.percent(s.bubble_share), units.duration(s.p2p_ns),
              units.duration(s.recv_wait_ns), units.duration(s.send_wait_ns)] for s in stages]
    data = [
        {"type": "bar", "name": "computation", "x": labels,
         "y": [ms(s.busy_ns) for s in stages], "marker": {"color": series_color(0)},
         "hovertemplate": "computation %{y:.4g} ms<extra>%{x}</extra>"},
        {"type": "bar", "name": "bubble", "x": labels,
         "y": [ms(s.bubble_ns) for s in stages], "marker": {"color": series_color(1)},
         "customdata": hover,
         "hovertemplate": "bubble %{y:.4g} ms (%{customdata[0]}); in send/recv "
                          "%{customdata[1]}, waiting in recv %{customdata[2]}, in send "
                          "%{customdata[3]}<extra>%{x}</extra>"},
    ]
    whole = "" if p.bubble_share is None else (
        f" On one aligned timeline the pipeline's bubble is {units.percent(p.bubble_share)} "
        "of its rank-time.")
    return Chart(
        id=f"job-pipeline-{index}", section=ACROSS_RANKS,
        title=f"Pipeline stages of {name}: computation and bubble per rank",
        caption="Each rank's step windows (summed over its steps) split into computation and "
                "bubble, the time without computation; hover for its time in send/recv and "
                f"waiting for its peer.{whole}",
        data=data,
        layout={"barmode": "stack", "yaxis": axis("time in the steps (ms)"),
                "xaxis": axis("")},
    )
