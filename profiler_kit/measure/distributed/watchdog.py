"""Watching spawned ranks: which one failed or stopped making progress, and why.

Exit codes, signal names and each rank's ``@record`` error file come from
``torch.distributed.elastic``'s process context. Progress is watched with elastic's
timers: each rank keeps renewing a ``FileTimerClient`` timer (``--rank-timeout`` ahead)
as it makes progress, and a ``FileTimerServer`` in this process notices the one that
expires. A stalled rank is then asked for its Python stacks (``STACK_SIGNAL``), so the
error can tell a rank stuck in its own code from one waiting for its peers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profiler_kit.measure.distributed import RankFailure

if TYPE_CHECKING:
    from torch.distributed.elastic.multiprocessing import PContext, ProcessFailure

POLL_S = 0.05
STARTUP_S = 120.0  # extra allowance until a rank's first step is done (imports, init)
STACK_SIGNAL = signal.SIGUSR1
TIMER_FILE_ENV = "PROFKIT_PROGRESS_TIMERS"  # the timer server's FIFO, for the ranks
TIMER_SCOPE = "progress"
_TIMER_INTERVAL_S = 0.2  # how often the timer server looks for expired timers
_STACK_WAIT_S = 1.0  # how long a stalled rank gets to write its stacks when asked


def is_communication_error(error: str | None) -> bool:
    """Whether a rank's error is its peers' failure seen through the backend."""
    return any(w in (error or "") for w in ("DistBackendError", "DistNetworkError",
                                            "Connection", "gloo", "NCCL", "abort"))


class ProgressTimers:
    """Elastic's ``FileTimerServer``, told which ranks' progress timers expired.

    The server is built for torchelastic's agent: it reaps a worker whose timer expires
    with the timer's signal and then signals its own process too. profkit runs it in the
    launching process, which must live on, so the ranks' timers carry no signal (0: the
    server only reports them, through its ``log_event`` callback) and profkit stops the
    ranks itself, after asking them for their stacks."""

    def __init__(self, fifo: Path) -> None:
        from torch.distributed.elastic.timer import FileTimerServer

        self.fifo = fifo
        self._expired: set[int] = set()
        self._server = FileTimerServer(
            str(fifo), run_id="profkit", max_interval=_TIMER_INTERVAL_S,
            log_event=self._event,
        )

    def _event(self, name: str, request: Any) -> None:
        if name == "timer expired" and request is not None:
            self._expired.add(request.worker_pid)

    def expired(self) -> set[int]:
        """PIDs whose progress timer has expired."""
        return set(self._expired)

    def __enter__(self) -> ProgressTimers:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        # A server whose ranks never connected still waits to open its FIFO: release it.
        with contextlib.suppress(OSError):
            os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
        self._server.stop()


@contextlib.contextmanager
def quiet_elastic() -> Iterator[None]:
    """Silence elastic's own log lines (closing signals, failures) while ranks run:
    profkit reports the failure in one line of its own."""
    import torch.distributed.elastic.multiprocessing  # noqa: F401 (creates its loggers)

    loggers = [log for name, log in logging.root.manager.loggerDict.items()
               if name.startswith("torch.distributed.elastic") and isinstance(log, logging.Logger)
               and not log.disabled]
    for log in loggers:
        log.disabled = True
    try:
        yield
    finally:
        for log in loggers:
            log.disabled = False


def name_ranks(ranks: list[int]) -> str:
    """``rank 1`` or ``ranks 0, 1``, for messages."""
    return f"rank{'s' if len(ranks) > 1 else ''} " + ", ".join(str(r) for r in ranks)


def started_marker(job_dir: Path, rank: int) -> Path:
    """The file a rank writes once its progress timer runs (see rank_main)."""
    return job_dir / f"rank{rank}.started"


def watch(ranks: PContext, timers: ProgressTimers, job_dir: Path, name: str,
          timeout_s: float, startup_s: float = STARTUP_S) -> None:
    """Until every rank exits 0; raise RankFailure for the first that fails or hangs.

    A rank that hangs before its progress timer runs (in ``import torch``, say) has no
    timer to expire: it is caught by not having started within ``timeout_s + startup_s``.
    On the first failure elastic stops the other ranks (SIGTERM) before reporting."""
    deadline = time.monotonic() + timeout_s + startup_s
    while True:
        result = ranks.wait(0)
        if result is not None:
            if result.is_failed():
                raise RankFailure(_failure_message(ranks, result.failures, name))
            return
        if time.monotonic() > deadline:
            late = sorted(r for r in ranks.pids() if not started_marker(job_dir, r).exists())
            if late:
                raise RankFailure(
                    f"{name_ranks(late)} did not start within {timeout_s + startup_s:g} s during "
                    f"{name} (hung while starting?); all ranks were stopped (--rank-timeout)")
            deadline = float("inf")
        if timers.expired():
            time.sleep(2 * _TIMER_INTERVAL_S)  # peers waiting for the culprit expire too
            pids = ranks.pids()
            stale = sorted(r for r, pid in pids.items() if pid in timers.expired())
            if stale:
                raise RankFailure(_hang_message(pids, job_dir, stale, name, timeout_s))
        time.sleep(POLL_S)


def _hang_message(pids: dict[int, int], job_dir: Path, stale: list[int],
                  name: str, timeout_s: float) -> str:
    """Name the rank(s) that stopped; a rank waiting in a collective is not the cause."""
    for r in stale:  # ask each stalled rank for its stacks (see rank_main)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pids[r], STACK_SIGNAL)
    time.sleep(_STACK_WAIT_S)
    stacks = {r: _read(job_dir / f"rank{r}.stack") for r in stale}
    waiting = {r for r, text in stacks.items() if _in_collective(_main_stack(text))}
    culprits = [r for r in stale if r not in waiting] or stale
    where = _innermost_frame(stacks[culprits[0]])
    at = f"; it was at {where}" if where else ""
    return (
        f"{name_ranks(culprits)} made no progress for {timeout_s:g} s during {name} (hung?){at}; "
        "all ranks were stopped (--rank-timeout)"
    )


def _failure_message(ranks: PContext, failures: dict[int, ProcessFailure], name: str) -> str:
    def blame(r: int) -> tuple[int, int]:
        error = error_of(failures[r]) or ""
        if not error and failures[r].exitcode == -signal.SIGTERM:
            return (3, r)  # stopped by elastic after another rank failed
        # killed by a signal or exited without a Python error first; peers' comm errors last
        return (0 if error == "" else 1 + is_communication_error(error), r)

    r = min(failures, key=blame)
    error = error_of(failures[r])
    if error:
        return f"rank {r} failed during {name}: {error}"
    code = failures[r].exitcode
    how = f"exited with code {code}"
    if code < 0:
        with contextlib.suppress(ValueError):
            how += f" (killed by {signal.Signals(-code).name})"
    return f"rank {r} {how} during {name}{_log_hint(ranks, r)}"


def error_of(failure: ProcessFailure) -> str | None:
    """``Type: message`` of the exception a rank's ``@record`` wrote, if it wrote one."""
    message = failure.error_file_data.get("message")
    if isinstance(message, dict):
        return str(message.get("message", "")).strip() or None
    return None


