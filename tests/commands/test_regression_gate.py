"""``--fail-on-regression``: the gates of ``profkit diff`` and ``profkit compare``.

diff: repeats on one side only judge the single run against the repeated side's spread
between runs (checked against a hand computation and, for coverage, against simulated
runs), one run a side is not judged and does not fail the gate. compare: of two run
folders, each strategy of the second is measured against the same strategy (and sweep
point) of the first, never against the first run's other strategies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import numpy as np
import pytest
from scipy import stats as scipy_stats
from test_diff import _rounds, _run_record, _single_runs, _write

from profiler_kit import api
from profiler_kit.analysis.compare import sides_of
from profiler_kit.cli import main
from profiler_kit.commands import regression_gate as regression
from profiler_kit.contention import RoundContention
from profiler_kit.ddp_benchmark import report as ddp_report
from profiler_kit.noise import (
    BETWEEN_RUNS,
    MIN_EFFECT_REPEATED,
    ONE_RUN_EACH,
    WITHIN_RUN,
    bootstrap_change,
    doubted,
    one_run_against_repeats_change,
    percentile_verdict,
)
from profiler_kit.results import RunResult, StrategyResult, read_run
from profiler_kit.util import artifacts

DATA = Path(__file__).parents[1] / "data"
SLOW = DATA / "cpu_only_gloo.json.gz"  # 210 ms a step (CPU side)
FAST = DATA / "cpu_torch_profiler.pt.trace.json.gz"  # 153 ms a step


# ---------------------------------------------------------------- diff: the statistics


def test_one_run_against_repeats_is_a_t_interval_with_the_repeated_sides_spread() -> None:
    """Hand computation: the single run is one more draw, so the difference of its log
    and the repeats' mean log has the standard error s * sqrt(1 + 1/k), and the t
    quantile has k - 1 degrees of freedom; either side may be the single run."""
    a = [0.100, 0.112, 0.095]
    b = [0.108]
    la = np.log(a)
    s, k = la.std(ddof=1), len(a)
    half = scipy_stats.t.ppf(0.975, k - 1) * s * np.sqrt(1 + 1 / k)
    d = np.log(b[0]) - la.mean()
    assert one_run_against_repeats_change(a, b) == pytest.approx(
        (np.expm1(d - half), np.expm1(d + half)), rel=1e-12)
    low, high = one_run_against_repeats_change(b, a)  # the single run is the base
    assert (low, high) == pytest.approx((np.expm1(-d - half), np.expm1(-d + half)), rel=1e-12)
    assert all(np.isnan(one_run_against_repeats_change([0.1, 0.1], [0.2])))
    with pytest.raises(ValueError):
        one_run_against_repeats_change([0.1, 0.2], [0.1, 0.2])


def test_one_run_against_repeats_covers_the_true_change_95_percent_of_the_time() -> None:
    """1,000 simulated pairs of log-normal run values with one spread (3 runs against 1,
    a true change of +20 %): the interval holds the change in 95 % of them (binomial
    standard error 0.7 %); Welch's interval cannot be formed from one run at all."""
    rng = np.random.default_rng(11)
    sigma, truth = 0.08, 0.20
    hits = 0
    trials = 1000
    for _ in range(trials):
        base = np.exp(rng.normal(np.log(0.1), sigma, 3))
        test = np.exp(rng.normal(np.log(0.1 * (1 + truth)), sigma, 1))
        low, high = one_run_against_repeats_change(base, test)
        hits += low <= truth <= high
    assert hits / trials == pytest.approx(0.95, abs=0.02)


