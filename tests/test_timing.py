"""Statistics against numpy/statistics, and the synchronization around every sample."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from profiler_kit import devices, timing


@given(st.lists(st.integers(min_value=1, max_value=10**12), min_size=1, max_size=200))
def test_stats_match_numpy_and_statistics(samples: list[int]) -> None:
    s = timing.stats(samples)
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
    steady = timing.stats([100, 100, 101, 99, 100])
    assert not steady.noisy and steady.iqr_fraction == pytest.approx(0.0)
    noisy = timing.stats([100, 80, 120, 60, 140])  # IQR 40 on a median of 100
    assert noisy.iqr_fraction == pytest.approx(0.4) and noisy.noisy
    assert noisy.to_json()["noisy"] is True


def test_stats_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        timing.stats([])


def test_throughput_speedup_and_slowest_rank() -> None:
    assert timing.throughput(200, 0.5e9) == pytest.approx(400.0)
    assert timing.speedup(2e6, 1e6) == pytest.approx(2.0)
    assert timing.speedup(None, 1e6) is None
    assert timing.slowest_rank([(1, 5, 3), (2, 4, 3)]) == (2, 5, 3)


def test_every_sample_is_bracketed_by_a_sync_of_every_device(monkeypatch) -> None:
    log: list[object] = []
    real = devices.synchronize

    def recording_sync(devs):
        log.append(("sync", tuple(str(d) for d in devs)))
        real(devs)

    monkeypatch.setattr(devices, "synchronize", recording_sync)
    used = [torch.device("cpu"), torch.device("cpu")]
    samples = timing.time_iterations(lambda: log.append("step"), used, iterations=3, warmup=2)
    assert len(samples) == 3 and all(s >= 0 for s in samples)
    steps = [i for i, e in enumerate(log) if e == "step"]
    assert len(steps) == 5  # warm-up runs too, and is discarded
    for i in steps:
        assert log[i - 1] == ("sync", ("cpu", "cpu"))
        assert log[i + 1] == ("sync", ("cpu", "cpu"))


def test_phases_are_timed_separately_and_sum_to_the_step() -> None:
    import time

    phases = [("forward", lambda: time.sleep(0.002)), ("backward", lambda: time.sleep(0.004))]
    out = timing.time_phases(phases, [torch.device("cpu")], iterations=4, warmup=1)
    assert {len(v) for v in out.values()} == {4}
    for fwd, bwd, step in zip(out["forward"], out["backward"], out["step"], strict=True):
        assert fwd >= 2_000_000 and bwd >= 4_000_000
        assert step >= fwd + bwd


@pytest.mark.gpu
@pytest.mark.skipif(devices.cuda_count() < 1, reason="needs CUDA")
def test_sync_waits_for_queued_cuda_work() -> None:
    x = torch.randn(4096, 4096, device="cuda")
    samples = timing.time_iterations(lambda: x @ x, [x.device], iterations=3, warmup=1)
    # 4096^3 * 2 flops cannot finish in 10 µs: the sample includes the kernel
    assert min(samples) > 10_000
