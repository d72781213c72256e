"""The main of a rank that :mod:`.launch` started: :func:`forked_main` in a process forked
from the fork server, or ``python -m ... rank_main JOB_DIR``.

The job (scenario, strategy, options) is pickled in ``JOB_DIR``; the rank leaves its
Measurement in the launcher's c10d store (``result/RANK``). Its error goes to elastic's
error file, and it keeps its elastic progress timer running as it makes progress
(:mod:`.watchdog`).
State that workloads read (:func:`profiler_kit.measure.distributed.group`) lives in
the package, not here, so running this module as ``__main__`` duplicates nothing.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import get_error_handler
from torch.distributed.elastic.timer import FileTimerClient

from profiler_kit.measure.distributed import backend_for, rank_device
from profiler_kit.measure.distributed.rank import measure_rank, set_threads
from profiler_kit.measure.distributed.watchdog import (
    PROGRESS,
    STACK_SIGNAL,
    START,
    STARTUP_S,
    TIMER_FIFO,
)
from profiler_kit.util.child_processes import exit_with_parent

if TYPE_CHECKING:  # the launcher imports this module to fork it: no import back
    from profiler_kit.measure.distributed.launch import RankJob

# Each renewal is a write to the timer server's FIFO, which a fast step loop could fill
# between two of the server's reads: renew at most this often.
_MIN_RENEWAL_S = 0.1


def forked_main(job_dir: str) -> None:
    """A rank forked by elastic from the fork server (torch already imported there):
    returns when the measurement is in the store; on an error the process exits 1."""
    os.setsid()  # its own process group, as a rank that elastic starts as a command
    status = _run(Path(job_dir))
    if status:
        os._exit(status)


def main(job_dir: Path) -> None:
    """A rank started as ``python -m rank_main JOB_DIR``; never returns (the process exits)."""
    os._exit(_run(job_dir))  # skip interpreter teardown: a backend thread must not hold it


def _run(job_dir: Path) -> int:
    """Measure this rank's part of the job: its exit status (its error in elastic's file)."""
    exit_with_parent()
    errors = get_error_handler()  # writes the error file elastic gives the launcher
    errors.initialize()
    status = 0
    try:
        _measure(job_dir)
    except BaseException as exc:
        traceback.print_exc()
        errors.record_exception(exc)
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def _measure(job_dir: Path) -> None:
    job: RankJob = pickle.loads((job_dir / "job.pkl").read_bytes())
    rank = int(os.environ["RANK"])  # = LOCAL_RANK: the ranks share this host
    # When the launcher finds this rank stalled, it sends STACK_SIGNAL and the rank's stacks
    # land here for the error message. Dumping only on request (not on a timer) matters:
    # reading every thread's state while a healthy rank is busy in a backend can crash it.
    stack_fd = os.open(job_dir / f"rank{rank}.stack", os.O_WRONLY | os.O_CREAT, 0o644)
    faulthandler.register(STACK_SIGNAL, file=stack_fd, all_threads=True)

    from profiler_kit import scenario as scenario_mod

    device = job.config.device
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(rank_device(device, rank)))
    set_threads(device)
    # The launcher's timers (job.timeout_s, and STARTUP_S more until the first step) see a
    # stall first and ask for stacks; the backend's own timeout is only a backstop.
    dist.init_process_group(
        backend_for(device), timeout=timedelta(seconds=2 * (job.timeout_s + STARTUP_S))
    )
    measurement = measure_rank(
        scenario_mod.load(job.scenario_ref), job.strategy, job.config, job.options,
        Path(job.strategy_dir), rank, job.strategy.world_size, rank,
        _progress_timer(str(job_dir / TIMER_FIFO), job.timeout_s),
    )
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    store.set(f"result/{rank}", pickle.dumps(measurement))
    with contextlib.suppress(Exception):
        dist.destroy_process_group()


def _progress_timer(fifo: str, timeout_s: float) -> Callable[[], None]:
    """The beat for :func:`measure_rank` (after the build, then after every step): from
    the first step on, it keeps this rank's progress timer ``timeout_s`` ahead; until
    then the launcher's start timer runs, which the first step's beat releases."""
    client = FileTimerClient(fifo, signal=0)  # see ProgressTimers
    beats, last = 0, 0.0

    def beat() -> None:
        nonlocal beats, last
        beats += 1
        now = time.time()
        if beats < 2 or now - last < _MIN_RENEWAL_S:
            return
        if beats == 2:
            client.release(START)
        client.acquire(PROGRESS, now + timeout_s)
        last = now

    return beat


if __name__ == "__main__":
    main(Path(sys.argv[1]))
