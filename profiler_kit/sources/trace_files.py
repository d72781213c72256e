"""Analyzing trace files: one after another, or several at once in worker processes.

Traces of a run folder or of a job's ranks are independent, so each can be loaded
and analyzed on its own core, in forked workers (they start at once, with the modules
already imported) where :func:`profiler_kit.trace.forking.may_fork` allows. A worker hands
back only its small result, so memory stays bounded by one trace per worker. A file
that cannot be read (truncated, not JSON) does not stop the others: it comes back as an
:class:`Unreadable` naming it and the problem, for the caller to report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from profiler_kit.analysis.jobs.rank_summary import RankSummary
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.errors import TraceError
from profiler_kit.trace.forking import cores, may_fork, worker_pool
from profiler_kit.trace.source import Unreadable

if TYPE_CHECKING:
    from profiler_kit.trace.load_ahead import Pending

T = TypeVar("T")


def split_unreadable(results: Sequence[T | Unreadable]) -> tuple[list[T], list[Unreadable]]:
    """The results that were read, and the files that could not be."""
    return ([r for r in results if not isinstance(r, Unreadable)],
            [r for r in results if isinstance(r, Unreadable)])


def analyze_files(files: Sequence[Path], labels: Sequence[str], top: int,
                  jobs: int | None = None, min_gain_pct: float | None = None,
                  ahead: Pending | None = None) -> list[TraceAnalysis | Unreadable]:
    """One analysis per file, in order, ``jobs`` files at a time (None: one per core,
    when this process may fork; else one at a time); an :class:`Unreadable` for a file
    that cannot be read. ``min_gain_pct``: the predicted gain under which a rule is held
    back (None: the analysis' default); ``ahead``: the one trace the command began to
    load ahead (used only when it is the one file, analyzed here)."""
    if ahead is not None and len(files) == 1:
        return [_analyze((files[0], labels[0], top, min_gain_pct, jobs), ahead)]
    return _map(_analyze, [(f, label, top, min_gain_pct)
                           for f, label in zip(files, labels, strict=True)], jobs)


def summarize_files(files: Sequence[Path], labels: Sequence[str],
                    jobs: int | None = None) -> list[RankSummary | Unreadable]:
    """One :class:`RankSummary` per file (the job view's input), as :func:`analyze_files`."""
    return _map(summarize_one, list(zip(files, labels, strict=True)), jobs)


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
        results = list(pool.imap(fn, [(*t, 1) for t in tasks]))
    except BaseException:
        pool.terminate()  # Ctrl-C or a bad file: stop the others now
        raise
    else:
        pool.close()
    finally:
        pool.join()
    return results


def _analyze(task: tuple[Path, str, int, float | None, int | None],
             ahead: Pending | None = None) -> TraceAnalysis | Unreadable:
    from profiler_kit.analysis.predicted_gains import MIN_GAIN_PCT
    from profiler_kit.analysis.trace_analysis import analyze_table
    from profiler_kit.trace.loader import load

    path, label, top, min_gain_pct, parts = task
    try:
        table = load(path, jobs=parts, ahead=ahead)
    except TraceError as exc:
        return _unreadable(path, exc)
    from profiler_kit.sources.inductor_provenance import read_provenance
    from profiler_kit.sources.run_items import items_per_step

    return analyze_table(table, label=label, top=top, provenance=read_provenance(path),
                         min_gain_pct=MIN_GAIN_PCT if min_gain_pct is None else min_gain_pct,
                         items_per_step=items_per_step(path))


def summarize_one(task: tuple[Path, str, int | None]) -> RankSummary | Unreadable:
    from profiler_kit.analysis.jobs.rank_summary import summarize_rank
    from profiler_kit.trace.loader import load

    path, label, parts = task
    try:
        table = load(path, jobs=parts)
    except TraceError as exc:
        return _unreadable(path, exc)
    return summarize_rank(table, label=label)


def _unreadable(path: Path, exc: TraceError) -> Unreadable:
    reason = str(exc)
    prefix = f"{path}: "
    return Unreadable(str(path), reason[len(prefix):] if reason.startswith(prefix) else reason)
