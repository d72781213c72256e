"""The data behind every chart of the HTML report: each number is the analysis's or
run.json's, checked here against the source or a hand computation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from profiler_kit.analysis.compare import compare
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.ddp_benchmark import report as ddp_report
from profiler_kit.errors import MissingDependency
from profiler_kit.render.html import report as html_report
from profiler_kit.render.html import run_charts as html_run_charts
from profiler_kit.render.html import scenario_charts as html_scenario_charts
from profiler_kit.render.html import trace_charts as trace_charts
from profiler_kit.results import RunResult, Stats, StrategyResult, read_run
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def run() -> RunResult:
    return read_run(DATA / "run_concurrent_cpu.json")


def raw_run() -> dict:
    """run.json as plain JSON: the independent side of the strategy charts' checks."""
    return json.loads((DATA / "run_concurrent_cpu.json").read_text())


def make_run(scenario: str, strategies: list[StrategyResult], **extra) -> RunResult:
    return RunResult(
        run_dir=Path("traces") / scenario / "r1", scenario=scenario, description="",
        baseline=strategies[0].name, item_unit=extra.pop("item_unit", "items"), device="cpu",
        params=extra.pop("params", {}), sweep=(), points=(), options={}, environment={},
        strategies=tuple(strategies), started_at="2026-01-01T00:00:00+00:00", **extra)


@pytest.fixture(scope="module")
def analyses():
    names = ("h100_vit_image_classification.json.gz", "cpu_torch_profiler.pt.trace.json.gz",
             "a100_ddp_nccl_rank0.json.gz")
    return [analyze_table(load(DATA / n), label=n.split(".")[0]) for n in names]


def test_step_time_box_is_the_samples_percentiles(run):
    chart = html_run_charts.step_time_chart(run)
    *boxes, p95, samples = chart.data
    ok = [s for s in raw_run()["strategies"] if s["status"] == "ok"]
    assert [b["x"] for b in boxes] == [["sequential"], ["sequential+amp"], ["threads"],
                                       ["threads+amp"]]
    for i, (s, box) in enumerate(zip(ok, boxes, strict=True)):
        ns = np.array(s["samples_ns"], dtype=float)
        assert box["q1"] == [pytest.approx(np.percentile(ns, 25) / 1e6)]
        assert box["median"] == [pytest.approx(np.median(ns) / 1e6)]
        assert box["q3"] == [pytest.approx(np.percentile(ns, 75) / 1e6)]
        assert (box["lowerfence"], box["upperfence"]) == ([ns.min() / 1e6], [ns.max() / 1e6])
        assert p95["y"][i] == pytest.approx(np.percentile(ns, 95) / 1e6)
    assert len(samples["y"]) == sum(len(s["samples_ns"]) for s in ok)
    assert "5 per strategy" in chart.caption
    # 26 ms (threads+amp) to 3.29 s (sequential): more than 20x apart, a log axis
    assert chart.layout["yaxis"]["type"] == "log" and "more than 20×" in chart.caption


def test_step_times_within_20x_on_a_linear_axis_from_zero(run):
    import msgspec

    sequential = msgspec.structs.replace(run, strategies=run.strategies[:1])  # 1.19-3.29 s
    chart = html_run_charts.step_time_chart(sequential)
    assert chart.layout["yaxis"]["rangemode"] == "tozero" and "logarithmic" not in chart.caption


def test_throughput_bars_and_speedup_labels(run):
    chart = html_run_charts.throughput_chart(run)
    (bars,) = chart.data
    ok = {s["name"]: s for s in raw_run()["strategies"] if s["status"] == "ok"}
    base = ok["sequential"]["items_per_step"] / ok["sequential"]["stats"]["median_ns"]
    for label, y, text in zip(bars["x"], bars["y"], bars["text"], strict=True):
        s = ok[label]
        # images per second at the median step, and this throughput over the baseline's
        rate = s["items_per_step"] / s["stats"]["median_ns"]
        assert y == pytest.approx(rate * 1e9)
        assert text == f"{rate / base:.2f}×"
    assert "sequential" in chart.caption and "Images" in chart.caption


def test_overhead_bars_are_the_two_medians(run):
    timed, profiled = html_run_charts.overhead_chart(run).data
    ok = [s for s in raw_run()["strategies"] if s["status"] == "ok"]
    assert timed["y"] == [np.median(s["samples_ns"]) / 1e6 for s in ok]
    assert profiled["y"] == [s["profiled"]["median_ns"] / 1e6 for s in ok]


