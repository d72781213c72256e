"""Measuring a command in a fresh process: wall time, CPU time and peak RSS.

``os.wait4`` gives the resource usage of that one child, so every run is measured
on its own (no shared ``RUSAGE_CHILDREN`` maximum across runs).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float  # user + system
    peak_rss_bytes: int
    returncode: int


@dataclass(frozen=True)
class Summary:
    label: str
    runs: tuple[Run, ...]

    @property
    def wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def cpu_s(self) -> float:
        return statistics.median(r.cpu_s for r in self.runs)

    @property
    def peak_rss_bytes(self) -> int:
        return int(statistics.median(r.peak_rss_bytes for r in self.runs))


def run_once(cmd: Sequence[str], env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` to completion (output discarded) and measure it."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    # ru_maxrss is in KiB on Linux
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, proc.returncode)


def measure(label: str, cmd: Sequence[str], repeat: int,
            env: dict[str, str] | None = None) -> Summary:
    return Summary(label, tuple(run_once(cmd, env) for _ in range(repeat)))


def measure_alternating(commands: dict[str, Sequence[str]], repeat: int) -> list[Summary]:
    """Each command ``repeat`` times, taking turns, so a machine whose speed drifts
    (other tenants, frequency changes) weighs on all of them alike."""
    runs: dict[str, list[Run]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, cmd in commands.items():
            runs[label].append(run_once(cmd))
    return [Summary(label, tuple(r)) for label, r in runs.items()]


def paired_ratio(slow: Summary, fast: Summary, attr: str = "wall_s") -> float:
    """Median over turns of ``slow / fast``: each ratio compares runs made side by side."""
    return statistics.median(getattr(a, attr) / getattr(b, attr)
                             for a, b in zip(slow.runs, fast.runs, strict=True))


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"
