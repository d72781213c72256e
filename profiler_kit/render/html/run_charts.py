"""Charts drawn from a run's results (run.json): strategies side by side (step-time
distribution, throughput and speed-up, profiler overhead). Every number is a result field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from profiler_kit import results
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import (
    NEUTRAL,
    NEUTRAL_SAMPLES,
    Chart,
    axis,
    ms,
    strategy_colors,
)
from profiler_kit.render.wording import speedup_noise
from profiler_kit.results import OK, RunResult, StrategyResult

STRATEGIES = "Strategies side by side"
WIDE_SPAN = 20  # max / min sample above which step times are drawn on a log axis


def measured(run: RunResult) -> list[StrategyResult]:
    """The strategies that ran and have statistics, in run order."""
    return [s for s in run.strategies if s.status == OK and s.stats is not None]


def trace_owners(analyses: Sequence[TraceAnalysis], runs: Sequence[RunResult]
                 ) -> dict[str, tuple[RunResult, StrategyResult]]:
    """The run strategy each trace is of, by the trace's path: the strategy that names the
    file (run.json's ``trace_files``, relative to the run folder, which may have moved
    since), else the one whose folder holds it. Traces of no run are left out."""
    files: dict[tuple[str, ...], tuple[RunResult, StrategyResult]] = {}
    folders: dict[tuple[str, ...], tuple[RunResult, StrategyResult]] = {}
    for run in runs:
        for s in run.strategies:
            files.update({PurePath(f).parts: (run, s) for f in s.trace_files})
            if s.dir:
                folders[PurePath(s.dir).parts] = (run, s)
    found = {}
    for a in analyses:
        parts = PurePath(a.path).parts
        owner = next((files[parts[i:]] for i in range(len(parts)) if parts[i:] in files),
                     None) or next((folders[parts[i:j]] for j in range(len(parts) - 1, 0, -1)
                                    for i in range(j) if parts[i:j] in folders), None)
        if owner is not None:
            found[a.path] = owner
    return found


def colors_of(run: RunResult) -> dict[str, str]:
    """Each strategy's colour, by name (the same at every point of a sweep)."""
    return strategy_colors(s.name for s in run.strategies)


def step_time_chart(run: RunResult, colors: Mapping[str, str] | None = None) -> Chart | None:
    """Box per strategy from its statistics (p25, p50, p75, min, max) in the strategy's
    colour, p95 marked and the samples in grey. ``colors``: the report's, by strategy."""
    done = measured(run)
    if not done:
        return None
    colors = colors or colors_of(run)
    labels = [s.label for s in done]
    stats = [s.stats for s in done]
    data: list[dict[str, Any]] = [{
        "type": "box", "name": s.label, "x": [s.label], "showlegend": False,
        # run.json keeps p75 and the IQR (p75 - p25); the box's lower edge is p25
        "q1": [ms(st.p75_ns - st.iqr_ns)], "median": [ms(st.p50_ns)], "q3": [ms(st.p75_ns)],
        "lowerfence": [ms(st.min_ns)], "upperfence": [ms(st.max_ns)],
        "marker": {"color": colors[s.name]}, "boxpoints": False,
    } for s, st in zip(done, stats, strict=True)]
    data += [{
        "type": "scatter", "mode": "markers", "name": "p95", "x": labels,
        "y": [ms(st.p95_ns) for st in stats],
        "marker": {"symbol": "line-ew-open", "size": 30, "color": NEUTRAL,
                   "line": {"width": 3}},
        "hovertemplate": "p95 %{y:.4g} ms<extra>%{x}</extra>",
    }, {
        "type": "scatter", "mode": "markers", "name": "samples",
        "x": [label for s, label in zip(done, labels, strict=True) for _ in s.samples_ns],
        "y": [ms(v) for s in done for v in s.samples_ns],
        "marker": {"color": NEUTRAL_SAMPLES, "size": 5},
        "hovertemplate": "%{y:.4g} ms<extra>%{x}</extra>",
    }]
    n = max(st.n for st in stats)
    # samples spanning decades (a noisy machine, strategies far apart) read on a log axis
    wide = min(st.min_ns for st in stats) * WIDE_SPAN < max(st.max_ns for st in stats)
    return Chart(
        id="step-time", section=STRATEGIES, title="Step time per strategy",
        caption=f"Wall time of each timed iteration ({n} per strategy, after warm-up, every "
                "device synchronized): box from p25 to p75 with the median (p50) line, "
                "whiskers at min and max, in the strategy's colour; p95 marked and the "
                "samples in grey"
                + (f"; logarithmic axis, as the samples span more than {WIDE_SPAN}×." if wide
                   else "."),
        data=data,
        layout={"yaxis": axis("step time (ms)", type="log") if wide else
                axis("step time (ms)", rangemode="tozero"),
                "xaxis": axis(""), "boxmode": "overlay"},
    )


