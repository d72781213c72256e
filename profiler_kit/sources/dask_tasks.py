"""Rank summaries and the job reduction as Dask tasks, for traces spread over machines.

``--scheduler tcp://HOST:PORT`` hands each trace to a worker of that Dask cluster (the
traces' paths must mean the same file there: a shared file system), which loads it and
sends back only its :class:`RankSummary`, or an :class:`Unreadable` naming it; the job
view is then reduced by one more task from those summaries. ``--scheduler local``
starts a ``LocalCluster`` of one single-threaded worker process per core for the call.

The summaries are the ones :func:`profiler_kit.sources.trace_files.summarize_files` makes,
in the same order, so the results are those of the local pool. A worker that dies
while it holds a task costs nothing but time: the scheduler runs the task again
elsewhere (up to its ``allowed-failures``), and tasks that raise are retried once.

``dask[distributed]`` is an optional extra, imported only here, only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from profiler_kit.analysis.job_analysis import analyze_jobs
from profiler_kit.analysis.jobs.job_view import JobView
from profiler_kit.analysis.jobs.rank_summary import RankSummary
from profiler_kit.errors import MissingDependency, UsageError
from profiler_kit.sources.trace_files import summarize_one
from profiler_kit.trace.source import Unreadable

LOCAL = "local"
RETRIES = 1
T = TypeVar("T")


def check_scheduler(address: str) -> str:
    """``local``, or a ``tcp://``/``tls://``/``inproc://`` address; UsageError otherwise."""
    if address == LOCAL or address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        return address
    raise UsageError(f"--scheduler {address}: give a Dask scheduler address "
                     "(tcp://HOST:PORT) or 'local'")


@contextmanager
def client(address: str) -> Iterator[Any]:
    """A ``distributed.Client`` of ``address`` (a LocalCluster for ``local``), closed after."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise MissingDependency("--scheduler needs Dask: pip install 'dask[distributed]' "
                                "(or profkit[dask])") from None
    if address == LOCAL:
        from profiler_kit.trace.forking import cores

        with LocalCluster(n_workers=cores(), threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as c:
            yield c
        return
    try:
        c = Client(check_scheduler(address), timeout=30)
    except OSError as exc:
        raise UsageError(f"--scheduler {address}: cannot reach the scheduler ({exc})") from None
    with c:
        yield c


def map_tasks(c: Any, fn: Callable[[Any], T], tasks: Sequence[Any]) -> list[T]:
    """``fn`` of every task on the cluster, results in the order of ``tasks``."""
    futures = c.map(fn, list(tasks), pure=False, retries=RETRIES)
    return c.gather(futures)


def summarize_files(c: Any, files: Sequence[Path], labels: Sequence[str],
                    fn: Callable[[tuple], RankSummary | Unreadable] = summarize_one
                    ) -> list[RankSummary | Unreadable]:
    """One summary per file, each made by a worker (see the module docstring)."""
    tasks = [(Path(f), label, 1) for f, label in zip(files, labels, strict=True)]
    return map_tasks(c, fn, tasks)


def job_views(c: Any, summaries: Sequence[RankSummary]) -> tuple[JobView, ...]:
    """The job view of ``summaries``, reduced by one task on the cluster."""
    future = c.submit(analyze_jobs, list(summaries), pure=False, retries=RETRIES)
    return future.result()