def test_overhead_caption_calls_only_a_slower_profiled_pass_a_cost(run):
    import msgspec

    # in this run the profiled pass was faster for sequential+amp (917 ms against 1.52 s)
    # and threads (44 ms against 91 ms), slower for the other two
    caption = html_run_charts.overhead_chart(run).caption
    assert "Where the profiled pass is slower (sequential, threads+amp), the gap is what " \
           "recording the trace cost" in caption
    assert "where it is no slower (sequential+amp, threads), recording's cost was not " \
           "measurable" in caption

    def profiled_at(s: StrategyResult, factor: float) -> StrategyResult:
        faster = msgspec.structs.replace(s.profiled, median_ns=s.stats.median_ns * factor)
        return msgspec.structs.replace(s, profiled=faster)

    ok = [s for s in run.strategies if s.status == "ok"]
    slower = msgspec.structs.replace(run, strategies=tuple(profiled_at(s, 1.1) for s in ok))
    caption = html_run_charts.overhead_chart(slower).caption
    assert "the gap is what recording the trace cost" in caption
    assert "not measurable" not in caption and "no slower" not in caption
    faster = msgspec.structs.replace(run, strategies=tuple(profiled_at(s, 0.9) for s in ok))
    caption = html_run_charts.overhead_chart(faster).caption
    assert "cost was not measurable" in caption and "gap" not in caption


def test_no_measured_strategy_no_strategy_charts():
    run = make_run("x", [StrategyResult(name="a", status="skipped", reason="needs CUDA")])
    assert html_run_charts.run_charts(run) == []


def test_class_bars_stack_to_the_breakdown_total(analyses):
    gpu = trace_charts.class_breakdown_chart(analyses, "gpu")
    with_gpu = [a for a in analyses if a.has_gpu]
    assert gpu.data[0]["x"] == [a.label for a in with_gpu]
    for i, a in enumerate(with_gpu):
        stacked = sum(trace["y"][i] for trace in gpu.data)
        # every kernel/memcpy/memset total, from the kernel table, in ms
        assert stacked == pytest.approx(sum(k.total_ns for k in a.kernels) / 1e6)
    gemm = next(t for t in gpu.data if t["name"] == "gemm")
    assert gemm["y"][1] == pytest.approx(with_gpu[1].gpu.ns("gemm") / 1e6)
    cpu = trace_charts.class_breakdown_chart(analyses, "cpu")
    assert len(cpu.data[0]["x"]) == 3
    assert trace_charts.class_breakdown_chart(analyses[1:2], "gpu") is None  # CPU only


