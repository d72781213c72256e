"""Charts of one scenario's own question: ``ddp`` scaling from a DDP benchmark report
(``ddp_report.json``), and from the run's results ``multimodel`` step time against N with its
phases and ``pipeline`` throughput per schedule with each rank's bubble."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from profiler_kit.render.html.figures import Chart, axis, ms, series_color
from profiler_kit.render.html.run_charts import colors_of, measured
from profiler_kit.results import RunResult


def ddp_report_charts(report: Mapping[str, Any]) -> list[Chart]:
    """p50/p95 seconds per iteration and scaling efficiency against world size, one line
    per benchmark (model, batch and bucket size) of a DDP benchmark report."""
    benches = [b for b in report.get("benchmark_results", []) if b.get("result")]
    if not benches:
        return []
    meta = report.get("metadata") or {}
    section = f"DDP scaling ({meta.get('run_id') or meta.get('device') or 'report'})"
    times: list[dict[str, Any]] = []
    efficiency: list[dict[str, Any]] = []
    for i, b in enumerate(benches):
        name = _bench_name(b)
        rows = [r for r in b["result"] if r.get("ddp", True)]
        worlds = [r.get("world_size", len(r.get("ranks", []))) for r in rows]
        for pct, dash in (("p50", "solid"), ("p95", "dot")):
            times.append({
                "type": "scatter", "mode": "lines+markers", "name": f"{name} {pct}",
                "legendgroup": name, "x": worlds,
                "y": [r["times"]["sec_per_iter"].get(pct) for r in rows],
                "line": {"color": series_color(i), "dash": dash},
                "hovertemplate": f"{pct} %{{y:.4g}} s/iter at world size %{{x}}"
                                 f"<extra>{name}</extra>",
            })
        base = next((r for r in b["result"] if not r.get("ddp", True)), None)
        if base is not None:
            times.append({
                "type": "scatter", "mode": "markers", "name": f"{name} no DDP p50",
                "legendgroup": name, "x": [1], "y": [base["times"]["sec_per_iter"].get("p50")],
                "marker": {"color": series_color(i), "symbol": "diamond-open", "size": 11},
                "hovertemplate": "no DDP, p50 %{y:.4g} s/iter<extra>" f"{name}</extra>",
            })
        if any(r.get("scaling_efficiency") is not None for r in rows):
            efficiency.append({
                "type": "scatter", "mode": "lines+markers", "name": name, "x": worlds,
                "y": [r.get("scaling_efficiency") for r in rows],
                "line": {"color": series_color(i)},
                "hovertemplate": "efficiency %{y:.3f} at world size %{x}"
                                 f"<extra>{name}</extra>",
            })
    world_axis = axis("world size (ranks)", dtick=1)
    charts = [Chart(
        id="ddp-seconds", section=section, title="Seconds per iteration against world size",
        caption="p50 (solid) and p95 (dotted) seconds per iteration of the slowest rank per "
                "DDP configuration, one colour per model, batch and bucket size; the diamond "
                "is the run without DDP.",
        data=times, layout={"xaxis": world_axis, "yaxis": axis("s/iter", rangemode="tozero")},
    )]
    if efficiency:
        charts.append(Chart(
            id="ddp-efficiency", section=section, title="Scaling efficiency",
            caption="Median aggregate examples/s over world size times the no-DDP median "
                    "examples/s: 1.0 is perfect scaling, DDP's overhead shows below it.",
            data=efficiency,
            layout={"xaxis": world_axis, "yaxis": axis("efficiency", rangemode="tozero"),
                    "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1,
                                "y1": 1, "line": {"dash": "dash", "width": 1,
                                                  "color": "#888"}}]},
        ))
    return charts


def _bench_name(b: Mapping[str, Any]) -> str:
    parts = [str(b.get("model") or "model"), f"batch {b.get('batch_size')}"]
    if b.get("bucket_size") is not None:
        parts.append(f"bucket {b['bucket_size']} MB")
    return ", ".join(parts)


def multimodel_charts(run: RunResult, colors: Mapping[str, str] | None = None
                      ) -> list[Chart]:
    """Median step against N per strategy (log-log) in the strategy's colour (``colors``:
    the report's, by name), and the phases' medians at each N."""
    done = [s for s in measured(run) if "n_model" in s.point_params]
    if not done:
        return []
    colors = colors or colors_of(run)
    names = list(dict.fromkeys(s.name for s in done))
    lines = []
    for name in names:
        mine = sorted((s for s in done if s.name == name), key=lambda s: s.point_params["n_model"])
        lines.append({
            "type": "scatter", "mode": "lines+markers", "name": name,
            "x": [s.point_params["n_model"] for s in mine],
            "y": [ms(s.stats.median_ns) for s in mine if s.stats],
            "line": {"color": colors[name]},
            "hovertemplate": "N=%{x}: %{y:.4g} ms<extra>" f"{name}</extra>",
        })
    charts = [Chart(
        id="multimodel-scaling", section="N models at once",
        title="Step time against the number of models",
        caption="Median training step per strategy against N, both axes logarithmic: a slope "
                "of 1 is a cost linear in N, flatter is batching paying off.",
        data=lines,
        layout={"xaxis": axis("N (models)", type="log"),
                "yaxis": axis("median step (ms)", type="log")},
    )]
    phases = list(dict.fromkeys(p for s in done for p in s.phases))
    if phases:
        order = sorted(done, key=lambda s: (s.point_params["n_model"], names.index(s.name)))
        x = [[f"N={s.point_params['n_model']}" for s in order], [s.name for s in order]]
        data = [{
            "type": "bar", "name": phase, "x": x,
            "y": [ms(s.phases[phase].median_ns) if phase in s.phases else None for s in order],
            "marker": {"color": series_color(j)},
            "hovertemplate": f"{phase} %{{y:.4g}} ms<extra>%{{x}}</extra>",
        } for j, phase in enumerate(phases)]
        charts.append(Chart(
            id="multimodel-phases", section="N models at once", title="Where a step goes",
            caption="Median time of each phase (each synchronized and timed on its own), "
                    "stacked per strategy at each N.",
            data=data, layout={"barmode": "stack", "yaxis": axis("median (ms)"),
                               "xaxis": axis("")},
        ))
    return charts


def pipeline_charts(run: RunResult, colors: Mapping[str, str] | None = None) -> list[Chart]:
    """Throughput per schedule (a strategy, in its colour) against micro-batches, and each
    rank's bubble."""
    done = measured(run)
    if not done:
        return []
    colors = colors or colors_of(run)
    unit = run.item_unit or "samples"
    names = list(dict.fromkeys(s.name for s in done))

    def micro(s: Any) -> Any:
        return s.point_params.get("micro_batches", run.params.get("micro_batches"))

    data = []
    for name in names:
        mine = sorted((s for s in done if s.name == name), key=lambda s: micro(s) or 0)
        data.append({
            "type": "scatter", "mode": "lines+markers", "name": name,
            "x": [micro(s) for s in mine], "y": [s.throughput_items_per_s for s in mine],
            "line": {"color": colors[name]}, "marker": {"size": 10},
            "hovertemplate": f"%{{y:.4g}} {unit}/s with %{{x}} micro-batches"
                             f"<extra>{name}</extra>",
        })
    charts = [Chart(
        id="pipeline-throughput", section="Pipeline schedules",
        title="Throughput per schedule",
        caption=f"Global {unit}/s at the median step per schedule (and ddp) against the "
                "micro-batch count.",
        data=data, layout={"xaxis": axis("micro-batches", type="category"),
                           "yaxis": axis(f"{unit}/s", rangemode="tozero")},
    )]
    with_bubble = [s for s in done if s.info.get("idle_share_by_rank")]
    if with_bubble:
        ranks = max(len(s.info["idle_share_by_rank"]) for s in with_bubble)
        charts.append(Chart(
            id="pipeline-bubble", section="Pipeline schedules", title="Bubble per rank",
            caption="Share of the profiled step each rank spends waiting: no GPU activity on "
                    "a GPU; on the CPU, communication outstanding with no computation.",
            data=[{
                "type": "bar", "name": f"rank {r}", "x": [s.label for s in with_bubble],
                "y": [(list(s.info["idle_share_by_rank"]) + [None] * ranks)[r]
                      for s in with_bubble],
                "marker": {"color": series_color(r)},
                "hovertemplate": f"rank {r}: %{{y:.1%}}<extra>%{{x}}</extra>",
            } for r in range(ranks)],
            layout={"barmode": "group", "yaxis": axis("bubble (share of the step)",
                                                      tickformat=".0%", rangemode="tozero"),
                    "xaxis": axis("")},
        ))
    return charts


_BY_SCENARIO: dict[str, Callable[[RunResult, Mapping[str, str] | None], list[Chart]]] = {
    "multimodel": multimodel_charts,
    "pipeline": pipeline_charts,
}


def scenario_charts(run: RunResult, colors: Mapping[str, str] | None = None) -> list[Chart]:
    chart = _BY_SCENARIO.get(run.scenario)
    return chart(run, colors) if chart else []
