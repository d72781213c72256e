"""Watching spawned ranks: which one failed or stopped making progress, and why.

A rank touches ``rank<N>.beat`` in the job folder after every iteration; one that has
not for ``--rank-timeout`` seconds is asked for its Python stacks (``STACK_SIGNAL``), so
the error can tell a rank stuck in its own code from one waiting for its peers.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from profiler_kit.measure.distributed import RankFailure

POLL_S = 0.05
STARTUP_S = 120.0  # extra allowance until a rank's first step is done (imports, init)
STACK_SIGNAL = signal.SIGUSR1
_STACK_WAIT_S = 1.0  # how long a stalled rank gets to write its stacks when asked
_GRACE_S = 0.3  # after a first failure, how long to wait for the rank that caused it


def is_communication_error(error: str | None) -> bool:
    """Whether a rank's error is its peers' failure seen through the backend."""
    return any(w in (error or "") for w in ("DistBackendError", "DistNetworkError",
                                            "Connection", "gloo", "NCCL", "abort"))


def wait(
    procs: Sequence[subprocess.Popen[bytes]], job_dir: Path, name: str, timeout_s: float
) -> None:
    """Until every rank exits 0; raise RankFailure for the first that fails or hangs."""
    started = time.monotonic()
    first_failure: float | None = None
    while True:
        codes = [p.poll() for p in procs]
        if all(c == 0 for c in codes):
            return
        failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
        now = time.monotonic()
        if failed:
            # A rank that dies takes its peers down with a communication error a moment
            # later; wait briefly so the report names the rank that started it.
            first_failure = first_failure if first_failure is not None else now
            if now - first_failure >= _GRACE_S or all(c is not None for c in codes):
                raise RankFailure(_failure_message(job_dir, failed, codes, name))
        else:
            stale = [
                r
                for r, code in enumerate(codes)
                if code is None and now - _last_beat(job_dir, r, started) > timeout_s
            ]
            if stale:
                raise RankFailure(_hang_message(procs, job_dir, stale, name, timeout_s))
        time.sleep(POLL_S)


def _hang_message(procs: Sequence[subprocess.Popen[bytes]], job_dir: Path, stale: list[int],
                  name: str, timeout_s: float) -> str:
    """Name the rank(s) that stopped; a rank waiting in a collective is not the cause."""
    for r in stale:  # ask each stalled rank for its stacks (see rank_main)
        with contextlib.suppress(ProcessLookupError):
            procs[r].send_signal(STACK_SIGNAL)
    time.sleep(_STACK_WAIT_S)
    stacks = {r: _read(job_dir / f"rank{r}.stack") for r in stale}
    waiting = {r for r, text in stacks.items() if _in_collective(_main_stack(text))}
    culprits = [r for r in stale if r not in waiting] or stale
    who = f"rank {culprits[0]}" if len(culprits) == 1 else "ranks " + ", ".join(
        str(r) for r in culprits
    )
    where = _innermost_frame(stacks[culprits[0]])
    at = f"; it was at {where}" if where else ""
    return (
        f"{who} made no progress for {timeout_s:g} s during {name} (hung?){at}; "
        "all ranks were stopped (--rank-timeout)"
    )


# Frames of a rank that waits for its peers: collectives, and DDP's backward, which
# blocks until the gradient all-reduce of every rank has arrived.
_WAITING_FRAMES = ("torch/distributed/", "torch/nn/parallel/", "torch/autograd/",
                   "torch/_tensor.py")


def _in_collective(stack: str) -> bool:
    return any(frame in stack for frame in _WAITING_FRAMES)


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


def _last_beat(job_dir: Path, rank: int, started: float) -> float:
    """Monotonic time of the rank's last sign of progress. Start-up, up to the end of the
    first step (imports, process group, lazy initialization), has an extra allowance."""
    try:
        age = time.time() - (job_dir / f"rank{rank}.beat").stat().st_mtime
    except FileNotFoundError:
        return started + STARTUP_S
    last = max(started, time.monotonic() - age)
    return last if (job_dir / f"rank{rank}.running").exists() else last + STARTUP_S


def _failure_message(
    job_dir: Path, failed: list[int], codes: list[int | None], name: str
) -> str:
    def error_of(r: int) -> str | None:
        path = job_dir / f"rank{r}.error"
        return path.read_text().strip() if path.exists() else None

    def blame(r: int) -> tuple[int, int]:
        error = error_of(r) or ""
        # killed by a signal or exited without a Python error first; peers' comm errors last
        return (0 if error == "" else 1 + is_communication_error(error), r)

    r = min(failed, key=blame)
    error = error_of(r)
    if error:
        return f"rank {r} failed during {name}: {error}"
    code = codes[r]
    how = f"exited with code {code}"
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            how += f" (killed by {signal.Signals(-code).name})"
    return f"rank {r} {how} during {name}{_log_hint(job_dir, r)}"


def _log_hint(job_dir: Path, rank: int) -> str:
    path = job_dir / f"rank{rank}.log"
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return f"; its last output: {lines[-1].strip()[:200]}" if lines else ""
