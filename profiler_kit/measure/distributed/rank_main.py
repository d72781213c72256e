"""The main of a rank that :mod:`.launch` spawned: ``python -m ... rank_main JOB_DIR``.

The job (scenario, strategy, options) is pickled in ``JOB_DIR``; the rank writes its
Measurement back there. Its error goes to elastic's error file (``@record``), and it
renews an elastic progress timer as it makes progress (:mod:`.watchdog`).
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

from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.elastic.timer import FileTimerClient

from profiler_kit.child_processes import exit_with_parent
from profiler_kit.measure import distributed
from profiler_kit.measure.distributed import backend_for, rank_device
from profiler_kit.measure.distributed.launch import RankJob
from profiler_kit.measure.distributed.rank import measure_rank, set_threads
from profiler_kit.measure.distributed.watchdog import (
    STACK_SIGNAL,
    STARTUP_S,
    TIMER_FILE_ENV,
    TIMER_SCOPE,
    started_marker,
)

_MIN_RENEWAL_S = 0.1  # renew the timer at most this often (each renewal is a FIFO write)


def main(job_dir: Path) -> None:
    """Measure this rank's part of the job; never returns (the process exits)."""
    exit_with_parent()
    status = 0
    try:
        _measure(job_dir)
    except BaseException:
        traceback.print_exc()  # @record has written the error file for the launcher
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # skip interpreter teardown: a backend thread must not hold the rank


@record
def _measure(job_dir: Path) -> None:
    job: RankJob = pickle.loads((job_dir / "job.pkl").read_bytes())
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    # When the launcher finds this rank stalled, it sends STACK_SIGNAL and the rank's stacks
    # land here for the error message. Dumping only on request (not on a timer) matters:
    # reading every thread's state while a healthy rank is busy in a backend can crash it.
    stack_fd = os.open(job_dir / f"rank{rank}.stack", os.O_WRONLY | os.O_CREAT, 0o644)
    faulthandler.register(STACK_SIGNAL, file=stack_fd, all_threads=True)
    beat = _progress_timer(job.timeout_s)
    started_marker(job_dir, rank).touch()  # from now on a hang expires the timer

    import torch
    import torch.distributed as dist

    from profiler_kit import scenario as scenario_mod

    device = job.config.device
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(rank_device(device, local_rank)))
    set_threads(device)
    # The launcher watches for stalls (and asks for stacks) at job.timeout_s; the
    # backend's own timeout is only a backstop, so it must not fire first.
    dist.init_process_group(
        backend_for(device), timeout=timedelta(seconds=2 * job.timeout_s + 30)
    )
    beat()
    distributed.set_group(None)
    measurement = measure_rank(
        scenario_mod.load(job.scenario_ref), job.strategy, job.config, job.options,
        Path(job.strategy_dir), rank, world, local_rank, beat,
    )
    tmp = job_dir / f"rank{rank}.result.tmp"
    tmp.write_bytes(pickle.dumps(measurement))
    tmp.replace(job_dir / f"rank{rank}.result")
    with contextlib.suppress(Exception):
        dist.destroy_process_group()


def _progress_timer(timeout_s: float) -> Callable[[], None]:
    """A beat that renews this rank's elastic progress timer: it expires ``timeout_s``
    after the last beat (plus a start-up allowance until the first step is done)."""
    client = FileTimerClient(os.environ[TIMER_FILE_ENV], signal=0)  # see ProgressTimers
    beats = -1  # the first beat is this one; then after init, after build, the first step
    last = 0.0

    def beat() -> None:
        nonlocal beats, last
        beats += 1
        now = time.time()
        if beats > 3 and now - last < _MIN_RENEWAL_S:
            return
        client.acquire(TIMER_SCOPE, now + timeout_s + (STARTUP_S if beats < 3 else 0.0))
        last = now

    beat()
    return beat


if __name__ == "__main__":
    main(Path(sys.argv[1]))
