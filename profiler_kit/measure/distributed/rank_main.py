"""The main of a rank that :mod:`.launch` spawned: ``python -m ... rank_main JOB_DIR``.

The job (scenario, strategy, options) is pickled in ``JOB_DIR``; the rank writes its
Measurement, or its error, back there, and touches a beat file as it makes progress.
State that workloads read (:func:`profiler_kit.measure.distributed.group`) lives in
the package, not here, so running this module as ``__main__`` duplicates nothing.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import sys
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path

from profiler_kit.measure import distributed
from profiler_kit.measure.distributed import backend_for, rank_device
from profiler_kit.measure.distributed.launch import RankJob
from profiler_kit.measure.distributed.rank import measure_rank, set_threads
from profiler_kit.measure.distributed.watchdog import STACK_SIGNAL


def _watch_parent(parent: int) -> None:
    """End this rank when the process that spawned it is gone (no orphans)."""

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, name="profkit-parent-watch", daemon=True).start()


def main(job_dir: Path) -> None:
    """Measure this rank's part of the job; never returns (the process exits)."""
    _watch_parent(os.getppid())
    job: RankJob = pickle.loads((job_dir / "job.pkl").read_bytes())
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    beat_path = job_dir / f"rank{rank}.beat"
    # When the launcher finds this rank stalled, it sends STACK_SIGNAL and the rank's stacks
    # land here for the error message. Dumping only on request (not on a timer) matters:
    # reading every thread's state while a healthy rank is busy in a backend can crash it.
    stack_fd = os.open(job_dir / f"rank{rank}.stack", os.O_WRONLY | os.O_CREAT, 0o644)
    faulthandler.register(STACK_SIGNAL, file=stack_fd, all_threads=True)

    running_path = job_dir / f"rank{rank}.running"
    beats = 0

    def beat() -> None:
        nonlocal beats
        beats += 1
        if beats == 3:  # after init, after build, then the first step
            running_path.touch()
        beat_path.touch()

    try:
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
    except BaseException as exc:
        traceback.print_exc()
        (job_dir / f"rank{rank}.error").write_text(f"{type(exc).__name__}: {exc}".strip())
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: a backend thread must not hold the rank


if __name__ == "__main__":
    main(Path(sys.argv[1]))
