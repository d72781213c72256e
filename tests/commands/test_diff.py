"""``profkit diff``: statistics checked against independent computations, reports in
profkit's and PyTorch's schema, the console, and no torch import."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest
from rich.console import Console
from scipy import stats as scipy_stats

from profiler_kit import api
from profiler_kit.cli import main
from profiler_kit.ddp_benchmark import report as ddp_report
from profiler_kit.ddp_benchmark.diff import diff_reports
from profiler_kit.errors import UsageError
from profiler_kit.noise import (
    between_runs_change,
    bootstrap_change,
    mann_whitney_p,
)
from profiler_kit.render.console.diff import render
from profiler_kit.results import RunResult, StrategyResult
from profiler_kit.util import artifacts


def _brute_force_p(a: list[float], b: list[float]) -> float:
    """Two-sided exact p by enumerating every split of the pooled values."""
    pooled = a + b
    n1 = len(a)

    def u(x: list[float], y: list[float]) -> float:
        return sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)

    observed = u(a, b)
    mean = n1 * len(b) / 2
    extreme = total = 0
    for idx in itertools.combinations(range(len(pooled)), n1):
        x = [pooled[i] for i in idx]
        y = [pooled[i] for i in range(len(pooled)) if i not in idx]
        total += 1
        extreme += abs(u(x, y) - mean) >= abs(observed - mean) - 1e-12
    return extreme / total


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]),
        ([1.1, 2.5, 3.2, 9.0, 4.4], [2.0, 5.5, 6.1, 7.3]),
        ([3.0, 1.0, 4.0, 1.5, 5.0, 9.0], [2.6, 5.3, 5.8, 9.7, 9.3, 2.3]),
    ],
)
def test_mann_whitney_exact_matches_enumeration(a: list[float], b: list[float]) -> None:
    assert mann_whitney_p(a, b) == pytest.approx(_brute_force_p(a, b), rel=1e-9)


def test_mann_whitney_normal_approximation_with_ties_matches_permutations() -> None:
    rng = np.random.default_rng(1)
    a = list(np.round(rng.normal(10, 2, 60)))
    b = list(np.round(rng.normal(11, 2, 60)))
    pooled = np.array(a + b)

    def u(x: np.ndarray, y: np.ndarray) -> float:
        return float((x[:, None] > y[None, :]).sum() + 0.5 * (x[:, None] == y[None, :]).sum())

    observed = abs(u(np.array(a), np.array(b)) - 1800)
    hits = 0
    trials = 4000
    for _ in range(trials):
        perm = rng.permutation(pooled)
        hits += abs(u(perm[:60], perm[60:]) - 1800) >= observed
    assert mann_whitney_p(a, b) == pytest.approx(hits / trials, abs=0.02)


def test_bootstrap_interval_separates_shift_from_noise() -> None:
    rng = np.random.default_rng(0)
    base = list(rng.normal(1.0, 0.02, 30))
    same = list(rng.normal(1.0, 0.02, 30))
    slower = list(rng.normal(1.2, 0.02, 30))
    low, high = bootstrap_change(base, same, 75)
    assert low < 0 < high
    low, high = bootstrap_change(base, slower, 75)
    assert 0.15 < low < high < 0.25


def test_bootstrap_interval_is_scipys_bca_and_close_to_a_hand_percentile_bootstrap() -> None:
    """The interval is scipy.stats.bootstrap's BCa interval of the percentile ratio; on
    near-symmetric samples a plain percentile bootstrap written out here (numpy only)
    lands within half a point of it (BCa corrects skew, which these samples lack)."""
    rng = np.random.default_rng(3)
    base = rng.gamma(20, 0.005, 40)  # right-skewed, as step times are
    test = rng.gamma(20, 0.0055, 40)
    low, high = bootstrap_change(base, test, 75, seed=7)
    ref = scipy_stats.bootstrap(
        (base, test),
        lambda x, y, axis=-1: np.percentile(y, 75, axis=axis) / np.percentile(x, 75, axis=axis) - 1,
        n_resamples=4000, method="BCa", vectorized=True, batch=500,  # as diff draws them
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert (low, high) == pytest.approx((ref.low, ref.high), rel=1e-9)
    base, test = rng.normal(0.1, 0.002, 200), rng.normal(0.103, 0.002, 200)
    low, high = bootstrap_change(base, test, 75, seed=7)
    hand = np.random.default_rng(11)
    px = np.percentile(base[hand.integers(0, 200, (4000, 200))], 75, axis=1)
    py = np.percentile(test[hand.integers(0, 200, (4000, 200))], 75, axis=1)
    hand_low, hand_high = np.percentile(py / px - 1, [2.5, 97.5])
    assert (low, high) == pytest.approx((hand_low, hand_high), abs=0.005)


def test_bootstrap_of_equal_samples_falls_back_to_the_percentile_interval() -> None:
    base = [1.0] * 10 + [1.1]
    low, high = bootstrap_change(base, base, 50)
    assert (low, high) == (0.0, 0.0)


def test_between_runs_interval_is_welchs_t_interval_of_the_log_change() -> None:
    """Hand computation of Welch's interval (Welch-Satterthwaite degrees of freedom)."""
    a = [0.100, 0.112, 0.095]
    b = [0.108, 0.121, 0.104, 0.111]
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / len(a), lb.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = scipy_stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    diff = lb.mean() - la.mean()
    low, high = between_runs_change(a, b)
    assert (low, high) == pytest.approx((np.expm1(diff - half), np.expm1(diff + half)), rel=1e-9)


