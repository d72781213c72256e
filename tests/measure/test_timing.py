"""The synchronization around every sample (statistics: test_results.py)."""

from __future__ import annotations

import pytest
import torch

from profiler_kit.measure import devices, timing


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


@pytest.mark.timing
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
