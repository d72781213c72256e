"""Samples: the timing loops.

A sample is one iteration bracketed by a synchronization of every device the
strategy uses, timed with ``time.perf_counter_ns``; warm-up iterations run the
same way and are thrown away. Their statistics are in ``profiler_kit.results``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Progress = Callable[[str, int, int], None]  # (pass name, done, total)


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
    from profiler_kit.measure.devices import synchronize

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