def test_p_values_of_the_diff_are_scipys_on_the_reports_samples() -> None:
    """What ``profkit diff`` reports per configuration equals scipy.stats.mannwhitneyu on
    the two reports' measurements: exact without ties (6 and 7 samples; 20 and 20, where
    scipy's "auto" would approximate), asymptotic with ties."""
    rng = np.random.default_rng(5)
    base = json.loads(json.dumps(PYTORCH_REPORT))
    test = json.loads(json.dumps(PYTORCH_REPORT))
    results = (base["benchmark_results"][0]["result"], test["benchmark_results"][0]["result"])
    results[0][0]["measurements"] = list(rng.normal(0.1, 0.003, 6))  # exact
    results[1][0]["measurements"] = list(rng.normal(0.104, 0.003, 7))
    results[0][1]["measurements"] = list(rng.normal(0.1, 0.003, 20))
    results[1][1]["measurements"] = list(rng.normal(0.103, 0.003, 20))
    results[1][2]["measurements"] = [round(v, 2) for v in rng.normal(0.115, 0.01, 20)]  # ties
    d = diff_reports(base, test)
    for i, (c, method) in enumerate(zip(d.benchmarks[0].configurations,
                                        ("exact", "exact", "asymptotic"), strict=True)):
        ref = scipy_stats.mannwhitneyu(results[0][i]["measurements"],
                                       results[1][i]["measurements"], alternative="two-sided",
                                       method=method)
        assert c.mann_whitney_p == pytest.approx(ref.pvalue, rel=1e-12)
    assert len(set(results[1][2]["measurements"])) < 20, "the ties case has ties"


def _run_record(seconds_by_config: dict[str, list[float]], bucket: float = 25.0,
                torch_version: str = "2.14.1", batch: int = 4,
                run_dir: Path = Path("traces/ddp/r1")) -> RunResult:
    """A ddp run as the runner returns it and run.json records it."""
    strategies = []
    for name, secs in seconds_by_config.items():
        world = 1 if name == "no-ddp" else int(name.rsplit("w", 1)[1])
        per_rank = [tuple(int(s * 1e9) - r * 1000 for s in secs) for r in range(world)]
        strategies.append(StrategyResult(
            name=name, status="ok", point=f"bucket_cap_mb={bucket}",
            point_params={"model": "resnet18", "batch_size": batch, "image_size": 32,
                          "bucket_cap_mb": bucket, "world_size": 2},
            samples_ns=tuple(int(s * 1e9) for s in secs),
            per_rank_samples_ns=tuple(per_rank) if world > 1 else (),
            info={"threads_per_rank": 1}, dir=f"bucket_cap_mb={bucket}/{name}",
        ))
    return RunResult(
        run_dir=run_dir, scenario="ddp", description="", baseline="no-ddp",
        item_unit="examples", device="cpu", params={"bucket_cap_mb": [bucket]},
        sweep=("bucket_cap_mb",), points=({"bucket_cap_mb": bucket},),
        options={"iterations": len(next(iter(seconds_by_config.values()))), "warmup": 3},
        environment={"torch": torch_version, "cuda": None, "devices": [],
                     "distributed": {"backend": "gloo", "launcher": "spawn",
                                     "interconnect_topology": None}},
        strategies=tuple(strategies), started_at="2026-01-01T00:00:00+00:00",
    )


