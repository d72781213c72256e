"""Loading one large trace on several cores.

The content is cut into parts at candidate event boundaries (``}, {``) near equal
offsets; a forked worker decodes each part but the first, which this process decodes
while they run. A candidate can lie inside a string, so a part is kept only when the
part before it, decoded from a true boundary, ends exactly where it starts: each
part's end is then proven a true boundary. Anything else (a false boundary, broken
data, a worker that fails) gives None, and the caller loads the file in one pass,
which gives the same table or names the problem. Each worker reads the file from its
start (gzip has to be inflated up to the part), so gzip gains less than plain JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from profiler_kit.trace.columns import Part
from profiler_kit.trace.forking import cores, fork_workers, may_fork, stop_workers
from profiler_kit.trace.pieces import PieceReader
from profiler_kit.trace.source import content_size
from profiler_kit.trace.table import EventTable

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from profiler_kit.trace.forking import Workers

WHOLE_BYTES = 64 << 20  # content up to this size is decoded in one process


class WorkerParts:
    """The first part's end, and the later parts as the workers send them."""

    def __init__(self, stop: int, workers: Workers) -> None:
        self.stop = stop
        self.workers = workers

    def parts(self) -> list[Part]:
        out = []
        for _, conn in self.workers:
            ok, value = conn.recv()
            if not ok:
                raise RuntimeError(value)  # the worker's failure: one pass decides
            out.append(value)
        return out


def load_in_parts(path: Path, chunk_bytes: int, jobs: int | None,
                  min_bytes: int) -> EventTable | None:
    """The table from ``jobs`` parts at once (default: one per core where this process
    may fork) when the content is over ``min_bytes``; None when it is not done. Each
    worker sends its part down a pipe (see :func:`forking.fork_workers`)."""
    size = content_size(path)
    if size is None or size <= min_bytes:
        return None
    if jobs is None:
        jobs = cores() if may_fork() else 1
    if jobs < 2 or size < jobs:
        return None
    starts = [size * k // jobs for k in range(1, jobs)]
    # forked now, before this process starts any thread
    workers = fork_workers(_work, [(path, chunk_bytes, start, stop) for start, stop
                                   in zip(starts, [*starts[1:], None], strict=True)])
    if workers is None:
        return None
    try:
        return PieceReader(path, chunk_bytes).read(split=WorkerParts(starts[0], workers))
    except Exception:  # noqa: BLE001 - any failure: the one-pass loader decides
        return None
    finally:
        stop_workers(workers)


def _work(send: Connection, *args: Any) -> None:
    """In a worker: its part, or why it failed, down the pipe."""
    try:
        result = (True, load_part(*args))
    except Exception as exc:  # noqa: BLE001 - the parent falls back to one pass
        result = (False, f"{type(exc).__name__}: {exc}")
    send.send(result)
    send.close()


def load_part(path: Path, chunk_bytes: int, start: int, stop: int | None) -> Part:
    """In a worker: the part between the boundaries at or after ``start`` and ``stop``."""
    import gc

    gc.disable()
    return PieceReader(path, chunk_bytes).read_part(start, stop)