def test_three_runs_against_one_judge_the_drift_between_runs_not_the_samples() -> None:
    """The A/A that failed the gate: three runs of the same code on one side, landing 6 %
    apart as runs do, and one run on the other, 25 % from their median, its samples tight
    (1 %). Pooled into one within-run bootstrap (what the diff did) the change is far
    beyond +-10 %; judged against the spread of the three runs it is within noise. Twice
    the work stands out of the same spread."""
    base = _rounds([0.100, 0.112, 0.094], seed=1)
    drifted = _rounds([0.125], seed=2)
    pooled = [v for r in base for v in r]
    low, _ = bootstrap_change(pooled, drifted[0], 50)
    assert low > 0.10, "the old fallback called this A/A pair a regression"
    v = percentile_verdict(base, drifted, 50, within_one_run=False)
    assert (v.method, v.beyond_noise, v.min_effect_fraction) == (
        BETWEEN_RUNS, False, MIN_EFFECT_REPEATED)
    assert v.ci_low_fraction < 0 < 0.25 < v.ci_high_fraction
    assert "3 repeats stands for both" in v.reason
    mirrored = percentile_verdict(drifted, base, 50, within_one_run=False)
    assert mirrored.beyond_noise is False
    doubled = percentile_verdict(base, _rounds([0.2], seed=3), 50, within_one_run=False)
    assert doubled.beyond_noise is True and doubled.ci_low_fraction > MIN_EFFECT_REPEATED


def test_one_run_a_side_is_not_judged_between_runs_but_still_within_one_process() -> None:
    """One run each: no verdict for separate runs (the reason says what to do); the
    within-run bootstrap stays for callers comparing strategies of one process (the
    default, as the tuning's stacking of knobs uses it)."""
    a, b = _rounds([0.100], seed=4), _rounds([0.150], seed=5)
    v = percentile_verdict(a, b, 50, within_one_run=False)
    assert (v.method, v.beyond_noise, v.ci_low_fraction) == (ONE_RUN_EACH, None, None)
    assert "--repeats 3 on both sides" in v.reason
    within = percentile_verdict(a, b, 50)
    assert within.method == WITHIN_RUN and within.beyond_noise is True


# ---------------------------------------------------------------- diff: the gate


