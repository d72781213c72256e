"""Watching spawned ranks: which one failed or stopped making progress, and why.

Exit codes, signal names and each rank's error file come from
``torch.distributed.elastic``'s process context. Progress is watched with elastic's
timers: the launcher gives every rank a ``start`` timer (``--rank-timeout`` plus a
start-up allowance for imports, the process group, the build and the first step); a rank
releases it after its first step and from then on keeps a ``progress`` timer
``--rank-timeout`` ahead with its ``FileTimerClient``. The ``FileTimerServer`` in the
launching process reports the timers that expire. A stalled rank is then asked for its
Python stacks (``STACK_SIGNAL``), so the error can tell a rank stuck in its own code from
one waiting for its peers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profiler_kit.measure.distributed import RankFailure

if TYPE_CHECKING:
    from torch.distributed.elastic.multiprocessing import PContext, ProcessFailure

POLL_S = 0.05
STARTUP_S = 120.0  # extra allowance until a rank's first step is done (imports, init)
STACK_SIGNAL = signal.SIGUSR1
TIMER_FIFO = "progress.fifo"  # the timer server's FIFO, in the job folder
START, PROGRESS = "start", "progress"  # the scopes of a rank's timers
_TIMER_INTERVAL_S = 0.2  # how often the timer server looks for expired timers
_STACK_WAIT_S = 10.0  # at most this long for stalled ranks to write their stacks when asked


def is_communication_error(error: str | None) -> bool:
    """Whether a rank's error is its peers' failure seen through the backend."""
    return any(w in (error or "") for w in ("DistBackendError", "DistNetworkError",
                                            "Connection", "gloo", "NCCL", "abort"))


class ProgressTimers:
    """Elastic's ``FileTimerServer``, telling which ranks' timers expired (``expired``:
    pid -> scope).

    The server is built for torchelastic's agent: it kills a worker whose timer expires
    with the timer's signal, and then its own process too. profkit runs it in the
    launching process, which must live on, so the timers carry no signal (0: the server
    only reports them, through its ``log_event`` callback) and profkit stops the ranks
    itself, after asking them for their stacks."""

    def __init__(self, job_dir: Path, startup_s: float) -> None:
        from torch.distributed.elastic.timer import FileTimerServer

        self.fifo, self.startup_s = str(job_dir / TIMER_FIFO), startup_s
        self.expired: dict[int, str] = {}
        self._server = FileTimerServer(self.fifo, run_id="profkit",
                                       max_interval=_TIMER_INTERVAL_S, log_event=self._event)

    def _event(self, name: str, timer: Any) -> None:
        if name == "timer expired":
            self.expired.setdefault(timer.worker_pid, timer.scope_id)

    def start(self, pids: Iterable[int]) -> None:
        """Give each rank ``startup_s`` to release its start timer, and watch."""
        from torch.distributed.elastic.timer import FileTimerClient, FileTimerRequest

        deadline = time.time() + self.startup_s
        self._server.register_timers([FileTimerRequest(p, START, deadline) for p in pids])
        self._server.start()
        # The server only looks at its timers once a client has opened the FIFO; open it
        # now (with a request that changes nothing), so a rank stuck before its first
        # request (in ``import torch``, say) still has its start timer expire.
        FileTimerClient(self.fifo, signal=0).release(START)

    def __enter__(self) -> ProgressTimers:
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


def name_ranks(ranks: list[int]) -> str:
    """``rank 1`` or ``ranks 0, 1``, for messages."""
    return f"rank{'s' if len(ranks) > 1 else ''} " + ", ".join(str(r) for r in ranks)


def watch(ranks: PContext, timers: ProgressTimers, job_dir: Path, name: str,
          timeout_s: float) -> None:
    """Until every rank exits 0; raise RankFailure for the first that fails or hangs.
    On the first failure elastic stops the other ranks (SIGTERM) before reporting."""
    while True:
        result = ranks.wait(POLL_S, period=POLL_S)
        if result is not None:
            if result.is_failed():
                raise RankFailure(_failure_message(ranks, _all_failures(ranks, result.failures),
                                                   name))
            return
        if timers.expired:
            time.sleep(2 * _TIMER_INTERVAL_S)  # peers waiting for the culprit expire too
            raise RankFailure(_hang_message(ranks.pids(), timers, job_dir, name, timeout_s))


def _hang_message(pids: dict[int, int], timers: ProgressTimers, job_dir: Path,
                  name: str, timeout_s: float) -> str:
    """Name the rank(s) that stopped; a rank waiting in a collective is not the cause.
    When only waiting ranks' timers have expired yet (the culprit's, renewed a moment
    later, is about to), the cause is among the ranks they wait for."""
    stale = sorted(r for r, pid in pids.items() if pid in timers.expired)
    stacks = _ask_stacks(pids, sorted(pids), job_dir)
    running = [r for r in sorted(pids) if not any(f in _main_stack(stacks[r])
                                                  for f in _WAITING_FRAMES)]
    culprits = [r for r in stale if r in running] or running or stale
    where = _innermost_frame(stacks[culprits[0]])
    at = f"; it was at {where}" if where else ""
    if timers.expired.get(pids[culprits[0]]) == START:
        what = f"did not start within {timers.startup_s:g} s during {name} (hung while starting?)"
    else:
        what = f"made no progress for {timeout_s:g} s during {name} (hung?)"
    return f"{name_ranks(culprits)} {what}{at}; all ranks were stopped (--rank-timeout)"


def _ask_stacks(pids: dict[int, int], ranks: list[int], job_dir: Path) -> dict[int, str]:
    """Each rank's stacks, dumped on ``STACK_SIGNAL`` (see rank_main). A busy machine
    may keep a rank from running for a while: wait until every dump is there and has
    stopped growing (or, for a rank that cannot dump, until ``_STACK_WAIT_S``)."""
    for r in ranks:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pids[r], STACK_SIGNAL)
    stacks: dict[int, str] = {}
    deadline = time.monotonic() + _STACK_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(_TIMER_INTERVAL_S)
        stacks, before = {r: _read(job_dir / f"rank{r}.stack") for r in ranks}, stacks
        if stacks == before and all(stacks.values()):
            break
    return stacks


def _all_failures(ranks: PContext, failures: dict[int, ProcessFailure]
                  ) -> dict[int, ProcessFailure]:
    """Every rank that failed, not only the one elastic noticed first: for forked ranks it
    reports one, often a peer that saw the culprit's death as a connection reset."""
    from torch.distributed.elastic.multiprocessing import ProcessFailure

    processes = getattr(getattr(ranks, "_pc", None), "processes", None) or ()
    found = dict(failures)
    for r, proc in enumerate(processes):
        if r not in found and proc.exitcode not in (None, 0):
            found[r] = ProcessFailure(local_rank=r, pid=proc.pid, exitcode=proc.exitcode,
                                      error_file=ranks.error_files[r])
    return found


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
        how += f" (killed by {failures[r].signal_name()})"
    return f"rank {r} {how} during {name}{_log_hint(ranks, r)}"


def error_of(failure: ProcessFailure) -> str | None:
    """``Type: message`` of the exception a rank recorded in its error file, if any."""
    message = failure.error_file_data.get("message")
    return (str(message.get("message", "")).strip() or None) if isinstance(message, dict) else None


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


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _main_stack(dump: str) -> str:
    """The main thread's part of a faulthandler dump (threads are separated by blank lines),
    newest frame first, down to the rank's main: the frames below it (elastic's and
    multiprocessing's, which start the rank) say nothing of where it is."""
    blocks = dump.split("\n\n")
    # the main thread's stack ends in <module>; the "current" thread is whichever thread
    # the signal reached, often a backend thread with no Python frames
    for marker in ("<module>", "Current thread"):
        for block in blocks:
            if marker in block:
                lines = block.splitlines()
                end = next((i for i, line in enumerate(lines) if _RANK_MAIN_FILE in line),
                           len(lines))
                return "\n".join(lines[:end + 1])
    return dump


_RANK_MAIN_FILE = "rank_main.py"


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
