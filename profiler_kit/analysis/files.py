"""Analyzing trace files: one after another, or several at once in worker processes.

Traces of a run folder or of a job's ranks are independent, so each can be loaded
and analyzed on its own core, in forked workers (they start at once, with the modules
already imported) where :func:`profiler_kit.trace.forking.may_fork` allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.trace.forking import cores, may_fork, worker_pool


def analyze_files(files: Sequence[Path], labels: Sequence[str], top: int,
                  jobs: int | None = None) -> list[TraceAnalysis]:
    """One analysis per file, in order, ``jobs`` files at a time (None: one per core,
    when this process may fork; else one at a time)."""
    if jobs is None:
        workers = cores() if len(files) > 1 and may_fork() else 1
    else:
        workers = jobs
    workers = min(workers, len(files))
    pool = worker_pool(workers) if workers > 1 else None
    if pool is None:
        # a large trace analyzed here is loaded in up to ``jobs`` parts at once
        return [_analyze((f, label, top, jobs)) for f, label in zip(files, labels, strict=True)]
    tasks = [(f, label, top, 1) for f, label in zip(files, labels, strict=True)]
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


def _analyze(task: tuple[Path, str, int, int | None]) -> TraceAnalysis:
    from profiler_kit.analysis.trace_analysis import analyze_table
    from profiler_kit.trace.loader import load

    path, label, top, parts = task
    return analyze_table(load(path, jobs=parts), label=label, top=top)