def test_profiled_step_points_are_the_steps(analyses):
    chart = trace_charts.profiled_steps_chart(analyses)
    points = chart.data[0::2]
    medians = chart.data[1::2]
    for a, pts, med in zip(analyses, points, medians, strict=True):
        device = a.has_gpu  # GPU traces lead with the device-side step time
        assert a.steps.headline == ("device" if device else "cpu")
        assert pts["y"] == [(s.device_dur_ns if device else s.dur_ns) / 1e6
                            for s in a.steps.steps]
        assert med["y"] == [np.median([(s.device_dur_ns if device else s.dur_ns)
                                       for s in a.steps.steps]) // 1 / 1e6]
    assert "device side" in chart.caption and "CPU side" in chart.caption


def test_step_breakdown_adds_up_to_the_steps(analyses):
    chart = trace_charts.step_breakdown_chart(analyses)
    assert chart.data[0]["x"] == [a.label for a in analyses]
    for i, a in enumerate(analyses):
        stacked = sum(part["y"][i] for part in chart.data)
        side = sum((s.device_dur_ns if a.has_gpu else s.dur_ns) for s in a.steps.steps)
        assert stacked == pytest.approx(side / 1e6)
    kernel = next(p for p in chart.data if p["name"] == "kernel")
    assert kernel["y"][1] == 0  # the CPU-only trace runs no kernel


def test_timeline_payload_is_the_step_timeline(analyses):
    charts = trace_charts.timeline_charts(analyses)
    assert len(charts) == 3
    for chart, a in zip(charts, analyses, strict=True):
        t, st = chart.timeline, a.step_timeline
        assert len(t["row"]) == len(st.lane) == len(t["dur_ns"]) == len(t["klass"])
        assert t["dur_ns"] == list(st.dur_ns) and t["offset_ns"] == list(st.offset_ns)
        assert [t["names"][i] for i in t["name"]] == [st.names[i] for i in st.name]
        assert t["rows"] == sum(lane.rows for lane in st.lanes)
        assert [lane["label"] for lane in t["lanes"]] == [lane.label for lane in st.lanes]
        assert f"ProfilerStep#{st.step}" in chart.caption
        assert chart.note == ""


def test_ranks_of_one_strategy_share_a_timeline(tmp_path):
    folder = tmp_path / "ddp-w2"
    folder.mkdir()
    two = []
    for rank in (0, 1):
        table = load(DATA / "a100_ddp_nccl_rank0.json.gz")  # the same trace as both ranks
        table.meta.path = str(folder / f"rank{rank}.json.gz")
        table.meta.rank = rank
        two.append(analyze_table(table, label=f"ddp-w2/rank{rank}.1795382492503719955"))
    (chart,) = trace_charts.timeline_charts(two)
    assert chart.title == "One step of ddp-w2"
    # a rank's worker name and timestamp are shortened to the rank on the charts
    bars = trace_charts.class_breakdown_chart(two, "gpu")
    assert bars.data[0]["x"] == ["ddp-w2 rank 0", "ddp-w2 rank 1"]
    labels = [lane["label"] for lane in chart.timeline["lanes"]]
    assert labels[0].startswith("rank 0 · ") and labels[-1].startswith("rank 1 · ")
    assert len(chart.timeline["row"]) == sum(len(a.step_timeline.lane) for a in two)


def test_downsampled_timeline_says_so(analyses):
    import msgspec

    a = analyses[0]
    st = a.step_timeline
    keep = 10
    small = msgspec.structs.replace(
        st, lane=st.lane[:keep], depth=st.depth[:keep], offset_ns=st.offset_ns[:keep],
        dur_ns=st.dur_ns[:keep], name=st.name[:keep], klass=st.klass[:keep])
    (chart,) = trace_charts.timeline_charts([msgspec.structs.replace(a, step_timeline=small)])
    assert chart.note.startswith(f"Downsampled: the 10 longest of {st.intervals_total:,}")


def test_memory_lines_are_the_memory_timeline(analyses):
    charts = trace_charts.memory_charts(analyses)
    assert [c.title for c in charts] == ["Memory over time on cpu", "Memory over time on cuda:0"]
    cuda = charts[1]
    allocated, reserved, peak = cuda.data
    series = analyses[0].memory_timeline.devices[1]
    assert series.device == "cuda:0"
    assert allocated["y"] == [b / 2**20 for b in series.allocated_bytes]
    assert reserved["y"] == [b / 2**20 for b in series.reserved_bytes]
    assert peak["y"] == [analyses[0].memory.devices[1].peak_allocated_bytes / 2**20]
    assert peak["text"] == ["peak 221 MiB"]  # 231,332,864 bytes
    assert cuda.layout["yaxis"]["title"]["text"] == "MiB"
    # on the CPU the larger peak is 163,248 bytes (cpu_torch_profiler): the axis is in KiB
    vit_cpu, _, small_cpu, _ = charts[0].data
    assert charts[0].layout["yaxis"]["title"]["text"] == "KiB"
    assert vit_cpu["y"] == [b / 1024 for b in analyses[0].memory_timeline.devices[0]
                            .allocated_bytes]
    assert max(small_cpu["y"]) == 163248 / 1024


def _ddp_run() -> RunResult:
    def strategy(name: str, secs: list[float]) -> StrategyResult:
        return StrategyResult(
            name=name, status="ok", samples_ns=tuple(int(s * 1e9) for s in secs), dir=name,
            point_params={"model": "resnet18", "batch_size": 8, "image_size": 32,
                          "bucket_cap_mb": 25.0})
    return make_run("ddp", [strategy("no-ddp", [0.1, 0.1, 0.1]),
                            strategy("ddp-w1", [0.11, 0.12, 0.13]),
                            strategy("ddp-w2", [0.2, 0.25, 0.4])],
                    params={"bucket_cap_mb": 25.0})


def test_ddp_charts_from_the_report():
    report = ddp_report.build(_ddp_run())
    seconds, efficiency = html_scenario_charts.ddp_report_charts(report)
    p50, p95, no_ddp = seconds.data
    assert p50["x"] == [1, 2] and p50["y"] == [0.12, 0.25]
    assert p95["y"] == pytest.approx([np.percentile([0.11, 0.12, 0.13], 95),
                                      np.percentile([0.2, 0.25, 0.4], 95)])
    assert no_ddp["y"] == [0.1]
    # examples/s at p50: 8/0.12 on one rank, 16/0.25 on two; no-DDP 8/0.1
    assert efficiency.data[0]["y"] == pytest.approx([(8 / 0.12) / (8 / 0.1),
                                                     (16 / 0.25) / (2 * 8 / 0.1)])
    assert "bucket 25.0 MB" in p50["name"]


def _stats(median_ms: float) -> Stats:
    ns = median_ms * 1e6
    return Stats(n=3, median_ns=ns, iqr_ns=0.0, mean_ns=ns, p50_ns=ns, p75_ns=ns, p90_ns=ns,
                 p95_ns=ns, min_ns=int(ns), max_ns=int(ns))


def test_multimodel_log_log_and_phase_split():
    strategies = []
    for n in (1, 8, 32):
        for name, per_model in (("linear", 1.0), ("gconv1d", 0.25)):
            strategies.append(StrategyResult(
                name=name, status="ok", point=f"n_model={n}", point_params={"n_model": n},
                stats=_stats(per_model * n),
                phases={"forward": _stats(per_model * n * 0.4),
                        "backward": _stats(per_model * n * 0.6)}))
    lines, phases = html_scenario_charts.scenario_charts(make_run("multimodel", strategies))
    linear, gconv = lines.data
    assert linear["x"] == [1, 8, 32] and linear["y"] == [1.0, 8.0, 32.0]
    assert gconv["y"] == [0.25, 2.0, 8.0]
    assert lines.layout["xaxis"]["type"] == lines.layout["yaxis"]["type"] == "log"
    forward, backward = phases.data
    assert forward["x"][0] == ["N=1", "N=1", "N=8", "N=8", "N=32", "N=32"]
    assert forward["x"][1][:2] == ["linear", "gconv1d"]
    assert forward["y"][4] == pytest.approx(32 * 0.4)
    assert backward["y"][5] == pytest.approx(0.25 * 32 * 0.6)


def test_pipeline_throughput_and_bubble():
    strategies = []
    for m in (2, 4):
        for name, rate, bubble in (("ddp", 100.0, [0.1, 0.1]), ("gpipe", 50.0 * m, [0.3, 0.5])):
            strategies.append(StrategyResult(
                name=name, status="ok", point=f"micro_batches={m}",
                point_params={"micro_batches": m}, stats=_stats(10),
                throughput_items_per_s=rate, info={"idle_share_by_rank": bubble}))
    strategies.append(StrategyResult(name="1f1b", status="skipped", point="micro_batches=2",
                                     reason="fewer micro-batches than stages"))
    run = make_run("pipeline", strategies, item_unit="samples")
    throughput, bubble = html_scenario_charts.scenario_charts(run)
    ddp, gpipe = throughput.data
    assert (gpipe["x"], gpipe["y"]) == ([2, 4], [100.0, 200.0])
    assert ddp["y"] == [100.0, 100.0]
    rank0, rank1 = bubble.data
    assert rank1["x"][1] == "micro_batches=2/gpipe" and rank1["y"][1] == 0.5


def test_page_is_self_contained(analyses, run):
    text = html_report.render("report <title>", analyses, compare(analyses), runs=[run],
                              subtitle="a & b")
    assert "plotly.js v" in text[:20_000] or "plotly.js" in text
    assert "<title>report &lt;title&gt;</title>" in text
    assert not re.search(r"<script[^>]+src=", text)
    assert not re.search(r"<link[^>]+href=", text)
    payload = text.split('<script type="application/json" id="profkit-charts">')[1]
    charts = json.loads(payload.split("</script>")[0])
    ids = [c["id"] for c in charts]
    assert len(ids) == len(set(ids))
    assert {"step-time", "throughput", "overhead", "gpu-classes", "cpu-classes"} <= set(ids)
    assert sum(c["kind"] == "timeline" for c in charts) == 3
    for c in charts:
        assert f'id="{c["id"]}"' in text and c["caption"]
    assert "Parameters and environment" in text and "needs CUDA" in text


def test_script_json_cannot_close_the_script():
    assert "</script>" not in html_report._script_json({"name": "</script><b>"})


def test_missing_plotly_says_how_to_install(monkeypatch):
    def missing(name):
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(html_report.resources, "files", missing)
    with pytest.raises(MissingDependency, match=r"pip install 'profkit\[report\]'"):
        html_report.plotly_js()


def test_every_class_has_its_own_colour():
    from profiler_kit.analysis.core import classify
    from profiler_kit.render.html.figures import CLASS_COLORS

    assert set(CLASS_COLORS) == set(classify.CLASSES)
    assert len(set(CLASS_COLORS.values())) == len(CLASS_COLORS)


def test_a_class_has_one_colour_in_every_chart(analyses):
    """The class bars, the step split, the timelines and the rooflines of one report colour
    a class alike (the rooflines and the step split once took colours by series order)."""
    from profiler_kit.analysis.core.steps import STEP_PARTS
    from profiler_kit.analysis.perf import perf_model
    from profiler_kit.render.html.figures import (
        CLASS_COLORS,
        FAMILY_COLORS,
        STEP_PART_COLORS,
        class_color,
    )

    kinds = set(perf_model.FAMILIES) | set(CLASS_COLORS)
    seen: dict[str, set[str]] = {}
    charts = html_report.charts_for(analyses, comparison=compare(analyses))
    for chart in charts:
        for trace in chart.data:
            if trace.get("name") in kinds:
                seen.setdefault(trace["name"], set()).add(trace["marker"]["color"])
        if chart.timeline is not None:
            for klass, color in zip(chart.timeline["classes"], chart.timeline["colors"],
                                    strict=True):
                seen.setdefault(klass, set()).add(color)
    ids = {c.id for c in charts}
    assert {"gpu-classes", "cpu-classes", "roofline-0", "roofline-1"} <= ids
    assert {"gemm", "convolution", "elementwise"} <= set(seen)
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}
    assert all(colors == {class_color(k)} for k, colors in seen.items())
    # the perf model's families and the step split's parts that are no class have colours
    # no class has
    assert set(FAMILY_COLORS) == set(perf_model.FAMILIES) - set(CLASS_COLORS)
    assert set(STEP_PART_COLORS) == {f for f, _ in STEP_PARTS} - set(CLASS_COLORS)
    others = [*FAMILY_COLORS.values(), *STEP_PART_COLORS.values()]
    assert len(set(others)) == len(others) and not set(others) & set(CLASS_COLORS.values())


