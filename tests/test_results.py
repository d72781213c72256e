"""Statistics against numpy/statistics, and run.json decoded back into the run that wrote it."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from profiler_kit import api, results
from profiler_kit.errors import UsageError
from profiler_kit.measure.passes import MeasureOptions
from profiler_kit.util import artifacts

HERE = Path(__file__).parent
TINY = MeasureOptions(repeats=1, iterations=3, warmup=1, profile_wait=0, profile_warmup=1,
                      profile_active=1)


@given(st.lists(st.integers(min_value=1, max_value=10**12), min_size=1, max_size=200))
def test_stats_match_numpy_and_statistics(samples: list[int]) -> None:
    s = results.stats(samples)
    a = np.asarray(samples, dtype=np.float64)
    assert s.n == len(samples)
    assert s.median_ns == pytest.approx(statistics.median(samples), rel=1e-12)
    assert s.mean_ns == pytest.approx(statistics.fmean(samples), rel=1e-9)
    assert s.min_ns == min(samples) and s.max_ns == max(samples)
    for q, got in ((50, s.p50_ns), (75, s.p75_ns), (90, s.p90_ns), (95, s.p95_ns)):
        assert got == pytest.approx(float(np.percentile(a, q)), rel=1e-12)
    if len(samples) >= 2:
        quartiles = statistics.quantiles(samples, n=4, method="inclusive")
        assert s.iqr_ns == pytest.approx(quartiles[2] - quartiles[0], rel=1e-9, abs=1e-6)


def test_noisy_flag_at_ten_percent_of_the_median() -> None:
    steady = results.stats([100, 100, 101, 99, 100])
    assert not steady.noisy and steady.iqr_fraction == pytest.approx(0.0)
    noisy = results.stats([100, 80, 120, 60, 140])  # IQR 40 on a median of 100
    assert noisy.iqr_fraction == pytest.approx(0.4) and noisy.noisy
    assert noisy.to_json()["noisy"] is True


def test_stats_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        results.stats([])


def test_throughput_speedup_and_slowest_rank() -> None:
    assert results.throughput(200, 0.5e9) == pytest.approx(400.0)
    assert results.speedup(50.0, 100.0) == pytest.approx(2.0)  # items/s against items/s
    assert results.speedup(None, 100.0) is None
    assert results.scaling_efficiency(150.0, 2, 100.0) == pytest.approx(0.75)
    assert results.slowest_rank([(1, 5, 3), (2, 4, 3)]) == (2, 5, 3)


def test_run_json_decodes_to_the_run_and_encodes_to_the_same_bytes(tmp_path) -> None:
    """A real run (ok, failed, wrong and, without CUDA, skipped strategies) read back from
    its run.json is the RunResult the run returned, and writing it again gives the file."""
    run = api.run(str(HERE / "user_scenarios" / "failing.py"), device="cpu", options=TINY,
                  out=tmp_path)
    written = (run.run_dir / artifacts.RUN_JSON).read_bytes()

    decoded = results.read_run(run.run_dir)
    assert decoded == run
    assert results.read_run(run.run_dir / artifacts.RUN_JSON) == run  # the file itself
    assert isinstance(decoded.run_dir, Path)
    ok = next(s for s in decoded.strategies if s.name == "base")
    assert isinstance(ok.stats, results.Stats) and ok.stats.n == 3
    assert isinstance(ok.equivalence, results.Equivalence)
    assert [s.name for s in decoded.failed] == ["broken", "wrong"]

    again = tmp_path / "again.json"
    artifacts.write_json_atomic(again, decoded.to_json())
    assert again.read_bytes() == written


@pytest.mark.parametrize(("text", "says"), [
    ("{", "not a readable run.json"),
    ('{"schema": "profkit.analysis/1"}', "expected schema 'profkit.run/1'"),
    ('{"schema": "profkit.run/1", "scenario": {"name": "x"}}', "not a profkit run record"),
])
def test_a_file_that_is_not_a_run_is_one_clear_error(tmp_path, text, says) -> None:
    path = tmp_path / "run.json"
    path.write_text(text)
    with pytest.raises(UsageError, match=says) as info:
        results.read_run(tmp_path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_wrong_type_names_the_field(tmp_path) -> None:
    run = results.RunResult(
        run_dir=tmp_path, scenario="s", description="", baseline="a", item_unit="items",
        device="cpu", params={}, sweep=(), points=(), options={}, environment={},
        strategies=(results.StrategyResult("a", results.OK, stats=results.stats([1, 2])),),
        started_at="now")
    doc = json.loads(json.dumps(run.to_json()))
    assert results.RunResult.from_json(doc) == run
    doc["strategies"][0]["stats"]["n"] = "three"
    with pytest.raises(msgspec.ValidationError, match=r"\$\.strategies\[0\]\.stats\.n"):
        results.RunResult.from_json(doc)


def test_results_and_the_ddp_benchmark_side_do_not_import_torch() -> None:
    code = ("import sys\n"
            "import profiler_kit.results, profiler_kit.ddp_benchmark.report\n"
            "import profiler_kit.ddp_benchmark.diff\n"
            "assert 'torch' not in sys.modules\n"
            "assert not any(m.startswith('profiler_kit.analysis') for m in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def _timed(name: str, items: int, median_s: float, world: int) -> results.StrategyResult:
    samples = [int(median_s * 1e9)] * 5
    per_rank = tuple(tuple(v - 1000 * r for v in samples) for r in range(world))
    st = results.stats(samples)
    return results.StrategyResult(
        name=name, status=results.OK, samples_ns=tuple(samples), stats=st,
        items_per_step=items, throughput_items_per_s=results.throughput(items, st.median_ns),
        world_size=world, per_rank_samples_ns=per_rank if world > 1 else ())


def test_ddp_verdicts_go_by_throughput_not_step_time() -> None:
    """The case of a real CPU run: ddp-w2 steps take longer (two ranks' batches on two
    cores) but it trains 72.3 images/s against no-ddp's 65.8, so it is faster and best."""
    no_ddp = _timed("no-ddp", 8, 8 / 65.8, 1)
    w1 = _timed("ddp-w1", 8, 8 / 60.0, 1)
    w2 = _timed("ddp-w2", 16, 16 / 72.3, 2)
    found = {s.name: s for s in results.against_baseline((no_ddp, w1, w2), "no-ddp")}
    assert found["no-ddp"].speedup == pytest.approx(1.0)
    assert found["ddp-w2"].speedup == pytest.approx(72.3 / 65.8)  # step time said 0.55x
    assert found["ddp-w2"].scaling_efficiency == pytest.approx(72.3 / (2 * 65.8))
    assert found["ddp-w1"].scaling_efficiency == pytest.approx(60.0 / 65.8)
    # one round: +9.9 % lies inside the 10 % margin that stands for the unknown
    # run-to-run noise, so ddp-w2 is within noise and no strategy is called best
    assert found["ddp-w2"].noise.method == "within one run"
    assert found["ddp-w2"].noise.ci_low_fraction == pytest.approx(72.3 / 65.8 - 1)
    assert found["ddp-w2"].noise.beyond_noise is False
    assert found["no-ddp"].noise is None
    assert results.best(tuple(found.values())) is None
    slowest = found["ddp-w2"].samples_ns[0]
    assert found["ddp-w2"].rank_medians_ns == pytest.approx((slowest, slowest - 1000))
    # no baseline at that point: nothing to compare against
    (alone,) = results.against_baseline((w2,), "no-ddp")
    assert alone.speedup is None and alone.scaling_efficiency is None