def _samples(center: float, n: int = 20, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(v) for v in rng.normal(center, center * 0.01, n)]


def test_report_keeps_pytorch_schema_and_adds_times() -> None:
    run = _run_record({"no-ddp": _samples(0.10), "ddp-w1": _samples(0.11),
                       "ddp-w2": _samples(0.15)})
    report = ddp_report.build(run)
    for key in ("pytorch_version", "cuda_version", "distributed_backend", "bucket_size",
                "benchmark_results"):
        assert key in report
    assert report["metadata"]["threads_per_rank"] == 1
    assert report["metadata"]["device"] == "cpu"
    (bench,) = report["benchmark_results"]
    assert (bench["model"], bench["batch_size"], bench["bucket_size"]) == ("resnet18", 4, 25.0)
    assert [r["configuration"] for r in bench["result"]] == ["no-ddp", "ddp-w1", "ddp-w2"]
    assert [r["ranks"] for r in bench["result"]] == [[0], [0], [0, 1]]
    w2 = bench["result"][2]
    assert len(w2["per_rank_measurements"]) == 2
    secs = np.array(w2["measurements"])
    p75 = float(np.percentile(secs, 75))
    assert w2["times"]["sec_per_iter"]["p75"] == pytest.approx(p75)
    assert w2["times"]["examples_per_sec"]["p75"] == pytest.approx(4 * 2 / p75)
    assert w2["times"]["examples_per_sec_per_replica"]["p75"] == pytest.approx(4 / p75)
    no_ddp_rate = 4 / float(np.percentile(bench["result"][0]["measurements"], 50))
    w2_rate = 8 / float(np.percentile(secs, 50))
    assert bench["result"][0]["scaling_efficiency"] == pytest.approx(1.0)
    assert w2["scaling_efficiency"] == pytest.approx(w2_rate / (2 * no_ddp_rate))
    # verdicts by throughput: ddp-w2's steps are 1.5x longer, but it trains 2 x 4 examples
    assert w2["speedup"] == pytest.approx(w2_rate / no_ddp_rate) and w2["speedup"] > 1
    assert [r["best"] for r in bench["result"]] == [False, False, True]
    assert w2["per_rank_sec_per_iter_p50"] == pytest.approx(
        [float(np.percentile(r, 50)) for r in w2["per_rank_measurements"]])
    # the run's console table shows the same numbers, formatted
    from profiler_kit.render.console.ddp import render as render_report

    console = Console(width=150, record=True, color_system=None)
    render_report(console, report)
    text = console.export_text()
    assert "DDP benchmark: resnet18, batch 4 per rank, bucket 25.0 MB" in text
    assert f"{w2['scaling_efficiency'] * 100:.1f} %" in text
    assert "ddp-w2 (best)" in text and "p95" in text and "ex/s/rank" in text
    assert f"{w2['speedup']:.2f}×" in text and "rank p50" in text


def test_diff_of_one_run_a_side_shows_the_change_and_judges_no_noise() -> None:
    """One run a side: the changes and the Mann-Whitney p of the two runs' samples, but
    no noise verdict (the drift between runs is unknown, see test_regression_gate)."""
    base = ddp_report.build(_run_record(
        {"no-ddp": _samples(0.10, seed=1), "ddp-w1": _samples(0.11, seed=2),
         "ddp-w2": _samples(0.15, seed=3)}))
    test = ddp_report.build(_run_record(
        {"no-ddp": _samples(0.10, seed=4), "ddp-w1": _samples(0.11, seed=5),
         "ddp-w2": _samples(0.12, seed=6)}, torch_version="2.15.0"))
    d = diff_reports(base, test, "a", "b")
    (bench,) = d.benchmarks
    rows = {c.configuration: c for c in bench.configurations}
    assert set(rows) == {"no-ddp", "ddp-w1", "ddp-w2"}
    w2 = rows["ddp-w2"]
    assert w2.noise_model == "one run a side" and w2.mann_whitney_p < 0.001
    assert w2.beyond_noise is None
    p75 = next(p for p in w2.percentiles if p.percentile == 75)
    assert p75.change_fraction == pytest.approx(p75.test_ns / p75.base_ns - 1)
    assert p75.change_fraction == pytest.approx(-0.2, abs=0.02)
    assert p75.examples_change_fraction == pytest.approx(p75.base_ns / p75.test_ns - 1)
    assert p75.noise.beyond_noise is None and "--repeats 3" in p75.noise.reason
    assert rows["no-ddp"].percentiles[0].noise.beyond_noise is None
    meta = {r.key: r for r in d.metadata}
    assert meta["pytorch_version"].differs and not meta["distributed_backend"].differs


