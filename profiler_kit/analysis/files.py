"""Analyzing trace files: one after another, or several at once in worker processes.

Traces of a run folder or of a job's ranks are independent, so each can be loaded
and analyzed on its own core. Workers are forked, so they start at once with the
modules already imported, and only where forking is safe: on Linux, from a process
that has a single thread (a fork copies no other thread, so a lock one of them held,
in a BLAS pool, torch or a GPU driver, would stay locked in the child for good).
The console commands qualify: they start no BLAS threads.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from profiler_kit.analysis.report import TraceAnalysis


def analyze_files(files: Sequence[Path], labels: Sequence[str], top: int,
                  jobs: int | None = None) -> list[TraceAnalysis]:
    """One analysis per file, in order, ``jobs`` files at a time (None: one per core,
    when this process may fork; else one at a time)."""
    tasks = [(f, label, top) for f, label in zip(files, labels, strict=True)]
    if jobs is None:
        jobs = _cores() if _single_threaded() else 1
    workers = min(jobs, len(tasks))
    if workers <= 1 or not sys.platform.startswith("linux"):
        return [_analyze(task) for task in tasks]
    import multiprocessing

    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_interrupts)
    try:
        results = list(pool.imap(_analyze, tasks))  # a worker's TraceError re-raises here
    except BaseException:
        pool.terminate()  # Ctrl-C or a bad file: stop the others now
        raise
    else:
        pool.close()
    finally:
        pool.join()
    return results


def _cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _single_threaded() -> bool:
    """True when this process runs one thread only, native threads included (Linux)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _analyze(task: tuple[Path, str, int]) -> TraceAnalysis:
    from profiler_kit.analysis.report import analyze_table
    from profiler_kit.trace.loader import load

    path, label, top = task
    return analyze_table(load(path), label=label, top=top)


def _ignore_interrupts() -> None:
    """Ctrl-C reaches every process of the terminal: the parent alone handles it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
