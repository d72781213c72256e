"""Loading one trace on two cores while the command imports its analyses.

``profkit analyze TRACE`` spends about a quarter of its time loading the trace and an
eighth importing the analyses, and neither needs the other. So a command that will
load one trace calls :func:`prefetch` first (or enters :func:`loading_ahead`): a forked
child decodes the later part of the events (a part, as :mod:`~profiler_kit.trace.parallel`
cuts them) while this process goes on importing. The command passes the :class:`Pending`
it got down to :func:`profiler_kit.trace.loader.load` (``ahead=``), which decodes the first
part here and joins the child's to it, handed back pickled through a pipe. The child's
part is the larger: this process has the imports to do first.

Only where it pays and is safe: one trace of ``MIN_BYTES`` to ``parallel.WHOLE_BYTES``
(a larger one is loaded in parts on every core anyway), a core idle at the start (on a
busy machine the child only competes: 1.04x the time beside a CPU hog on two cores),
and a process that may fork (:mod:`~profiler_kit.trace.forking`). Whatever goes wrong
(a false boundary, a child killed, broken data) costs only the time: the file is then
loaded in one pass here, which gives the same table or names the problem.
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from profiler_kit.trace.columns import Part
from profiler_kit.trace.forking import idle_cores, may_fork
from profiler_kit.trace.parallel import WHOLE_BYTES
from profiler_kit.trace.pftrace import is_pftrace
from profiler_kit.trace.pieces import Misaligned, PieceReader
from profiler_kit.trace.source import content_size, looks_like_trace
from profiler_kit.trace.table import EventTable

MIN_BYTES = 4 << 20  # below this the whole load takes about as long as the fork saves
# The imports this process does first take about as long as decoding this much (6 MB):
# the child takes it over and half of the rest, so that both end at about the same time.
HEAD_START_BYTES = 6 << 20
PIECE_BYTES = 1 << 20  # as ``loader.SMALL_PIECE_BYTES``: the same pieces either way
SNIFF_BYTES = 1 << 16  # a Kineto trace's event list starts in its first kilobytes
PIPE_BYTES = 1 << 20  # the part in a few reads, not in thirty of the default 64 kB


class _Child:
    """A forked child decoding the events from ``stop`` on: its process, its pipe, the
    file as it was when it began, and the process that forked it."""

    def __init__(self, stop: int, pid: int, fd: int, file: tuple[int, ...]) -> None:
        self.stop = stop
        self.pid = pid
        self.fd = fd
        self.file = file
        self.parent = os.getpid()

    def parts(self) -> list[Part]:
        """The child's part (:class:`Misaligned` when it could not make one)."""
        chunks = []
        while chunk := os.read(self.fd, 1 << 20):
            chunks.append(chunk)
        try:
            part = pickle.loads(b"".join(chunks))  # noqa: S301 - our own child's bytes
        except Exception:  # noqa: BLE001 - it died mid-way
            raise Misaligned from None
        if not isinstance(part, Part):
            raise Misaligned
        return [part]

    def end(self) -> None:
        """Close the pipe, stop the child if it still runs, and reap it; once, and only in
        the process that forked it (a worker forked later inherits the record)."""
        if self.fd < 0 or os.getpid() != self.parent:
            return
        fd, self.fd = self.fd, -1
        os.close(fd)
        try:  # not reaped yet, so the pid is still the child's
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass


class Pending:
    """The trace being loaded ahead: its later part decoded by a forked child. Hand it to
    ``loader.load(path, ahead=...)``, which takes it once; :meth:`close` stops a child
    whose part was not taken."""

    def __init__(self, path: Path, child: _Child) -> None:
        self.path = path.resolve()
        self._child: _Child | None = child

    @property
    def child(self) -> _Child | None:
        return self._child

    def take(self, path: Path) -> EventTable | None:
        """The table of ``path`` when it is this trace: the first part decoded here, joined
        to the child's; None when it is another file, was taken already, changed since, or
        the parts do not join up (load the file in one pass)."""
        child = self._child
        try:
            if child is None or path.resolve() != self.path:
                return None
            self._child = None
            if _identity(path) != child.file:
                child.end()
                return None
        except OSError:
            return None
        try:
            return PieceReader(path, PIECE_BYTES).read(split=child)
        except Exception:  # noqa: BLE001 - any failure: the one-pass loader decides
            return None
        finally:
            child.end()

    def close(self) -> None:
        if self._child is not None:
            self._child.end()
            self._child = None


@contextmanager
def loading_ahead(paths: list[str], jobs: int | None) -> Iterator[Pending | None]:
    """Within: the trace of ``paths`` loads ahead where :func:`prefetch` allows (the value
    to pass to ``load``, or None); on leaving, a child whose part was not taken is
    stopped."""
    pending = prefetch(paths, jobs)
    try:
        yield pending
    finally:
        if pending is not None:
            pending.close()


def prefetch(paths: list[str], jobs: int | None) -> Pending | None:
    """Begin decoding the trace's later part in a forked child when ``paths`` name one
    trace file, ``jobs`` (the processes the user allows; None: one per core) is not 1,
    and it pays and is safe; None where it did not begin."""
    if len(paths) != 1 or jobs == 1 or not may_fork() or idle_cores() < 1 \
            or signal.getsignal(signal.SIGCHLD) is signal.SIG_IGN:  # children reaped unseen
        return None
    path = Path(paths[0])
    try:
        size = _trace_size(path)
        if size is None:
            return None
        file = _identity(path)
        read_end, write_end = os.pipe()
    except OSError:
        return None
    _larger_pipe(write_end)
    stop = max(size // 10, (size - HEAD_START_BYTES) // 2)
    # Ctrl-C waits until the child is on record here, and in the child until it is ready
    interrupt = {signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, interrupt)
    try:
        try:
            pid = os.fork()
        except OSError:  # out of processes or memory: load it here
            os.close(read_end)
            os.close(write_end)
            return None
        if pid == 0:
            _child(path, stop, read_end, write_end)  # never returns
        os.close(write_end)
        return Pending(path, _Child(stop, pid, read_end, file))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupt)


def _trace_size(path: Path) -> int | None:
    """The content size of a trace file that is worth loading ahead, else None."""
    if not path.is_file() or is_pftrace(path) or not looks_like_trace(path, SNIFF_BYTES):
        return None
    size = content_size(path)
    return size if size is not None and MIN_BYTES <= size <= WHOLE_BYTES else None


def _identity(path: Path) -> tuple[int, ...]:
    """The file as it is now: replaced, rewritten or touched, it differs (the change
    time moves with any write, even one that restores the modification time)."""
    st = path.stat()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _larger_pipe(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # not Linux, or over the system's limit for this user: the default works too


def _child(path: Path, stop: int, read_end: int, write_end: int) -> None:
    """In the child: decode the part, send it, and leave without running the parent's
    exit code or flushing its buffers; its output goes nowhere, so a reader of the
    parent's output does not wait for it."""
    try:
        os.close(read_end)
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        with os.fdopen(write_end, "wb") as pipe:
            pickle.dump(_later_part(path, stop), pipe, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        os._exit(0)


def _later_part(path: Path, stop: int) -> Part | None:
    try:
        return PieceReader(path, PIECE_BYTES).read_part(stop, None)
    except Exception:  # noqa: BLE001 - the parent loads the file whole and reports
        return None
