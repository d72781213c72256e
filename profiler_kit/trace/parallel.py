"""Loading one large trace on several cores.

The content is cut into parts at candidate event boundaries (``}, {``) near equal
offsets; a forked worker decodes each part but the first, which this process decodes
while they run. A candidate can lie inside a string, so a part is kept only when the
part before it, decoded from a true boundary, ends exactly where it starts: each
part's end is then proven a true boundary. Anything else (a false boundary, broken
data, a worker that fails) sends the file to the one-pass loader, which gives the
same table or names the problem. Each worker reads the file from its start (gzip
has to be inflated up to the part), so gzip gains less than plain JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profiler_kit.forking import cores, may_fork, worker_pool
from profiler_kit.trace.source import content_size
from profiler_kit.trace.stream import WHOLE_BYTES, Part, _Loader
from profiler_kit.trace.table import EventTable

if TYPE_CHECKING:
    from multiprocessing.pool import AsyncResult


class _Parts:
    def __init__(self, stop: int, pending: list[AsyncResult]) -> None:
        self.stop = stop
        self.pending = pending

    def parts(self) -> list[Part]:
        return [p.get() for p in self.pending]


def load_in_parts(loader: _Loader, jobs: int | None,
                  min_bytes: int = WHOLE_BYTES) -> EventTable | None:
    """The table from ``jobs`` parts at once (default: one per core where this process
    may fork) when the content is over ``min_bytes``; None when it is not done."""
    size = content_size(loader.path)
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
        pending = [pool.apply_async(_load_part, (loader.path, loader.chunk_bytes, start, stop))
                   for start, stop in zip(starts, [*starts[1:], None], strict=True)]
        return loader.run(_Parts(starts[0], pending))
    except Exception:  # noqa: BLE001 - any failure: the one-pass loader decides
        return None
    finally:
        pool.terminate()
        pool.join()


def _load_part(path: Path, chunk_bytes: int, start: int, stop: int | None) -> Part:
    import gc

    gc.disable()
    return _Loader(path, chunk_bytes, False, False).run_part(start, stop)
