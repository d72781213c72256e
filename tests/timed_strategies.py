"""Strategy results built by hand: timed rounds of given medians, for the verdict tests."""

from __future__ import annotations

from profiler_kit.results import StrategyResult, stats


def timed(name: str, round_medians_ms: list[float]) -> StrategyResult:
    """A strategy timed in rounds of 8 samples around each given median (1 % apart)."""
    rounds = tuple(tuple(int(ms * 1e6 * (1 + 0.01 * (i % 3))) for i in range(8))
                   for ms in round_medians_ms)
    pooled = tuple(v for r in rounds for v in r)
    return StrategyResult(name=name, status="ok", samples_ns=pooled, stats=stats(pooled),
                          repeat_samples_ns=rounds, items_per_step=1,
                          throughput_items_per_s=1e9 / stats(pooled).median_ns)
