"""Samples and their statistics.

A sample is one iteration bracketed by a synchronization of every device the
strategy uses, timed with ``time.perf_counter_ns``; warm-up iterations run the
same way and are thrown away. Statistics use linear interpolation between order
statistics (numpy's default, ``statistics.quantiles(method="inclusive")``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

NOISY_IQR_FRACTION = 0.10  # IQR/median above this flags a result as noisy

Progress = Callable[[str, int, int], None]  # (pass name, done, total)


@dataclass(frozen=True)
class Stats:
    """Summary of one set of samples (all nanoseconds)."""

    n: int
    median_ns: float
    iqr_ns: float
    mean_ns: float
    p50_ns: float
    p75_ns: float
    p90_ns: float
    p95_ns: float
    min_ns: int
    max_ns: int

    @property
    def iqr_fraction(self) -> float:
        """IQR relative to the median: the spread that decides whether a result is noisy."""
        return self.iqr_ns / self.median_ns if self.median_ns > 0 else float("nan")

    @property
    def noisy(self) -> bool:
        return self.iqr_fraction > NOISY_IQR_FRACTION

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["iqr_fraction"] = self.iqr_fraction
        data["noisy"] = self.noisy
        return data


def stats(samples_ns: Sequence[int]) -> Stats:
    """Statistics of ``samples_ns``; raises ValueError when there are none."""
    if len(samples_ns) == 0:
        raise ValueError("no samples")
    a = np.asarray(samples_ns, dtype=np.float64)
    p25, p50, p75, p90, p95 = np.percentile(a, [25, 50, 75, 90, 95])
    return Stats(
        n=len(a),
        median_ns=float(p50),
        iqr_ns=float(p75 - p25),
        mean_ns=float(a.mean()),
        p50_ns=float(p50),
        p75_ns=float(p75),
        p90_ns=float(p90),
        p95_ns=float(p95),
        min_ns=int(min(samples_ns)),
        max_ns=int(max(samples_ns)),
    )


def throughput(items_per_step: float, median_ns: float) -> float | None:
    """Items per second at the median step time."""
    if median_ns <= 0:
        return None
    return items_per_step * 1e9 / median_ns


def speedup(baseline_median_ns: float | None, median_ns: float) -> float | None:
    """How many times faster than the baseline (> 1 is faster)."""
    if baseline_median_ns is None or median_ns <= 0:
        return None
    return baseline_median_ns / median_ns


def slowest_rank(per_rank_samples_ns: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Each step's time is the slowest rank's: ranks wait for each other, so never pool them."""
    if not per_rank_samples_ns:
        return ()
    n = min(len(s) for s in per_rank_samples_ns)
    return tuple(max(int(s[i]) for s in per_rank_samples_ns) for i in range(n))


def time_iterations(
    step: Callable[[], None],
    devices: Iterable[Any],
    iterations: int,
    warmup: int,
    progress: Progress | None = None,
    pass_name: str = "timing",
) -> list[int]:
    """Run ``warmup`` discarded then ``iterations`` kept iterations, each synchronized."""
    phase_samples = time_phases([("step", step)], devices, iterations, warmup, progress, pass_name)
    return phase_samples["step"]


def time_phases(
    phases: Sequence[tuple[str, Callable[[], None]]],
    devices: Iterable[Any],
    iterations: int,
    warmup: int,
    progress: Progress | None = None,
    pass_name: str = "timing",
) -> dict[str, list[int]]:
    """Time a step made of ``phases``: every device is synchronized before the step and
    after each phase. Returns the kept samples per phase and, under ``"step"``, per step
    (when there is one phase called ``step`` the two are the same list)."""
    from profiler_kit.devices import synchronize

    devices = list(devices)
    total = warmup + iterations
    samples: dict[str, list[int]] = {name: [] for name, _ in phases}
    samples.setdefault("step", [])
    for i in range(total):
        synchronize(devices)
        start = last = time.perf_counter_ns()
        ends: list[tuple[str, int]] = []
        for name, fn in phases:
            fn()
            synchronize(devices)
            now = time.perf_counter_ns()
            ends.append((name, now - last))
            last = now
        if i >= warmup:
            for name, dt in ends:
                samples[name].append(dt)
            if "step" not in dict(phases):
                samples["step"].append(last - start)
        if progress is not None:
            progress(pass_name, i + 1, total)
    return samples
