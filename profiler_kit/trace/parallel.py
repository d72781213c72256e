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
from typing import TYPE_CHECKING

from profiler_kit.trace.columns import Part
from profiler_kit.trace.forking import cores, may_fork, worker_pool
from profiler_kit.trace.pieces import PieceReader
from profiler_kit.trace.source import content_size
from profiler_kit.trace.table import EventTable

if TYPE_CHECKING:
    from multiprocessing.pool import AsyncResult

WHOLE_BYTES = 64 << 20  # content up to this size is decoded in one process


class WorkerParts:
    """The first part's end, and the later parts as the workers finish them."""

    def __init__(self, stop: int, pending: list[AsyncResult]) -> None:
        self.stop = stop
        self.pending = pending

    def parts(self) -> list[Part]:
        return [p.get() for p in self.pending]


def load_in_parts(path: Path, chunk_bytes: int, jobs: int | None,
                  min_bytes: int) -> EventTable | None:
    """The table from ``jobs`` parts at once (default: one per core where this process
    may fork) when the content is over ``min_bytes``; None when it is not done."""
    size = content_size(path)
    if size is None or size <= min_bytes:
        return None
    if jobs is None:
        jobs = cores() if may_fork() else 1
    if jobs < 2 or size < jobs:
        return None
    starts = [size * k // jobs for k in range(1, jobs)]
    pool = worker_pool(len(starts))  # forked now, before this process starts any thread
    if pool is None:
        return None
    try:
        pending = [pool.apply_async(load_part, (path, chunk_bytes, start, stop))
                   for start, stop in zip(starts, [*starts[1:], None], strict=True)]
        return PieceReader(path, chunk_bytes).read(split=WorkerParts(starts[0], pending))
    except Exception:  # noqa: BLE001 - any failure: the one-pass loader decides
        return None
    finally:
        pool.terminate()
        pool.join()


def load_part(path: Path, chunk_bytes: int, start: int, stop: int | None) -> Part:
    """In a worker: the part between the boundaries at or after ``start`` and ``stop``."""
    import gc

    gc.disable()
    return PieceReader(path, chunk_bytes).read_part(start, stop)