PYTORCH_REPORT = {  # the shape PyTorch's benchmark.py writes (pooled raw measurements)
    "pytorch_version": "1.4.0", "cuda_version": "10.1", "distributed_backend": "nccl",
    "bucket_size": 25,
    "benchmark_results": [{
        "model": "resnet50", "batch_size": 32,
        "result": [
            {"ranks": [0], "measurements": _samples(0.100, 10, 1)},
            {"ranks": [0], "measurements": _samples(0.105, 10, 2)},
            {"ranks": [0, 1], "measurements": _samples(0.110, 20, 3)},
        ],
    }],
}


def test_diff_reads_pytorch_reports_and_percentile_only_reports() -> None:
    faster = json.loads(json.dumps(PYTORCH_REPORT))
    faster["benchmark_results"][0]["result"][2]["measurements"] = _samples(0.09, 20, 9)
    d = diff_reports(PYTORCH_REPORT, faster)
    rows = {c.configuration: c for c in d.benchmarks[0].configurations}
    assert list(rows) == ["no-ddp", "ddp-w1", "ddp-w2"]
    assert rows["ddp-w2"].beyond_noise is None  # one run a side: not judged
    assert rows["ddp-w2"].mann_whitney_p < 0.001
    p75 = next(p for p in rows["ddp-w2"].percentiles if p.percentile == 75)
    assert p75.test_examples_per_s == pytest.approx(
        32 * 2 / np.percentile(faster["benchmark_results"][0]["result"][2]["measurements"], 75))
    # a reduced report with percentiles only: changes shown, noise "n/a"
    reduced = json.loads(json.dumps(faster))
    for r in reduced["benchmark_results"][0]["result"]:
        secs = r.pop("measurements")
        r["times"] = {"sec_per_iter": {f"p{p}": float(np.percentile(secs, p))
                                       for p in (50, 75, 90, 95)}}
    d = diff_reports(PYTORCH_REPORT, reduced)
    w2 = {c.configuration: c for c in d.benchmarks[0].configurations}["ddp-w2"]
    assert w2.mann_whitney_p is None and w2.beyond_noise is None
    assert all(p.noise.beyond_noise is None and p.noise.method == "n/a" for p in w2.percentiles)
    assert w2.percentiles[0].change_fraction < 0


def test_console_shows_models_configurations_and_verdicts() -> None:
    d = diff_reports(PYTORCH_REPORT, PYTORCH_REPORT, "old.json", "new.json")
    console = Console(width=140, record=True, color_system=None)
    render(console, d)
    text = console.export_text()
    assert "resnet50, batch 32 per rank, bucket 25 MB" in text
    assert "ddp-w2" in text and "p95" in text and "Mann-Whitney" in text
    assert "+0 %" in text and "n/a" in text and "1/1 runs" in text
    assert "one run a side is not judged" in text and "--repeats 3" in text
    assert "distributed_backend" in text and "nccl" in text