def throughput_chart(run: RunResult, colors: Mapping[str, str] | None = None) -> Chart | None:
    """Throughput per strategy, each bar labelled with its speed-up against the baseline."""
    done = [s for s in measured(run) if s.throughput_items_per_s is not None]
    if not done:
        return None
    colors = colors or colors_of(run)
    unit = run.item_unit or "items"
    baseline = run.baseline or "the baseline"
    legends = [speedup_noise.legend(run.at(p), baseline, results.best(run.at(p)) is not None)
               for p in run.point_labels]
    noise = " ".join(dict.fromkeys(line for line in legends if line))
    return Chart(
        id="throughput", section=STRATEGIES, title="Throughput and speed-up",
        caption=f"{unit.capitalize()} per second at the median step (all ranks together); "
                f"each bar is labelled with its speed-up against {baseline} (its throughput "
                "over the baseline's)." + (f" {noise[0].upper()}{noise[1:]}" if noise else ""),
        data=[{
            "type": "bar", "name": f"{unit}/s", "x": [s.label for s in done],
            "y": [s.throughput_items_per_s for s in done],
            "text": [speedup_noise.speedup(s) for s in done],
            "customdata": [speedup_noise.interval(s.noise) for s in done],
            "textposition": "outside", "cliponaxis": False,
            "marker": {"color": [colors[s.name] for s in done]},
            "hovertemplate": f"%{{y:.4g}} {unit}/s, %{{text}} %{{customdata}}"
                             "<extra>%{x}</extra>",
        }],
        layout={"yaxis": axis(f"{unit}/s", rangemode="tozero"), "xaxis": axis("")},
    )


def overhead_chart(run: RunResult, colors: Mapping[str, str] | None = None) -> Chart | None:
    """Median step of the timing pass beside the profiled pass's, both bars in the
    strategy's colour, the profiled one hatched: the two passes are no strategies."""
    done = [s for s in measured(run) if s.profiled is not None]
    if not done:
        return None
    colors = colors or colors_of(run)
    labels = [s.label for s in done]
    fill = [colors[s.name] for s in done]
    return Chart(
        id="overhead", section=STRATEGIES, title="Profiler overhead",
        caption=_overhead_caption(done),
        data=[
            {"type": "bar", "name": "timed median", "x": labels,
             "y": [ms(s.stats.median_ns) for s in done if s.stats],
             "marker": {"color": fill},
             "hovertemplate": "timed %{y:.4g} ms<extra>%{x}</extra>"},
            {"type": "bar", "name": "profiled median (hatched)", "x": labels,
             "y": [ms(s.profiled.median_ns) for s in done if s.profiled],
             "marker": {"color": fill, "pattern": {"shape": "/", "solidity": 0.45}},
             "hovertemplate": "profiled %{y:.4g} ms<extra>%{x}</extra>"},
        ],
        layout={"barmode": "group", "yaxis": axis("median step (ms)", rangemode="tozero"),
                "xaxis": axis("")},
    )


def _overhead_caption(done: list[StrategyResult]) -> str:
    """Only a profiled pass slower than the timed one shows a cost; one that is no slower
    says recording cost too little to measure, never a negative cost."""
    head = ("Median step time of the timing pass (no profiler, solid) beside the profiled "
            "pass's active steps (hatched)")
    slower = [s.label for s in done
              if s.stats and s.profiled and s.profiled.median_ns > s.stats.median_ns]
    rest = [s.label for s in done if s.label not in slower]
    cost = "the gap is what recording the trace cost, give or take the run's noise"
    none = "recording's cost was not measurable against the run's noise"
    if not rest:
        return f"{head}: the profiled pass is slower, and {cost}."
    if not slower:
        return f"{head}: the profiled pass was no slower, so {none}."
    return (f"{head}. Where the profiled pass is slower ({', '.join(slower)}), {cost}; "
            f"where it is no slower ({', '.join(rest)}), {none}.")


def run_charts(run: RunResult, colors: Mapping[str, str] | None = None) -> list[Chart]:
    colors = colors or colors_of(run)
    return [c for c in (step_time_chart(run, colors), throughput_chart(run, colors),
                        overhead_chart(run, colors)) if c]


def not_measured(run: RunResult) -> list[StrategyResult]:
    """Skipped, failed and interrupted strategies, for the report's list."""
    return [s for s in run.strategies if s.status != OK]
