"""A run's strategies predicted by the what-if replay from their counterparts' traces
(``sources/run_predictions``): the figures in run.json are the replay's, the errors are
(predicted - measured) / measured, and summary.md, the console and report.html show them.

The run folder is the main job's (``profkit run concurrent --amp`` on the CPU, from
tests/data); one variant gives the baseline a GPU trace, where ``precision`` predicts."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from msgspec.structs import replace
from rich.console import Console

from profiler_kit.analysis.whatif.changes import MeasuredOps, Precision
from profiler_kit.analysis.whatif.replay import replay, what_if
from profiler_kit.render.console import run as run_console
from profiler_kit.render.html import report as html_report
from profiler_kit.render.markdown.run import render_markdown
from profiler_kit.render.wording.predictions import prediction_note
from profiler_kit.results import Prediction, RunResult, read_run
from profiler_kit.sources.run_predictions import NOT_MODELED, predict_run
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"
GPU_TRACE = "v100_resnet50_tb_sample_step.json.gz"  # fp32 convolutions in autocast's reach


def _run(folder: Path) -> RunResult:
    from concurrent_run import concurrent_run

    return replace(read_run(concurrent_run(folder)), run_dir=folder)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> RunResult:
    return predict_run(_run(tmp_path_factory.mktemp("cpu")))


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory) -> RunResult:
    """The same run with a V100 trace as the baseline's and the twin's autocast in fp16."""
    folder = tmp_path_factory.mktemp("gpu")
    run = _run(folder)
    base = next(s for s in run.strategies if s.name == "sequential")
    (folder / base.trace_files[0]).write_bytes(gzip.decompress((DATA / GPU_TRACE).read_bytes()))
    run = replace(run, device="cuda", strategies=tuple(
        replace(s, amp_dtype="float16") if s.amp else s for s in run.strategies))
    return predict_run(run)


def _by_name(run: RunResult) -> dict[str, Prediction | None]:
    return {s.name: s.prediction for s in run.strategies}


def test_cpu_amp_twins_get_no_prediction_and_say_why(cpu_run) -> None:
    got = _by_name(cpu_run)
    assert got["sequential"] is None  # the baseline
    assert got["devices"] is None and got["devices+amp"] is None  # skipped
    for name, source in (("sequential+amp", "sequential"), ("threads+amp", "threads")):
        p = got[name]
        s = next(x for x in cpu_run.strategies if x.name == name)
        base = next(x for x in cpu_run.strategies if x.name == source)
        assert p is not None and p.change == "precision bf16" and p.source == source
        assert p.predicted_ns is None and p.error is None and p.trace_error is None
        assert p.note.startswith("no prediction: the trace ran on the CPU")
        assert [n["code"] for n in p.replay_notes] == ["precision_device_without_peaks"]
        assert prediction_note(p) == f"{p.note} (precision bf16: device (unnamed) is not in " \
                                     "the peak table; no change modeled)"
        assert p.measured_ns == s.stats.median_ns
        assert p.trace_step_ns == replay(load(cpu_run.run_dir / s.trace_files[0])
                                         ).measured_step_ns
        assert p.source_step_ns == replay(load(cpu_run.run_dir / base.trace_files[0])
                                          ).measured_step_ns
    threads = got["threads"]
    assert threads is not None and threads.change is None and threads.note == NOT_MODELED
    assert threads.note.startswith("no what-if models this strategy")


def test_a_gpu_baseline_is_predicted_with_the_twins_dtype(gpu_run) -> None:
    p = _by_name(gpu_run)["sequential+amp"]
    s = next(x for x in gpu_run.strategies if x.name == "sequential+amp")
    w = what_if(load(DATA / GPU_TRACE), changes=[Precision("fp16")]).replay
    assert p is not None and p.change == "precision fp16" and p.source == "sequential"
    assert p.predicted_ns == w.predicted_step_ns < w.measured_step_ns == p.source_step_ns
    assert p.trusted is w.trusted is True
    assert p.measured_ns == s.stats.median_ns
    # the timed step: the counterpart's timed median times the replay's ratio
    base = next(x for x in gpu_run.strategies if x.name == "sequential")
    assert p.timed_ns == pytest.approx(base.stats.median_ns * w.predicted_step_ns
                                       / w.replayed_step_ns)
    assert p.error == pytest.approx((p.timed_ns - p.measured_ns) / p.measured_ns)
    assert p.trace_error == pytest.approx((p.predicted_ns - p.trace_step_ns) / p.trace_step_ns)
    assert [n["code"] for n in p.replay_notes] == ["precision_modeled"]
    assert p.untrusted_because is None and p.lower_bound_share is None
    assert prediction_note(p).startswith("precision fp16: 294 fp32 GEMM/convolution kernels")


def test_fixed_delays_make_the_gain_a_lower_bound(tmp_path) -> None:
    """A baseline whose steps' GPU work waits much on what the trace lacks (31 % on this
    rank): the note says the gain is a lower bound."""
    trace = "a100_recsys_8gpu_rank3.json.gz"
    run = _run(tmp_path)
    base = next(s for s in run.strategies if s.name == "sequential")
    (tmp_path / base.trace_files[0]).write_bytes(gzip.decompress((DATA / trace).read_bytes()))
    run = replace(run, strategies=tuple(s for s in run.strategies
                                        if s.name in ("sequential", "sequential+amp")))
    p = _by_name(predict_run(run))["sequential+amp"]
    w = what_if(load(DATA / trace), changes=[Precision("bf16")]).replay
    assert w.fixed_delay_share > 0.1
    assert p is not None and p.predicted_ns == w.predicted_step_ns
    assert p.lower_bound_share == w.fixed_delay_share
    assert prediction_note(p).endswith(
        f"; the gain is a lower bound: the fixed delays of the steps' GPU work come to "
        f"{w.fixed_delay_share:.0%} of the steps' time and do not move")


def test_predictions_go_through_run_json(gpu_run) -> None:
    doc = json.loads(json.dumps(gpu_run.to_json()))
    amp = next(s for s in doc["strategies"] if s["name"] == "sequential+amp")
    assert set(amp["prediction"]) == set(Prediction.__struct_fields__)
    assert RunResult.from_json(doc) == gpu_run


def test_summary_console_and_html_show_predicted_measured_and_error(gpu_run) -> None:
    p = _by_name(gpu_run)["sequential+amp"]
    assert p is not None and p.predicted_ns and p.error is not None
    md = render_markdown(gpu_run)
    row = next(line for line in md.splitlines() if line.startswith("| sequential+amp | prec"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    from profiler_kit.render.wording import units

    base = next(x for x in gpu_run.strategies if x.name == "sequential")
    assert cells == ["sequential+amp", "precision fp16 on sequential",
                     units.duration(base.stats.median_ns), units.duration(p.timed_ns),
                     units.duration(p.measured_ns), units.signed_percent(p.error),
                     units.duration(p.trace_step_ns), units.signed_percent(p.trace_error)]
    assert "| threads | - |" in md and f"- threads: {NOT_MODELED}" in md
    assert "- threads+amp: no prediction: the trace ran on the CPU" in md

    buf = io.StringIO()
    run_console.render(Console(file=buf, width=200, color_system=None), gpu_run)
    out = buf.getvalue()
    assert "precision fp16 on sequential" in out and units.signed_percent(p.error) in out
    assert "no what-if models this strategy" in out

    page = html_report.render("run", [], runs=[gpu_run])
    assert 'id="whatif"' in page and "precision fp16 on sequential" in page
    assert units.signed_percent(p.error) in page and "no what-if models this strategy" in page
    # and as a chart: the counterpart's step, the prediction and the measurement, in ms
    from profiler_kit.render.html.whatif_charts import whatif_charts

    (chart,) = whatif_charts([], [gpu_run])
    source, predicted, measured = chart.data
    at = predicted["x"].index("sequential+amp")
    assert (source["y"][at], predicted["y"][at], measured["y"][at]) == (
        base.stats.median_ns / 1e6, p.timed_ns / 1e6, p.measured_ns / 1e6)
    assert "threads" not in predicted["x"]  # no what-if counterpart, no bar
    assert chart.id in page


def test_no_section_without_a_what_if_counterpart(cpu_run) -> None:
    plain = replace(cpu_run, strategies=tuple(s for s in cpu_run.strategies if not s.amp))
    assert "Predicted by the what-if replay" not in render_markdown(plain)
    assert 'id="whatif"' not in html_report.render("run", [], runs=[plain])


def test_tune_knobs_are_predicted_from_the_eager_baseline(tmp_path) -> None:
    """profkit tune: autocast is the baseline with ``precision``, cuda_graphs (and
    compile_reduce_overhead) the baseline with ``cuda-graphs``; channels_last is measured
    only (no torch to time with here: the record says so); threads and plain compile are
    not modeled. The concurrent run stands in for a tune run on a GPU:
    its sequential strategy is the eager baseline with the V100 trace."""
    from profiler_kit.analysis.whatif.changes import CudaGraphs

    run = _run(tmp_path)
    base = next(s for s in run.strategies if s.name == "sequential")
    (tmp_path / base.trace_files[0]).write_bytes(gzip.decompress((DATA / GPU_TRACE).read_bytes()))
    names = {"sequential": "eager", "sequential+amp": "autocast", "threads": "cuda_graphs",
             "threads+amp": "channels_last"}
    run = replace(run, scenario="tune", baseline="eager", device="cuda", strategies=tuple(
        replace(s, name=names[s.name], amp_dtype="float16" if s.amp else s.amp_dtype)
        for s in run.strategies if s.name in names))
    found = _by_name(predict_run(run))
    table = load(DATA / GPU_TRACE)
    amp, graphs, layout = found["autocast"], found["cuda_graphs"], found["channels_last"]
    assert amp.change == "precision fp16" and amp.source == "eager"
    assert amp.predicted_ns == what_if(table, changes=[Precision("fp16")]).replay.predicted_step_ns
    w = what_if(table, changes=[CudaGraphs()]).replay
    assert graphs.change == "cuda-graphs" and graphs.source == "eager"
    assert graphs.predicted_ns == w.predicted_step_ns < graphs.source_step_ns
    assert graphs.error == pytest.approx((graphs.timed_ns - graphs.measured_ns)
                                         / graphs.measured_ns)
    assert layout.change == "channels-last" and layout.predicted_ns is None
    assert "channels_last is measured, not modeled" in layout.note
    # profkit tune's answer prints them under its ranked table
    from profiler_kit.commands.tune import _answer
    from profiler_kit.scenarios import tune

    buf = io.StringIO()
    _answer(Console(file=buf, width=200, color_system=None), predict_run(run), tune)
    out = buf.getvalue()
    assert "Predicted by the what-if replay" in out and "cuda-graphs on eager" in out
    assert "precision fp16 on eager" in out and "channels_last: no prediction" in out


@pytest.mark.parametrize("knob", ["tf32", "compile"])
def test_tune_knobs_measured_only(knob, tmp_path) -> None:
    """tune's tf32 and compile knobs have no model in the replay: without a way to time
    the ops they say so; with one, the prediction is the baseline's ops timed so (TF32
    allowed; the chains of elementwise ops compiled)."""
    run = _run(tmp_path)
    run = replace(run, scenario="tune", baseline="sequential", strategies=tuple(
        replace(s, name=knob) if s.name == "threads" else s for s in run.strategies))
    found = _by_name(predict_run(run))[knob]
    assert found.change == knob and found.source == "sequential" and found.predicted_ns is None
    assert f"{knob} is measured, not modeled" in found.note
    asked = []

    def measure(tables, alternative):
        asked.append(alternative)
        return MeasuredOps(knob, "cpu", {}, {}, chains=knob == "compile")

    found = _by_name(predict_run(run, measure))[knob]
    assert asked.count(knob) == 1 and found.change == f"{knob} (measured)"
    assert found.predicted_ns == found.source_step_ns  # nothing measured moves: no change


def test_tune_autocast_on_the_cpu_says_why_there_is_no_prediction(cpu_run) -> None:
    run = replace(cpu_run, scenario="tune", baseline="sequential", strategies=tuple(
        replace(s, name="autocast", prediction=None) if s.name == "sequential+amp" else s
        for s in cpu_run.strategies if s.name in ("sequential", "sequential+amp")))
    p = _by_name(predict_run(run))["autocast"]
    assert p.change == "precision bf16" and p.predicted_ns is None
    assert p.note.startswith("no prediction: the trace ran on the CPU")


def test_cpu_amp_twins_are_predicted_from_their_ops_timed_here(tmp_path) -> None:
    """Where torch is at hand (profkit run), the twin's prediction times the counterpart
    trace's hot ops in bf16 on this machine: a number on the CPU too, the timed step from
    the counterpart's timed median."""
    pytest.importorskip("torch")
    from profiler_kit.sources.measured_ops import measure_on_this_machine

    run = _run(tmp_path)
    got = _by_name(predict_run(run, measure_on_this_machine()))
    p = got["sequential+amp"]
    assert p is not None and p.change == "precision bf16 (measured)"
    assert p.predicted_ns is not None and p.timed_ns is not None and p.error is not None
    assert "timed on cpu from the trace's shapes" in prediction_note(p)
    base = next(s for s in run.strategies if s.name == "sequential")
    assert p.timed_ns == pytest.approx(base.stats.median_ns * p.predicted_ns
                                       / p.source_step_ns, rel=0.03)  # replay within 3 %


def test_the_measured_twin_of_the_main_job_on_the_cpu_is_slower(tmp_path) -> None:
    """The main job's ops at its CPU sizes (2×3×32×32 images) run slower in bf16 autocast
    than in float32, casts included, even on this CPU with AMX-BF16: too small for the
    matrix units to repay the casts. The measured prediction says so (the main job's
    twins were predicted within 15 % of their timed medians, benchmarks/whatif_accuracy.md),
    where a peak ratio could only predict a gain."""
    pytest.importorskip("torch")
    from profiler_kit.sources.measured_ops import measure_tables

    table = load(DATA / "cpu_concurrent_sequential.pt.trace.json.gz")
    r = what_if(table, changes=[measure_tables([table], "bf16")]).replay
    assert r.predicted_step_ns > r.replayed_step_ns
