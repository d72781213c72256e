"""Noise verdicts on the speedups inside one run: the paired-by-round t interval against a
hand computation with scipy.stats.t, pairing removing the drift both sides share, the
within-one-run model as ``profkit diff``'s, the "best" rule, run.json, and a real run of
an A/A pair and a strategy doing twice the work (``tests/noise_scenario.py``)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest
from scipy import stats as scipy_stats

from profiler_kit import results
from profiler_kit.noise import (
    MIN_EFFECT_ONE_RUN,
    MIN_EFFECT_REPEATED,
    NOT_TESTED,
    PAIRED_BY_ROUND,
    WITHIN_RUN,
    NoiseVerdict,
    between_runs_change,
    bootstrap_change,
    paired_change,
    speedup_verdict,
)

HERE = Path(__file__).parents[1]
# set by tests/scenarios/test_under_load.py: the name of the process it runs beside the timing tests
EXPECTED_COMPETITOR = "PROFKIT_TEST_COMPETITOR"


def _rounds(medians_ms: list[float], spread: float = 0.002, n: int = 9,
            seed: int = 0) -> list[list[int]]:
    """Rounds of ``n`` samples around each given median (ms), as ns."""
    rng = np.random.default_rng(seed)
    return [[int(m * 1e6 * (1 + spread * e)) for e in rng.standard_normal(n)]
            for m in medians_ms]


def test_paired_interval_is_the_t_interval_of_the_log_ratios_by_hand() -> None:
    base = [10.0, 10.4, 9.7, 10.9, 10.1]
    mine = [9.1, 9.6, 8.8, 9.8, 9.3]
    d = np.log(np.array(mine) / np.array(base))
    half = scipy_stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    low, high = paired_change(base, mine)
    assert low == pytest.approx(math.expm1(d.mean() - half), rel=1e-12)
    assert high == pytest.approx(math.expm1(d.mean() + half), rel=1e-12)
    ref = scipy_stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (low, high) == pytest.approx((math.expm1(ref.low), math.expm1(ref.high)))


def test_speedup_verdict_pairs_round_medians_and_scales_by_the_work_per_step() -> None:
    """The speedup's interval is of work_ratio x base median / strategy median - 1, paired
    round by round; 3 rounds give a t interval with 2 degrees of freedom."""
    base = _rounds([10.0, 10.5, 9.8], seed=1)
    mine = _rounds([8.1, 8.4, 8.0], seed=2)
    v = speedup_verdict(base, mine, work_ratio=2.0)
    ratios = [2.0 * np.median(b) / np.median(m) for b, m in zip(base, mine, strict=True)]
    logs = np.log(ratios)
    half = scipy_stats.t.ppf(0.975, 2) * logs.std(ddof=1) / math.sqrt(3)
    assert v.method == PAIRED_BY_ROUND and v.reason == "3 rounds"
    assert v.ci_low_fraction == pytest.approx(math.expm1(logs.mean() - half), rel=1e-9)
    assert v.ci_high_fraction == pytest.approx(math.expm1(logs.mean() + half), rel=1e-9)
    assert v.min_effect_fraction == MIN_EFFECT_REPEATED
    assert v.beyond_noise is True  # about 2.5x


def test_pairing_removes_drift_that_both_sides_share() -> None:
    """The machine drifts by +-25 % from round to round and both sides drift alike. A
    strategy 10 % faster in every round: the unpaired (Welch) interval of the same round
    medians spans the drift and calls it noise; paired, the drift cancels and it is real.
    An A/A pair under the same drift stays within noise."""
    drift = [1.0, 1.25, 0.8, 1.15, 0.9]
    base = _rounds([10.0 * f for f in drift], seed=3)
    faster = _rounds([9.0 * f for f in drift], seed=4)
    same = _rounds([10.0 * f for f in drift], seed=5)
    med = [float(np.median(r)) for r in base]
    med_faster = [float(np.median(r)) for r in faster]
    low, high = between_runs_change(med_faster, med)  # unpaired: base / faster - 1
    assert low < 0 < high, "unpaired, the drift hides the change"
    paired = speedup_verdict(base, faster)
    assert paired.beyond_noise is True
    assert paired.ci_low_fraction > MIN_EFFECT_REPEATED
    assert paired.ci_low_fraction < 1 / 0.9 - 1 < paired.ci_high_fraction
    aa = speedup_verdict(base, same)
    assert aa.beyond_noise is False and aa.ci_low_fraction < 0 < aa.ci_high_fraction


def test_one_round_is_judged_within_the_run_with_the_larger_margin() -> None:
    """One round a side: diff's within-one-run model, the BCa bootstrap interval of the
    median's change (here of base / strategy, the throughput's), beyond +-10 %."""
    rng = np.random.default_rng(6)
    base = [list(rng.normal(10e6, 2e5, 20).astype(int))]
    mine = [list(rng.normal(8e6, 2e5, 20).astype(int))]
    v = speedup_verdict(base, mine)
    low, high = bootstrap_change(mine[0], base[0], 50)
    assert v.method == WITHIN_RUN
    assert (v.ci_low_fraction, v.ci_high_fraction) == pytest.approx((low, high), rel=1e-12)
    assert v.min_effect_fraction == MIN_EFFECT_ONE_RUN
    assert "run-to-run noise unknown" in v.reason
    assert v.beyond_noise is True and low < 0.25 < high
    # +5 % with one round is within the 10 % margin, however tight the interval
    close = [list(rng.normal(10e6 / 1.05, 1e4, 20).astype(int))]
    assert speedup_verdict(base, close).beyond_noise is False
    # a round of a side missing (an interrupted run): the first rounds, within the run
    assert speedup_verdict(base + base, mine).method == WITHIN_RUN
    few = speedup_verdict([[1, 2, 3]], [[1, 2, 3]])
    assert few.method == NOT_TESTED and few.beyond_noise is None


def _timed(name: str, rounds: list[list[int]], items: int = 1) -> results.StrategyResult:
    samples = tuple(v for r in rounds for v in r)
    st = results.stats(samples)
    return results.StrategyResult(
        name=name, status=results.OK, samples_ns=samples, stats=st,
        repeat_samples_ns=tuple(tuple(r) for r in rounds) if len(rounds) > 1 else (),
        items_per_step=items, throughput_items_per_s=results.throughput(items, st.median_ns))


def test_each_strategy_gets_a_verdict_against_its_baseline_and_json_keeps_it(tmp_path) -> None:
    drift = [1.0, 1.2, 0.9]
    found = results.against_baseline((
        _timed("base", _rounds([10.0 * f for f in drift], seed=7)),
        _timed("fast", _rounds([8.0 * f for f in drift], seed=8)),
        _timed("same", _rounds([10.0 * f for f in drift], seed=9)),
    ), "base")
    by = {s.name: s for s in found}
    assert by["base"].noise is None  # the baseline has none
    assert by["fast"].noise.method == PAIRED_BY_ROUND and by["fast"].noise.beyond_noise
    assert by["same"].noise.beyond_noise is False
    run = results.RunResult(
        run_dir=tmp_path, scenario="s", description="", baseline="base", item_unit="steps",
        device="cpu", params={}, sweep=(), points=(), options={}, environment={},
        strategies=found, started_at="now")
    doc = json.loads(json.dumps(run.to_json()))
    assert doc["strategies"][1]["noise"] == {**msgspec.structs.asdict(by["fast"].noise),
                                             "state": "beyond noise"}
    assert set(doc["strategies"][1]["noise"]) == {
        "method", "beyond_noise", "ci_low_fraction", "ci_high_fraction",
        "min_effect_fraction", "reason", "doubt", "state"}
    assert results.RunResult.from_json(doc) == run
    del doc["strategies"][1]["noise"]["state"]  # derived: a file without it reads alike
    assert results.RunResult.from_json(doc) == run
    del doc["strategies"][1]["noise"]  # a run.json from before the verdicts still reads
    assert results.RunResult.from_json(doc).strategies[1].noise is None


def _judged(name: str, low: float | None, high: float | None, beyond: bool | None,
            throughput: float) -> results.StrategyResult:
    st = results.stats([int(1e9 / throughput)] * 5)
    noise = None if low is None and beyond is None else NoiseVerdict(
        PAIRED_BY_ROUND, beyond, low, high, 0.05)
    return results.StrategyResult(name=name, status=results.OK, stats=st, items_per_step=1,
                                  throughput_items_per_s=throughput, noise=noise)


def test_best_is_named_only_when_clear_of_every_other_strategy() -> None:
    base = _judged("base", None, None, None, 100.0)
    slow = _judged("slow", -0.5, -0.4, True, 55.0)
    fast = _judged("fast", 0.2, 0.3, True, 125.0)
    close = _judged("close", 0.15, 0.25, True, 120.0)
    tie = _judged("tie", -0.03, 0.04, False, 100.5)
    assert results.best((base, slow)).name == "base"  # the other is beyond noise slower
    assert results.best((base, slow, fast)).name == "fast"
    assert results.best((base, fast, close)) is None  # their intervals overlap
    assert results.best((base, tie)) is None  # the top is within noise of the baseline
    assert results.best((base, slow, tie)) is None
    unjudged = _judged("unjudged", None, None, None, 130.0)
    assert results.best((unjudged,)).name == "unjudged"  # no verdicts: by throughput


@pytest.mark.timing
def test_a_real_run_tells_an_a_a_pair_from_twice_the_work(tmp_path) -> None:
    """``sleep`` and ``sleep-again`` are the same step, measured as two strategies in 3
    rounds: never beyond noise. ``sleep-twice`` sleeps twice per step: beyond noise, about
    half the throughput, unless other work competed differently with the two sides or made
    a side unstable (then not judged, with the doubt named, and the run says what
    competed). The intervals are checked against scipy
    on run.json's own rounds. Holds beside a CPU hog (tests/scenarios/test_under_load.py)."""
    cmd = [sys.executable, "-m", "profiler_kit", "run", str(HERE / "noise_scenario.py"),
           "--repeats", "3", "--iterations", "10", "--warmup", "2", "--profile-active", "1",
           "--sleep-ms", "3", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    (run_json,) = tmp_path.glob("sleep-pair/*/run.json")
    doc = json.loads(run_json.read_text())
    by = {s["name"]: s for s in doc["strategies"]}
    assert by["sleep"]["noise"] is None
    for name in ("sleep-again", "sleep-twice"):
        noise, rounds = by[name]["noise"], by[name]["repeat_samples_ns"]
        assert noise["method"] == PAIRED_BY_ROUND and len(rounds) == 3
        logs = np.log([np.median(b) / np.median(m)
                       for b, m in zip(by["sleep"]["repeat_samples_ns"], rounds, strict=True)])
        ref = scipy_stats.ttest_1samp(logs, 0.0).confidence_interval(0.95)
        assert noise["ci_low_fraction"] == pytest.approx(math.expm1(ref.low))
        assert noise["ci_high_fraction"] == pytest.approx(math.expm1(ref.high))
    again, twice = by["sleep-again"]["noise"], by["sleep-twice"]["noise"]
    assert again["beyond_noise"] is not True
    out = " ".join(done.stdout.split())  # the lines wrap at the console's width
    assert "no strategy is best beyond noise" in out  # sleep and sleep-again tie
    assert "(best)" not in out
    rounds = [r for s in doc["strategies"] for r in s["contention"]]
    assert len(rounds) == 9  # every round of every strategy
    busy = [r for r in rounds if r["others_cores"] >= max(0.25, 0.1 * r["cores"])]
    competitor = os.environ.get(EXPECTED_COMPETITOR)
    if busy:  # other work competed: said first, with the busiest process named
        assert "Busy machine: other processes used" in out
        if competitor:
            assert competitor in out
    else:
        assert not competitor, "the hog beside this test was not seen"
        assert "Busy machine" not in out
    summary = (run_json.parent / "summary.md").read_text()
    again_row = next(ln for ln in summary.splitlines() if ln.startswith("| sleep-again "))
    twice_row = next(ln for ln in summary.splitlines() if ln.startswith("| sleep-twice "))
    # the same step twice: never beyond noise (its interval inside +-5 % or crossing it)
    assert again["state"] != "beyond noise"
    assert f" | {again['state']}" in again_row
    if twice["doubt"]:  # the two sides ran beside different work, or a side was unstable
        # never beyond noise, nor within: not judged whatever the interval (so wide a one
        # that a busy machine hid twice the work reads no better), the doubt named
        assert twice["beyond_noise"] is not True and twice["reason"]
        assert twice["state"] == "not judged"
        assert f"× ? | not judged, {twice['doubt']} (" in twice_row
    else:
        assert twice["beyond_noise"] is True and twice["state"] == "beyond noise"
        assert twice["ci_high_fraction"] < -0.2  # about -50 %
        assert "× | beyond noise [" in twice_row
        assert "speedup against sleep, noise paired by round (3 rounds" in out


def test_reading_and_rendering_results_never_imports_scipy() -> None:
    """scipy is imported by the functions that compute verdicts, not by readers of them."""
    code = ("import sys\n"
            "import profiler_kit.results, profiler_kit.noise, profiler_kit.cli\n"
            "import profiler_kit.render.console.run, profiler_kit.render.markdown.run\n"
            "import profiler_kit.render.html.report, profiler_kit.render.console.diff\n"
            "import profiler_kit.ddp_benchmark.diff, profiler_kit.commands.analyze\n"
            "assert 'scipy' not in sys.modules, 'scipy imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_an_explanation_that_contradicts_the_timing_is_withheld(tmp_path) -> None:
    """The main job's run.json, timed on a busy machine (sequential 2.22 s a step, threads
    91 ms), beside traces of the same strategies profiled in a quieter run: the traces'
    step ratio is nowhere near the timing's, so the "why" is withheld with both figures.
    With timed medians in the traces' ratio, the explanation stands."""
    import re

    from concurrent_run import concurrent_run

    from profiler_kit.render.wording.diff_views import strategy_verdict
    from profiler_kit.sources import after_run

    folder = concurrent_run(tmp_path)
    run = msgspec.structs.replace(results.read_run(folder), run_dir=folder)
    judged = {s.name: s for s in after_run.step_changes(run).strategies}
    line = strategy_verdict(judged["threads"])
    found = re.fullmatch(r"threads: explanation withheld: the profiled steps say "
                         r"([-+][\d.]+)% where the timed medians say ([-+][\d.]+)%; rerun "
                         r"with more --profile-active steps \(or on a quieter machine\)", line)
    assert found, line
    profiled, timed = (float(x) / 100 for x in found.groups())
    base = judged["sequential"].stats.median_ns
    assert timed == pytest.approx(judged["threads"].stats.median_ns / base - 1, abs=1e-3)
    assert judged["threads"].step_change_ns == {}  # no term of a withheld explanation
    # the same traces, timed in the ratio they show: the explanation is printed
    doc = json.loads((folder / "run.json").read_text())
    for s in doc["strategies"]:
        if s["name"] == "threads":
            s["samples_ns"] = [int(base * (1 + profiled))] * len(s["samples_ns"])
            s["repeat_samples_ns"] = []
            s["stats"] = results.stats(s["samples_ns"]).to_json()
    (folder / "run.json").write_text(json.dumps(doc))
    again = {s.name: s for s in after_run.step_changes(msgspec.structs.replace(
        results.read_run(folder), run_dir=folder)).strategies}
    assert strategy_verdict(again["threads"]).startswith("threads: CPU step ")
    assert again["threads"].explanation_withheld is None
    assert again["threads"].step_change_ns["step"] < 0