def test_job_chart_splits_wait_and_transfer_and_names_the_straggler():
    from test_job import MS, summary

    from profiler_kit.analysis.job_analysis import analyze_job
    from profiler_kit.render.html.job_charts import job_charts

    # rank 2 arrives last in every step (the job view's own hand-checked case)
    job = analyze_job([summary(0, [(10, 60), (110, 160), (210, 255)], world=3),
                       summary(1, [(20, 60), (130, 161), (220, 255)], world=3),
                       summary(2, [(50, 61), (150, 160), (240, 256)], world=3)])
    (chart,) = job_charts([job])
    wait, transfer = chart.data
    assert wait["x"] == ["rank 0", "rank 1", "rank 2 (straggler)"]
    assert wait["y"] == [110 * MS / 1e6, 70 * MS / 1e6, 0.0]
    assert transfer["y"] == [35.0, 36.0, 37.0]
    assert "rank 2 arrived last in 3 of 3" in chart.caption and "30 ms per step" in chart.caption


def test_waterfall_is_the_comparisons_step_change(analyses):
    from profiler_kit.render.html.diff_charts import waterfall_charts

    comparison = compare(analyses)  # baseline: h100_vit; a100_ddp on the same (device) side
    fall = next(w for w in comparison.steps.waterfalls if w is not None)
    (chart,) = waterfall_charts(comparison)
    (trace,) = chart.data
    moved = [t for t in fall.terms if t.delta_ns != 0]
    assert trace["x"] == [comparison.labels[comparison.steps.baseline],
                          *(t.name for t in moved), fall.label]
    assert trace["measure"] == ["absolute", *["relative"] * len(moved), "total"]
    assert trace["y"][0] == fall.before_ns / 1e6 and trace["y"][-1] == fall.after_ns / 1e6
    # the bars walk from one step time to the other
    assert sum(trace["y"][:-1]) == pytest.approx(trace["y"][-1])
    assert waterfall_charts(None) == []