def rank_output(ranks: PContext, rank: int) -> str:
    """What a rank wrote: its stdout, then its stderr (elastic redirects them to files)."""
    return "".join(_read(Path(path)) for path in (ranks.stdouts.get(rank),
                                                   ranks.stderrs.get(rank)) if path)


def _log_hint(ranks: PContext, rank: int) -> str:
    lines = [ln for ln in rank_output(ranks, rank).splitlines() if ln.strip()]
    return f"; its last output: {lines[-1].strip()[:200]}" if lines else ""


# Frames of a rank that waits for its peers: collectives, and DDP's backward, which
# blocks until the gradient all-reduce of every rank has arrived.
_WAITING_FRAMES = ("torch/distributed/", "torch/nn/parallel/", "torch/autograd/",
                   "torch/_tensor.py")


def _in_collective(stack: str) -> bool:
    # elastic's @record wrapper is in every rank's stack: it says nothing about waiting
    frames = [ln for ln in stack.splitlines() if "torch/distributed/elastic/" not in ln]
    return any(frame in ln for ln in frames for frame in _WAITING_FRAMES)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _main_stack(dump: str) -> str:
    """The main thread's part of a faulthandler dump (threads are separated by blank lines)."""
    blocks = dump.split("\n\n")
    # the main thread's stack ends in <module>; the "current" thread is whichever thread
    # the signal reached, often a backend thread with no Python frames
    for marker in ("<module>", "Current thread"):
        for block in blocks:
            if marker in block:
                return block
    return dump


def _innermost_frame(dump: str) -> str | None:
    """``file:line in function`` of the newest frame of the main thread, from a dump."""
    for line in _main_stack(dump).splitlines():
        line = line.strip()
        if line.startswith("File "):
            # File "/path/x.py", line 12 in fn
            parts = line.split('"')
            if len(parts) >= 3:
                return f"{Path(parts[1]).name}{parts[2].replace(', line ', ':')}"
    return None
