"""Analyzing trace files: one after another, or several at once in worker processes.

Traces of a run folder or of a job's ranks are independent, so each can be loaded
and analyzed on its own core, in forked workers (they start at once, with the modules
already imported) where :func:`profiler_kit.trace.forking.may_fork` allows. A worker hands
back only its small result, so memory stays bounded by one trace per worker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from profiler_kit.analysis.collectives import RankSummary
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.trace.forking import cores, may_fork, worker_pool

T = TypeVar("T")


def analyze_files(files: Sequence[Path], labels: Sequence[str], top: int,
                  jobs: int | None = None) -> list[TraceAnalysis]:
    """One analysis per file, in order, ``jobs`` files at a time (None: one per core,
    when this process may fork; else one at a time)."""
    return _map(_analyze, [(f, label, top) for f, label in zip(files, labels, strict=True)],
                jobs)


def summarize_files(files: Sequence[Path], labels: Sequence[str],
                    jobs: int | None = None) -> list[RankSummary]:
    """One :class:`RankSummary` per file (the job view's input), as :func:`analyze_files`."""
    return _map(_summarize, list(zip(files, labels, strict=True)), jobs)


def _map(fn: Callable[[tuple[Any, ...]], T], tasks: list[tuple[Any, ...]],
         jobs: int | None) -> list[T]:
    if jobs is None:
        workers = cores() if len(tasks) > 1 and may_fork() else 1
    else:
        workers = jobs
    workers = min(workers, len(tasks))
    pool = worker_pool(workers) if workers > 1 else None
    if pool is None:
        # a large trace analyzed here is loaded in up to ``jobs`` parts at once
        return [fn((*t, jobs)) for t in tasks]
    try:
        results = list(pool.imap(fn, [(*t, 1) for t in tasks]))  # a TraceError re-raises here
    except BaseException:
        pool.terminate()  # Ctrl-C or a bad file: stop the others now
        raise
    else:
        pool.close()
    finally:
        pool.join()
    return results


def _analyze(task: tuple[Path, str, int, int | None]) -> TraceAnalysis:
    from profiler_kit.analysis.trace_analysis import analyze_table
    from profiler_kit.trace.loader import load

    path, label, top, parts = task
    return analyze_table(load(path, jobs=parts), label=label, top=top)


def _summarize(task: tuple[Path, str, int | None]) -> RankSummary:
    from profiler_kit.analysis.collectives import summarize_rank
    from profiler_kit.trace.loader import load

    path, label, parts = task
    return summarize_rank(load(path, jobs=parts), label=label)