def _write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_cli_diff_runs_without_torch(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", PYTORCH_REPORT)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = _run_record({"no-ddp": _samples(0.1), "ddp-w1": _samples(0.1),
                          "ddp-w2": _samples(0.1)}, run_dir=run_dir)
    artifacts.write_json_atomic(run_dir / artifacts.RUN_JSON, record.to_json())
    code = (
        "import sys\n"
        "from profiler_kit.cli import main\n"
        f"rc = main(['diff', {str(run_dir)!r}, {str(run_dir)!r}])\n"
        "assert 'torch' not in sys.modules, 'diff imported torch'\n"
        f"rc2 = main(['diff', {str(a)!r}, {str(a)!r}, '--json', {str(tmp_path / 'd.json')!r}])\n"
        "assert 'torch' not in sys.modules, 'diff imported torch'\n"
        "sys.exit(rc or rc2)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "no-ddp" in done.stdout and "ddp-w2" in done.stdout
    saved = json.loads((tmp_path / "d.json").read_text())
    assert saved["benchmarks"][0]["model"] == "resnet50"


def test_bad_reports_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    good = _write(tmp_path / "good.json", PYTORCH_REPORT)
    with pytest.raises(UsageError, match="not a JSON report"):
        api.diff(bad, good)
    with pytest.raises(UsageError, match="no 'benchmark_results'"):
        api.diff(_write(tmp_path / "other.json", {"x": 1}), good)
    with pytest.raises(UsageError, match="no such report"):
        api.diff(tmp_path / "missing.json", good)
    other_run = _write(tmp_path / "run.json", {"scenario": {"name": "concurrent"},
                                               "strategies": []})
    with pytest.raises(UsageError, match="not ddp"):
        api.diff(other_run, good)
    partial_ddp_run = _write(tmp_path / "partial" / "run.json",
                             {"scenario": {"name": "ddp"}, "strategies": []})
    with pytest.raises(UsageError, match="partial/run.json: not a profkit run record"):
        api.diff(partial_ddp_run.parent, good)
    done = subprocess.run([sys.executable, "-m", "profiler_kit", "diff", str(bad), str(good)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "not a JSON report" in done.stderr


def test_bucket_sweeps_pair_by_bucket_and_single_reports_pair_across_buckets() -> None:
    def report(buckets: list[float]) -> dict:
        reports = [ddp_report.build(_run_record({"no-ddp": _samples(0.1, seed=i),
                                                 "ddp-w2": _samples(0.1 + b / 1000, seed=i)},
                                                bucket=b))
                   for i, b in enumerate(buckets)]
        merged = reports[0]
        merged["benchmark_results"] = [r["benchmark_results"][0] for r in reports]
        return merged

    swept = report([25.0, 1.0])
    d = diff_reports(swept, report([1.0, 25.0]))
    assert [(b.base_bucket_size, b.test_bucket_size) for b in d.benchmarks] == [
        (25.0, 25.0), (1.0, 1.0)]
    assert d.unmatched == ()
    d = diff_reports(report([25.0]), report([1.0]))
    (b,) = d.benchmarks
    assert (b.base_bucket_size, b.test_bucket_size) == (25.0, 1.0)
    d = diff_reports(swept, report([25.0]))
    assert len(d.benchmarks) == 1 and d.unmatched == ("resnet18 batch 4: only in the base report",)


def _rounds(centers: list[float], n: int = 15, seed: int = 0) -> list[list[float]]:
    """Samples of independent rounds: tight within a round (1 %), centred where each round
    landed (process placement, caches and load move whole rounds)."""
    return [_samples(c, n, seed * 10 + i) for i, c in enumerate(centers)]


def _repeated_run(rounds_by_config: dict[str, list[list[float]]]) -> dict:
    run = _run_record({name: [v for r in rounds for v in r]
                       for name, rounds in rounds_by_config.items()})
    strategies = tuple(
        msgspec.structs.replace(s, repeat_samples_ns=tuple(
            tuple(int(v * 1e9) for v in r) for r in rounds_by_config[s.name]))
        for s in run.strategies)
    return ddp_report.build(msgspec.structs.replace(run, strategies=strategies))


def test_repeats_judge_noise_between_runs_where_one_run_each_is_not_judged() -> None:
    base = _rounds([0.100, 0.112, 0.094], seed=1)
    same = _rounds([0.112, 0.095, 0.104], seed=2)  # the same code: rounds land elsewhere
    slower = _rounds([0.135, 0.140, 0.131], seed=3)
    # one round each (the first): within-run statistics would call the +12 % drift real,
    # so one run a side gets no verdict
    single = diff_reports(ddp_report.build(_run_record({"ddp-w2": base[0]})),
                          ddp_report.build(_run_record({"ddp-w2": same[0]})))
    (c,) = single.benchmarks[0].configurations
    assert (c.noise_model, c.base_repeats, c.beyond_noise) == ("one run a side", 1, None)
    assert c.mann_whitney_p < 0.05, "the two runs' samples differ, as drifted runs do"
    # three rounds each: the spread between rounds is the noise, and the A/A is within it
    d = diff_reports(_repeated_run({"ddp-w2": base}), _repeated_run({"ddp-w2": same}))
    (c,) = d.benchmarks[0].configurations
    assert (c.noise_model, c.base_repeats, c.test_repeats) == ("between runs", 3, 3)
    assert c.mann_whitney_p is None, "pooled samples of several runs are not independent"
    assert c.beyond_noise is False
    assert all(p.noise.beyond_noise is False for p in c.percentiles)
    p50 = c.percentiles[0]
    low, high = between_runs_change([float(np.percentile(r, 50)) for r in base],
                                    [float(np.percentile(r, 50)) for r in same])
    assert (p50.noise.ci_low_fraction, p50.noise.ci_high_fraction) == pytest.approx((low, high))
    # a real slowdown stands out of the same spread
    d = diff_reports(_repeated_run({"ddp-w2": base}), _repeated_run({"ddp-w2": slower}))
    (c,) = d.benchmarks[0].configurations
    assert c.beyond_noise is True and c.percentiles[0].change_fraction > 0.25
    # aggregate throughput of the configuration: examples of both ranks at the median step
    pooled = [v for r in slower for v in r]
    assert c.test_examples_per_s == pytest.approx(4 * 2 / np.percentile(pooled, 50))
    assert c.examples_change_fraction == pytest.approx(
        c.test_examples_per_s / c.base_examples_per_s - 1)
    console = Console(width=160, record=True, color_system=None)
    render(console, d)
    text = console.export_text()
    assert "3/3 runs" in text and "between runs" in text and "Welch" in text
    console = Console(width=160, record=True, color_system=None)
    render(console, single)
    assert "the drift between runs is unknown" in console.export_text()


def test_a_drift_between_runs_smaller_than_the_margin_is_within_noise(tmp_path: Path) -> None:
    """The A/A pair that a Welch interval alone calls real: two runs of the same code whose
    repeats agree closely within each run but sit 3.7 % apart (the machine drifted between
    the runs). The interval excludes 0 but not the +-5 % margin; ``--min-effect 2`` (a
    quieter machine) calls it real."""
    base = _rounds([0.1000, 0.1004, 0.0997], seed=4)
    test = _rounds([0.1037, 0.1033, 0.1040], seed=5)
    d = diff_reports(_repeated_run({"ddp-w2": base}), _repeated_run({"ddp-w2": test}))
    (c,) = d.benchmarks[0].configurations
    p50 = c.percentiles[0]
    low, high = between_runs_change([float(np.percentile(r, 50)) for r in base],
                                    [float(np.percentile(r, 50)) for r in test])
    assert 0 < low < 0.05 and 0.03 < p50.change_fraction < 0.045
    assert (p50.noise.ci_low_fraction, p50.noise.min_effect_fraction) == pytest.approx(
        (low, 0.05))
    assert c.beyond_noise is False
    tight = diff_reports(_repeated_run({"ddp-w2": base}), _repeated_run({"ddp-w2": test}),
                         min_effect=0.02)
    (c,) = tight.benchmarks[0].configurations
    assert c.beyond_noise is (low > 0.02) is True
    assert tight.min_effect_repeated_fraction == tight.min_effect_one_run_fraction == 0.02

    a = _write(tmp_path / "a.json", _repeated_run({"ddp-w2": base}))
    b = _write(tmp_path / "b.json", _repeated_run({"ddp-w2": test}))
    out = tmp_path / "d.json"
    assert main(["diff", str(a), str(b), "--min-effect", "2", "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["min_effect_repeated_fraction"] == 0.02
    assert saved["benchmarks"][0]["configurations"][0]["beyond_noise"] is True
    with pytest.raises(SystemExit):
        main(["diff", str(a), str(b), "--min-effect", "lots"])


def _single_runs(tmp: Path, side: str, centers: list[float], seed: int) -> list[Path]:
    """One report per run, one round each, written as separate run files."""
    return [_write(tmp / side / f"run{i}" / "ddp_report.json",
                   ddp_report.build(_run_record({"ddp-w2": r})))
            for i, r in enumerate(_rounds(centers, seed=seed))]


def test_several_runs_a_side_model_the_noise_between_runs(tmp_path: Path) -> None:
    """Three runs of the same code a side, each landing elsewhere (the machine drifts
    between runs): pooled, their spread is the noise and the A/A is within it, with the
    interval of Welch's t on the per-run medians (scipy's, in log space); one run a side
    is not judged. A slower test side stands out."""
    base = _single_runs(tmp_path, "a", [0.100, 0.112, 0.094], seed=1)
    same = _single_runs(tmp_path, "b", [0.112, 0.095, 0.104], seed=2)
    slower = _single_runs(tmp_path, "c", [0.135, 0.140, 0.131], seed=3)
    one = api.diff(base[0], same[0])
    assert one.benchmarks[0].configurations[0].beyond_noise is None  # not judged
    d = api.diff(base, same)
    (c,) = d.benchmarks[0].configurations
    assert (c.noise_model, c.base_repeats, c.test_repeats) == ("between runs", 3, 3)
    assert c.beyond_noise is False
    med = [[float(np.median(json.loads(p.read_text())["benchmark_results"][0]["result"][0]
                            ["measurements"])) for p in side] for side in (base, same)]
    welch = scipy_stats.ttest_ind(np.log(med[1]), np.log(med[0]), equal_var=False)
    low, high = np.expm1(welch.confidence_interval(0.95))
    p50 = c.percentiles[0]
    assert (p50.noise.ci_low_fraction, p50.noise.ci_high_fraction) == pytest.approx((low, high))
    assert d.base_label == f"{base[0]} +2 runs"  # "run0/ddp_report.json" on both sides
    # folders of runs stand for their runs, and the gate passes an A/A
    assert main(["diff", str(tmp_path / "a"), "--", str(tmp_path / "b"),
                 "--fail-on-regression", "5"]) == 0
    slow = api.diff(base, slower)
    assert slow.benchmarks[0].configurations[0].beyond_noise is True


def test_fail_on_regression_names_what_regressed(tmp_path: Path, capsys) -> None:
    base = _single_runs(tmp_path, "a", [0.100, 0.112, 0.094], seed=1)
    slower = _single_runs(tmp_path, "c", [0.135, 0.140, 0.131], seed=3)
    argv = ["diff", *map(str, base), "--", *map(str, slower)]
    assert main([*argv, "--fail-on-regression", "10"]) == 1
    err = capsys.readouterr().err
    assert "regression beyond 10%: resnet18 batch 4 ddp-w2: p50 +" in err
    assert "beyond noise" in err
    # a margin wider than the change passes, as does the A/A run against itself
    assert main([*argv, "--fail-on-regression", "60"]) == 0
    assert main(["diff", str(base[0]), str(base[0]), "--fail-on-regression", "1"]) == 0
    # three paths with no -- between the sides, runs of other configurations on one side
    assert main(["diff", *map(str, base)]) == 2
    other = _write(tmp_path / "x" / "ddp_report.json",
                   ddp_report.build(_run_record({"no-ddp": _samples(0.1)})))
    assert main(["diff", str(base[0]), str(other), "--", str(slower[0])]) == 2
    assert "not a run of the same benchmark" in capsys.readouterr().err


def test_compare_fail_on_regression_on_real_traces(capsys) -> None:
    """BERT-small on H100 against MI300X: H100's device step is 10 % longer (its idle
    Python between kernels), so a 5 % gate fails naming the terms, a 20 % gate passes, and
    a trace against itself passes any gate."""
    data = Path(__file__).parents[1] / "data"
    h100, mi300 = str(data / "h100_bert_small.json.gz"), str(data / "mi300_bert_small.json.gz")
    assert main(["compare", h100, mi300, "--baseline", "mi300_bert_small",
                 "--fail-on-regression", "5"]) == 1
    err = capsys.readouterr().err
    assert "regression beyond 5%: h100_bert_small: device step +" in err and "idle +" in err
    assert main(["compare", h100, mi300, "--baseline", "mi300_bert_small",
                 "--fail-on-regression", "20"]) == 0
    assert main(["compare", h100, h100, "--fail-on-regression", "0"]) == 0