def test_roofline_points_are_the_perf_models_groups(analyses):
    from profiler_kit.render.html.roofline_charts import roofline_charts

    vit, cpu, _ = analyses
    charts = roofline_charts([vit, cpu])
    assert [c.title for c in charts] == ["Roofline of h100_vit_image_classification",
                                         "Roofline of cpu_torch_profiler"]
    gpu_chart, cpu_chart = charts
    points = [t for t in gpu_chart.data if t["mode"] == "markers"]
    shown = sorted((x, y) for t in points for x, y in zip(t["x"], t["y"], strict=True))
    groups = [g for g in vit.perf.groups if g.intensity_flops_per_byte and g.flops_per_s]
    assert shown == sorted((g.intensity_flops_per_byte, g.flops_per_s) for g in groups)
    # H100 SXM: 3.35 TB/s; the bf16 dense ceiling 989.5 TFLOP/s meets it at 295 FLOP/byte
    roof = next(t for t in gpu_chart.data if t["name"] == "ceiling 989.5 TFLOP/s")
    assert roof["x"][1] == pytest.approx(989.5 / 3.35) and roof["y"][1] == 989.5e12
    assert roof["y"][0] == pytest.approx(roof["x"][0] * 3.35e12)
    # a CPU trace has rates but no device peaks: points and no roof
    assert all(t["mode"] == "markers" for t in cpu_chart.data)
    assert "no device peaks" in cpu_chart.caption
    # what share of the compute time the points stand for, and the MFU that allows
    from profiler_kit.render.wording import units
    perf = vit.perf
    assert perf.modelled_share is not None
    assert f"cover {units.percent(perf.modelled_share)} of the GPU compute time" \
        in gpu_chart.caption
    if perf.mfu_partial:
        assert "too little for a model FLOP utilization" in gpu_chart.caption
    else:
        assert f"utilization {units.percent(perf.model_flops_utilization)}" in gpu_chart.caption
    assert "cover" not in cpu_chart.caption  # a CPU trace has no GPU compute time
    # what the rates are measured over, in words that read
    assert "over the GPU time of each op's kernels, against" in gpu_chart.caption
    assert "over each op's CPU time, against" in cpu_chart.caption
    assert "the each" not in gpu_chart.caption + cpu_chart.caption


