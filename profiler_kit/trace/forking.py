"""When this process may fork workers, and how many it may use.

A fork copies only the calling thread: a lock that another thread held (in a BLAS
pool, torch, a GPU driver) stays locked in the child for good. So profkit forks only
on Linux, from a process that runs a single thread (native threads included), and
never from a worker that is itself a forked child. The console commands that only
read and compute start no BLAS threads, so they qualify.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.pool import Pool
    from multiprocessing.process import BaseProcess

    Workers = list[tuple[BaseProcess, Connection]]


def may_fork() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        if len(os.listdir("/proc/self/task")) != 1:
            return False
    except OSError:
        return False
    # a forked worker has multiprocessing imported; not importing it saves 15 ms
    multiprocessing = sys.modules.get("multiprocessing")
    return multiprocessing is None or multiprocessing.parent_process() is None


def cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def idle_cores(loadavg: str = "/proc/loadavg") -> int:
    """The cores nothing runs on at this instant: this process's cores less the tasks
    running system-wide, this one included (``loadavg``'s fourth field, running/all); 0
    where that cannot be read. A worker forked when this is 0 only competes."""
    try:
        with open(loadavg) as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(cores() - running, 0)


def worker_pool(workers: int) -> Pool | None:
    """``workers`` forked processes that leave Ctrl-C to this one (it stops them); None
    where forking is not available (not Linux) or not allowed (inside a daemonic worker)."""
    if not sys.platform.startswith("linux"):
        return None
    import multiprocessing

    try:
        return multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_interrupts)
    except (AssertionError, OSError, ValueError):
        return None


def fork_workers(target: Callable[..., None], tasks: Sequence[tuple[Any, ...]]
                 ) -> Workers | None:
    """One forked process per task, calling ``target(send, *task)`` with the sending end
    of a pipe of its own, whose receiving end comes back beside it; None, with none of
    them left running, where forking is not available (not Linux), not allowed (inside
    a daemonic worker) or fails (too many processes, no memory). Plain processes, not a
    pool: a pool's terminate joins its handler threads, and one such join was seen to
    stall for minutes."""
    if not sys.platform.startswith("linux"):
        return None
    import multiprocessing

    workers: Workers = []
    try:
        ctx = multiprocessing.get_context("fork")
        for task in tasks:
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_serve, args=(target, send, *task), daemon=True)
            workers.append((proc, receive))
            try:
                proc.start()
            finally:
                send.close()  # the worker has its own copy
    except (AssertionError, OSError, ValueError):
        stop_workers(workers)
        return None
    return workers


def stop_workers(workers: Workers) -> None:
    """Kill the workers still running (their part is no longer wanted), reap them, then
    close their pipes: closed first, a worker still sending would fail loudly."""
    for proc, receive in workers:
        if proc.pid is not None:  # started
            if proc.is_alive():
                proc.kill()
            proc.join()
        receive.close()


def _serve(target: Callable[..., None], send: Connection, *task: Any) -> None:
    _ignore_interrupts()
    target(send, *task)


def _ignore_interrupts() -> None:
    """Ctrl-C reaches every process of the terminal: the parent alone handles it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