def test_diff_gate_with_one_run_a_side_says_it_cannot_judge_and_passes(
        tmp_path: Path, capsys) -> None:
    """Two single runs 40 % apart: nothing is called beyond noise, the gate names the
    change in one line with the reason, and exits 0 (an A/A pair of single runs drifts as
    far on a shared machine)."""
    (a,) = _single_runs(tmp_path, "a", [0.100], seed=1)
    (b,) = _single_runs(tmp_path, "b", [0.140], seed=2)
    d = api.diff(a, b)
    (c,) = d.benchmarks[0].configurations
    assert (c.noise_model, c.beyond_noise) == (ONE_RUN_EACH, None)
    assert all(p.noise.beyond_noise is None for p in c.percentiles)
    assert main(["diff", str(a), str(b), "--fail-on-regression", "5"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("profkit: regression gate could not judge resnet18 batch 4 "
                             "ddp-w2 p")
    assert "one run a side" in err[0] and "--repeats 3 on both sides" in err[0]
    # within the margin there is nothing to judge, and nothing is said
    assert main(["diff", str(a), str(a), "--fail-on-regression", "5"]) == 0
    assert capsys.readouterr().err == ""


def test_diff_gate_with_repeats_on_one_side_passes_an_aa_and_fails_twice_the_work(
        tmp_path: Path, capsys) -> None:
    base = _single_runs(tmp_path, "a", [0.100, 0.112, 0.094], seed=1)  # three runs
    (same,) = _single_runs(tmp_path, "b", [0.108], seed=2)
    (slow,) = _single_runs(tmp_path, "c", [0.200], seed=3)
    d = api.diff(base, same)
    (c,) = d.benchmarks[0].configurations
    assert (c.noise_model, c.base_repeats, c.test_repeats) == (BETWEEN_RUNS, 3, 1)
    assert c.beyond_noise is False and c.mann_whitney_p is None
    assert main(["diff", *map(str, base), "--", str(same), "--fail-on-regression", "5"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["diff", *map(str, base), "--", str(slow), "--fail-on-regression", "5"]) == 1
    err = capsys.readouterr().err
    assert "regression beyond 5%: resnet18 batch 4 ddp-w2: p50 +" in err
    assert "(beyond noise)" in err and "could not judge" not in err


def test_diff_gate_does_not_fail_on_a_doubted_change(tmp_path: Path) -> None:
    """A change the diff doubts (a side's rounds disagree, or the slower side ran beside
    more other work) is not judged: over the margin it is named with the doubt's reason,
    and it does not fail the gate, while the same change undoubted does."""
    base = _single_runs(tmp_path, "a", [0.100, 0.112, 0.094], seed=1)
    slower = _single_runs(tmp_path, "c", [0.135, 0.140, 0.131], seed=3)
    d = api.diff(base, slower)
    assert regression.diff_regressions(d, 0.05) and regression.diff_unjudged(d, 0.05) is None
    why = "the test side ran beside 1.2 cores of other work, the base beside none"
    doubtful = msgspec.structs.replace(d, benchmarks=tuple(
        msgspec.structs.replace(b, configurations=tuple(
            msgspec.structs.replace(c, percentiles=tuple(
                msgspec.structs.replace(p, noise=doubted(p.noise, "contended", why))
                for p in c.percentiles))
            for c in b.configurations))
        for b in d.benchmarks))
    assert regression.diff_regressions(doubtful, 0.05) == []
    line = regression.diff_unjudged(doubtful, 0.05)
    assert line.startswith("regression gate could not judge resnet18 batch 4 ddp-w2 p")
    assert line.endswith(f"(slower by more than 5%): {why}; not failed")


def test_diff_gate_still_counts_percentile_only_reports_on_the_margin(
        tmp_path: Path, capsys) -> None:
    """Reports with percentiles only have no samples to judge: as before, a change over
    the margin fails, and the line says noise was not tested."""
    def reduced(center: float, seed: int) -> dict:
        report = ddp_report.build(_run_record({"ddp-w2": _rounds([center], seed=seed)[0]}))
        for r in report["benchmark_results"][0]["result"]:
            secs = r.pop("measurements")
            r.pop("repeat_measurements", None)
            r["times"] = {"sec_per_iter": {f"p{p}": float(np.percentile(secs, p))
                                           for p in (50, 75, 90, 95)}}
        return report

    a = _write(tmp_path / "a.json", reduced(0.100, 1))
    b = _write(tmp_path / "b.json", reduced(0.140, 2))
    assert main(["diff", str(a), str(b), "--fail-on-regression", "5"]) == 1
    err = capsys.readouterr().err
    assert "noise not tested: percentiles only" in err and "could not judge" not in err


def test_diff_gate_names_what_it_did_not_compare(tmp_path: Path, capsys) -> None:
    """Another batch size is another benchmark, and a configuration in one report only
    has nothing to compare with: the gate cannot fail on them, and one line says so."""
    def report(name: str, batch: int, configs: list[str]) -> Path:
        rounds = {c: _rounds([0.100, 0.104, 0.098], seed=i) for i, c in enumerate(configs)}
        run = _run_record({c: [v for r in rs for v in r] for c, rs in rounds.items()},
                          batch=batch)
        return _write(tmp_path / name / "ddp_report.json", ddp_report.build(run))

    a = report("a", 4, ["no-ddp", "ddp-w2"])
    assert main(["diff", str(a), str(report("b", 8, ["no-ddp", "ddp-w2"])),
                 "--fail-on-regression", "5"]) == 0
    assert capsys.readouterr().err.strip() == (
        "profkit: not gated, on one side only: resnet18 batch 4 (only in the base report), "
        "resnet18 batch 8 (only in the test report)")
    assert main(["diff", str(a), str(report("c", 4, ["no-ddp"])),
                 "--fail-on-regression", "5"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("profkit: not gated, on one side only: resnet18 batch 4 ddp-w2 (only in "
                       "the base report)")


# ---------------------------------------------------------------- compare: two runs


def _run(root: Path, stamp: int, traces: dict[tuple[str, str], Path]) -> Path:
    """A run folder as ``profkit run`` writes it: per sweep point and strategy a folder
    with the trace (named by the trace handler, its time stamp differing between runs),
    and run.json naming the baseline ``sequential``."""
    run_dir = root / f"2026010{stamp}-000000-abcd"
    strategies = []
    for n, ((point, name), trace) in enumerate(traces.items()):
        folder = run_dir / point / name
        folder.mkdir(parents=True)
        shutil.copy(trace, folder / f"main.17953777617624{stamp}{n:03d}.pt.trace.json.gz")
        strategies.append(StrategyResult(name=name, status="ok", point=point,
                                         dir=f"{point}/{name}"))
    points = sorted({p for p, _ in traces})
    run = RunResult(run_dir=run_dir, scenario="concurrent", description="",
                    baseline="sequential", item_unit="items", device="cpu", params={},
                    sweep=("n",), points=tuple({"n": int(p[2:])} for p in points),
                    options={}, environment={}, strategies=tuple(strategies),
                    started_at="2026-01-01T00:00:00+00:00")
    artifacts.write_json_atomic(run_dir / artifacts.RUN_JSON, run.to_json())
    return run_dir


def test_compare_of_two_runs_measures_each_strategy_against_the_same_one(
        tmp_path: Path, capsys) -> None:
    """Run A: two sweep points of ``sequential`` and ``threads`` whose traces differ by
    37 %. Run B repeats it exactly, except that ``threads`` at n=2 got the slow trace, and
    it has a strategy A lacks (and lacks one A has). Each strategy of B is measured
    against the same strategy and point of A, as the two traces alone would be; A's
    strategies are not measured against each other (that comparison would fail any
    gate); the strategies on one side only are named and not gated."""
    a = _run(tmp_path / "a", 1, {("n=1", "sequential"): SLOW, ("n=1", "threads"): FAST,
                                 ("n=2", "threads"): FAST, ("n=2", "only-a"): FAST})
    b = _run(tmp_path / "b", 2, {("n=1", "sequential"): SLOW, ("n=1", "threads"): FAST,
                                 ("n=2", "threads"): SLOW, ("n=1", "only-b"): SLOW})
    analyses = api.analyze([a, b], jobs=1)
    c = api.compare(analyses)
    labels = list(c.labels)
    assert labels[c.baseline] == f"{a.name}/n=1/sequential"  # run A's own baseline
    falls = {w.label: w for w in c.steps.waterfalls if w is not None}
    assert set(falls) == {f"{b.name}/{k}" for k in
                          ("n=1/sequential", "n=1/threads", "n=2/threads")}
    for label, w in falls.items():
        assert w.against == label.replace(b.name, a.name)
        assert c.steps.against[labels.index(label)] == labels.index(w.against)
    assert all(falls[f"{b.name}/{k}"].delta_ns == 0 for k in ("n=1/sequential", "n=1/threads"))
    alone = api.compare(api.analyze([FAST, SLOW], jobs=1)).steps.waterfalls[1]
    moved = falls[f"{b.name}/n=2/threads"]
    assert (moved.before_ns, moved.after_ns) == pytest.approx((alone.before_ns, alone.after_ns))
    assert moved.delta_ns > 0.3 * moved.before_ns
    assert set(c.unpaired) == {f"{a.name}/n=2/only-a", f"{b.name}/n=1/only-b"}

    out = tmp_path / "c.json"
    assert main(["compare", str(a), str(b), "--fail-on-regression", "5", "--json",
                 str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    assert err[0].startswith(f"profkit: regression beyond 5%: {b.name}/n=2/threads against "
                             f"{a.name}/n=2/threads: CPU step +")
    assert err[1] == (f"profkit: not gated, on one side only: {a.name}/n=2/only-a, "
                      f"{b.name}/n=1/only-b")
    saved = json.loads(out.read_text())["comparison"]
    assert saved["unpaired"] == list(c.unpaired)
    md = tmp_path / "c.md"
    main(["compare", str(a), str(b), "--markdown", str(md)])
    assert (f"_on one side only, not compared with the other side: {a.name}/n=2/only-a, "
            f"{b.name}/n=1/only-b_") in md.read_text().splitlines()
    assert [w and w["against"] for w in saved["steps"]["waterfalls"]] == [
        w and w.against for w in c.steps.waterfalls]


def test_sides_are_two_folders_with_strategies_in_common(tmp_path: Path) -> None:
    """Keys are the strategy folders under each side's root; a folder of several traces
    (ranks) keys each by its worker, without the trace handler's time stamp. One folder,
    nested folders, files, one trace a side, or sides with nothing in common are not two
    sides."""
    for side, stamp in (("x", "1795377761762408591"), ("y", "1795377761999999999")):
        for rank in (0, 1):
            (tmp_path / side / "ddp-w2").mkdir(parents=True, exist_ok=True)
            shutil.copy(SLOW, tmp_path / side / "ddp-w2" / f"rank{rank}.{stamp}.pt.trace.json.gz")
        (tmp_path / side / "no-ddp").mkdir(exist_ok=True)
        shutil.copy(SLOW, tmp_path / side / "no-ddp" / f"rank0.{stamp}.pt.trace.json.gz")
    x, y = tmp_path / "x", tmp_path / "y"
    files = api.trace_files([x, y])
    keys = sides_of([x, y], files)
    assert keys == [(0, "ddp-w2/rank0"), (0, "ddp-w2/rank1"), (0, "no-ddp"),
                    (1, "ddp-w2/rank0"), (1, "ddp-w2/rank1"), (1, "no-ddp")]
    assert sides_of([x], api.trace_files([x])) is None
    assert sides_of([tmp_path, x], api.trace_files([tmp_path])) is None
    assert sides_of(files[:2], files[:2]) is None
    one = [x / "no-ddp", y / "no-ddp"]  # one trace a side: the baseline pairs them already
    assert sides_of(one, api.trace_files(one)) is None
    (tmp_path / "z" / "other").mkdir(parents=True)
    shutil.copy(FAST, tmp_path / "z" / "other" / "a.pt.trace.json.gz")
    shutil.copy(FAST, tmp_path / "z" / "other" / "b.pt.trace.json.gz")
    z = tmp_path / "z"
    assert sides_of([x, z], api.trace_files([x, z])) is None


# ---------------------------------------------------------------- compare: two runs' timings


def _timed_run(root: Path, stamp: int, rounds: dict[str, list[list[float]]],
               others_cores: float = 0.0) -> Path:
    """A run folder whose strategies have timed rounds (ms per step), each round timed
    beside ``others_cores`` of other work on 2 cores, and the same trace (so the traces'
    profiled steps alone would call every pair equal)."""
    run_dir = root / f"2026010{stamp}-000000-abcd"
    strategies = []
    for name, ms in rounds.items():
        (run_dir / name).mkdir(parents=True)
        shutil.copy(FAST, run_dir / name / f"main.1795377761762{stamp}.pt.trace.json.gz")
        samples = [[int(v * 1e6) for v in r] for r in ms]
        strategies.append(StrategyResult(
            name=name, status="ok", dir=name,
            samples_ns=tuple(v for r in samples for v in r),
            repeat_samples_ns=tuple(tuple(r) for r in samples) if len(samples) > 1 else (),
            contention=tuple(RoundContention(wall_s=1.0, cores=2, others_cores=others_cores)
                             for _ in samples)))
    run = RunResult(run_dir=run_dir, scenario="noise", description="", baseline="a",
                    item_unit="items", device="cpu", params={}, sweep=(), points=({},),
                    options={}, environment={}, strategies=tuple(strategies),
                    started_at="2026-01-01T00:00:00+00:00")
    artifacts.write_json_atomic(run_dir / artifacts.RUN_JSON, run.to_json())
    return run_dir


def _steps(rng: np.random.Generator, ms: float, n: int = 20, late: float = 0.0) -> list[float]:
    """``n`` steps of about ``ms`` with the jitter of a loaded machine: a few steps woken
    up late by up to +60 %, and ``late`` of them late by that much."""
    steps = ms * (1 + rng.gamma(1.0, 0.03, n))
    woken = rng.random(n) < max(late, 0.1)
    return list(steps * np.where(woken, 1 + rng.uniform(0.1, 0.6, n), 1.0))


def test_compare_of_two_runs_gates_on_the_timed_steps_not_the_profiled_ones(
        tmp_path: Path, capsys) -> None:
    """Two runs of the same three strategies, one round of 20 timed steps each, with the
    late wake-ups that moved the three profiled steps of an A/A pair by +6 % to +22 %:
    no A/A pair of 50 fails the gate, and twice the work fails it beyond noise, named with
    its interval; the gate reads run.json, not the traces (the same trace everywhere)."""
    rng = np.random.default_rng(7)
    names = ("a", "b", "c")
    failed = 0
    for k in range(50):
        one = _timed_run(tmp_path / f"p{k}", 1, {n: [_steps(rng, 4.0)] for n in names})
        two = _timed_run(tmp_path / f"p{k}", 2, {n: [_steps(rng, 4.0)] for n in names})
        gate = regression.timed_regressions(read_run(one), read_run(two), 0.05)
        failed += bool(gate.regressions)
        assert len(gate.gated) == 3
    assert failed == 0
    one = _timed_run(tmp_path / "s", 1, {n: [_steps(rng, 4.0)] for n in names})
    slow = _timed_run(tmp_path / "s", 2, {"a": [_steps(rng, 4.0)], "b": [_steps(rng, 8.0)],
                                         "c": [_steps(rng, 4.0)]})
    assert main(["compare", str(one), str(slow), "--fail-on-regression", "5"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"profkit: regression beyond 5%: {slow.name}/b against "
                             f"{one.name}/b: median timed step +")
    assert "(beyond noise, [+" in err[0] and "within one run" in err[0]


def test_compare_gate_between_runs_with_rounds_and_not_judged_when_contended(
        tmp_path: Path, capsys) -> None:
    """Three rounds a side: judged between runs (the round medians' Welch interval). A
    slower second run that ran beside more other work is not judged and does not fail:
    one line says so and why; a side whose steps fall in two clusters is not judged
    either."""
    rng = np.random.default_rng(3)
    base = _timed_run(tmp_path / "r", 1, {"a": [_steps(rng, 4.0) for _ in range(3)]})
    slow = _timed_run(tmp_path / "r", 2, {"a": [_steps(rng, 8.0) for _ in range(3)]})
    gate = regression.timed_regressions(read_run(base), read_run(slow), 0.05)
    (line,) = gate.regressions
    assert "between runs" in line and not gate.unjudged
    busy = _timed_run(tmp_path / "busy", 2, {"a": [_steps(rng, 8.0) for _ in range(3)]},
                      others_cores=1.5)
    assert main(["compare", str(base), str(busy), "--fail-on-regression", "5"]) == 0
    said, passed = capsys.readouterr().err.strip().splitlines()
    assert passed == "profkit: no regression beyond 5%: the regression gate passed"
    assert said.startswith(f"profkit: regression gate could not judge {busy.name}/a against "
                           f"{base.name}/a: median timed step +")
    assert "other processes used 0.0 of 2 cores while the baseline ran and 1.5" in said
    assert said.endswith("; not failed")
    two_kinds = [[4.0] * 10 + [12.0] * 10 for _ in range(3)]
    split = _timed_run(tmp_path / "split", 2, {"a": two_kinds})
    gate = regression.timed_regressions(read_run(base), read_run(split), 0.05)
    assert not gate.regressions
    (why,) = gate.unjudged
    assert "the second run is unstable: round 1's samples fall in two clusters" in why


def test_one_round_a_side_beside_other_work_is_not_judged(tmp_path: Path) -> None:
    """One round a side cannot show the drift between runs that other work brings (an A/A
    pair at load 6 read +91 %): beside other work such a change is not judged, and the
    line says how to judge it."""
    rng = np.random.default_rng(5)
    one = _timed_run(tmp_path, 1, {"a": [_steps(rng, 4.0)]}, others_cores=1.6)
    two = _timed_run(tmp_path, 2, {"a": [_steps(rng, 8.0)]}, others_cores=1.6)
    gate = regression.timed_regressions(read_run(one), read_run(two), 0.05)
    assert not gate.regressions
    (line,) = gate.unjudged
    assert ("other processes used 1.6 and 1.6 of 2 cores while the runs ran, and one round "
            "a side cannot tell their effect from a change") in line
    assert line.endswith("with --repeats 3; not failed")