def test_a_roofline_of_a_fifth_of_the_work_says_so():
    """B200 vLLM: the modelled ops cover 22 % of the compute time (MoE and attention are
    custom ops without a model), so the caption withholds MFU instead of showing one."""
    from real_traces import analysis

    from profiler_kit.render.html.roofline_charts import roofline_charts

    b200 = analysis("b200_vllm_eager.json.gz")
    (chart,) = roofline_charts([b200])
    assert b200.perf.mfu_partial and b200.perf.modelled_share == pytest.approx(0.22, abs=0.01)
    assert "cover 22.0 % of the GPU compute time; too little for a model FLOP utilization" \
        in chart.caption


def test_the_page_starts_with_the_answer_and_what_competed() -> None:
    """A run timed beside other work: the page's first lines are the busy-machine line
    (the competitor and its share of the cores) and the answer, before any chart."""
    from profiler_kit.contention import Competitor, RoundContention
    from profiler_kit.results import against_baseline, stats

    busy = RoundContention(wall_s=1.0, cores=2, others_cores=1.6, own_threads=2,
                           intra_op_threads=2, busiest=(Competitor("python (cpu_hog)", 1.5),))

    def timed(name: str, ms: float) -> StrategyResult:
        rounds = tuple(tuple(int(ms * 1e6 * (1 + 0.01 * (i % 3))) for i in range(8))
                       for _ in range(3))
        pooled = tuple(v for r in rounds for v in r)
        return StrategyResult(name=name, status="ok", samples_ns=pooled, stats=stats(pooled),
                              repeat_samples_ns=rounds, items_per_step=1,
                              throughput_items_per_s=1e9 / stats(pooled).median_ns,
                              contention=(busy,) * 3)

    strategies = against_baseline((timed("sequential", 20.0), timed("threads", 10.0)),
                                  "sequential")
    text = html_report.render("busy", [], runs=[make_run("concurrent", list(strategies))])
    body = text[text.index("<main"):]
    first_chart = body.index("<h2")
    busy_at = body.index("Busy machine:")
    answer_at = body.index('<p class="answer"><strong>Answer: threads is fastest, 2.00×')
    assert busy_at < answer_at < first_chart
    assert ("other processes used 1.6 of 2 cores during 6 of 6 timed rounds: "
            "python (cpu_hog) 1.5") in body[busy_at:answer_at]
