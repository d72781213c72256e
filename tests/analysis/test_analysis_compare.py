"""Comparison: deltas against the baseline, best per metric, labels for traces from folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_tables import kernel, make_table, op

from profiler_kit.analysis.compare import compare, label_traces
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.errors import UsageError
from profiler_kit.trace.table import Cat


def _run(label: str, step_ns: int, busy_ns: int):
    t = make_table([
        op("ProfilerStep#1", 0, step_ns, cat=Cat.USER_ANNOTATION),
        kernel("gemm_kernel", 0, busy_ns),
        kernel("elementwise_kernel", step_ns - 10, 10),
    ], path=f"{label}.json")
    return analyze_table(t, label=label)


def _metric(c, key):
    return next(m for m in c.metrics if m.key == key)


def test_deltas_and_best_against_the_baseline():
    runs = [_run("a", 1000, 500), _run("b", 500, 400), _run("c", 2000, 490)]
    c = compare(runs)
    assert c.labels == ("a", "b", "c") and c.baseline == 0
    step = _metric(c, "step_median_ns")
    assert step.values == (1000, 500, 2000)
    assert step.deltas == (0.0, -0.5, 1.0)
    assert step.best == 1
    idle = _metric(c, "gpu_idle_share")
    assert idle.best == 1  # 90 idle of 500 beats 500 of 1000 and 1500 of 2000
    gemm = _metric(c, "gpu_gemm_ns")
    assert gemm.values == (500, 400, 490) and gemm.best == 1


def test_baseline_by_label_and_errors():
    runs = [_run("a", 1000, 500), _run("b", 500, 400)]
    c = compare(runs, baseline="b")
    assert c.baseline == 1
    assert _metric(c, "step_median_ns").deltas == (1.0, 0.0)
    with pytest.raises(UsageError, match="none of"):
        compare(runs, baseline="zzz")
    with pytest.raises(UsageError):
        compare([])


def test_cpu_only_comparison_uses_cpu_self_time():
    def cpu(label, dur):
        return analyze_table(make_table([op("aten::mm", 0, dur)]), label=label)

    c = compare([cpu("x", 100), cpu("y", 50)])
    m = _metric(c, "cpu_gemm_self_ns")
    assert m.values == (100, 50) and m.best == 1
    assert not any(k.key.startswith("gpu") for k in c.metrics)


def test_labels_prefer_strategy_folders_then_file_names():
    run = Path("traces/concurrent/run1")
    assert label_traces([run / "sequential/w.pt.trace.json", run / "streams/w.pt.trace.json"]) \
        == ["sequential", "streams"]
    ranks = [run / "ddp/rank0.pt.trace.json.gz", run / "ddp/rank1.pt.trace.json.gz"]
    assert label_traces(ranks) == ["rank0", "rank1"]
    mixed = ranks + [run / "single/w.pt.trace.json"]
    assert label_traces(mixed) == ["ddp/rank0", "ddp/rank1", "single"]
    assert label_traces([Path("a/x.json"), Path("b/x.json")]) == ["a", "b"]
    assert label_traces([Path("t.json"), Path("t.json")]) == ["t #1", "t #2"]


def test_files_named_directly_keep_their_own_name():
    paths = [Path("tests/data/a100_alexnet.json.gz"), Path("elsewhere/run/x.pt.trace.json")]
    assert label_traces(paths, [True, True]) == ["a100_alexnet", "x"]
    assert label_traces(paths, [True, False]) == ["a100_alexnet", "run"]


def test_achieved_flops_and_mfu_per_trace_h100_against_mi300():
    """The same BERT-small inference on H100 and MI300X: modelled FLOPs per second of the
    modelled ops' GPU time and its share of each part's bf16 dense peak, and model FLOP
    utilization: the matrix FLOPs per second of the steps' device-side time."""
    from profiler_kit.trace.loader import load

    data = Path(__file__).parents[1] / "data"
    runs = [analyze_table(load(data / f"{gpu}_bert_small.json.gz"), label=gpu)
            for gpu in ("h100", "mi300")]
    c = compare(runs)
    achieved = _metric(c, "modelled_flops_per_s")
    mfu = _metric(c, "model_flops_utilization")
    running = _metric(c, "flops_per_s_peak_share")
    for i, a in enumerate(runs):
        assert a.perf.flops == runs[0].perf.flops  # same model, same shapes
        assert achieved.values[i] == a.perf.flops / (a.perf.time_ns * 1e-9)
        peak = {"h100": 989.5e12, "mi300": 1307.4e12}[a.label]
        assert running.values[i] == pytest.approx(achieved.values[i] / peak)
        assert mfu.values[i] == pytest.approx(a.perf.mfu_flops / (a.step_device_ns * 1e-9)
                                              / peak)
    assert achieved.unit == "FLOP/s" and achieved.best == 0  # H100 is busy for less time
