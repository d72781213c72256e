"""What the two-host tests run: ``profkit run`` under ``torchrun --nnodes 2`` on the two
hosts of :mod:`two_hosts` (or on one host, as the reference), and how they wait for it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from two_hosts import start_on, stop, two_hosts

from profiler_kit import api

PORT = 29511


BOUND_S = 180  # a watchdog for a hung run: generous, as a busy machine runs them slower


RANK_TIMEOUT_S = 10
RATE_MBIT = 1000  # the slower link: resnet18's 47 MB of gradients take 0.4 s a way


# what the hosts run: ``profkit run`` and its options (without --out and --iterations);
# one round: the tests read where the ranks ran and what they sent, not the noise
DDP = ("ddp", "--model", "resnet18", "--batch-size", "2", "--image-size", "32",
       "--strategies", "ddp-w2", "--warmup", "1", "--profile-wait", "0", "--profile-warmup",
       "0", "--profile-active", "2", "--repeats", "1")


# two ranks that step at a set pace (tests/user_scenarios/paced.py) in two configurations:
# the failure tests' run, which must go on for a known while and leave the CPU to others
PACED = (str(Path(__file__).parent / "user_scenarios" / "paced.py"), "--warmup", "1",
         "--profile-wait", "0", "--profile-warmup", "0", "--profile-active", "2",
         "--repeats", "1")
SWEPT = "pace_ms=150.0"  # the second configuration of sweep_until_second

# a one-layer transformer cut in two stages, against DDP; one round
PIPELINE = ("pipeline", "--model", "transformer", "--layers", "1", "--hidden", "32",
            "--heads", "2", "--seq-len", "8", "--vocab", "50", "--global-batch", "8",
            "--micro-batches", "2", "--strategies", "ddp,gpipe", "--warmup", "1",
            "--profile-wait", "0", "--profile-warmup", "1", "--profile-active", "1",
            "--repeats", "1")



def torchrun(node_rank: int, out: Path, join_timeout_s: int, *more: str,
              run: tuple[str, ...] = DDP) -> list[str]:
    """The torchrun line of one host; ``more``: further options of ``profkit run``."""
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
            "--nproc-per-node", "1", "--node-rank", str(node_rank), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"10.231.0.1:{PORT}", "--rdzv-conf",
            f"join_timeout={join_timeout_s}",
            "-m", "profiler_kit", "run", *run, "--out", str(out),
            *(more or ("--iterations", "3"))]



def wait(procs, bound_s: float) -> list[int]:
    deadline = time.monotonic() + bound_s
    try:
        for p in procs:
            p.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        for p in procs:
            stop(p)
    return [p.returncode for p in procs]



def run_on_two_hosts(tmp: Path, rate_mbit: int | None = None, *more: str,
                      run: tuple[str, ...] = DDP) -> Path:
    """A run on two hosts (the second with a disk of its own); its run folder."""
    out = tmp / "out"
    with two_hosts(tmp, rate_mbit=rate_mbit) as hosts:
        # the second host writes to a disk of its own: its traces must travel to rank 0
        procs = [start_on(h, tmp / "hosts", torchrun(i, out, 30, *more, run=run),
                          tmp / f"{i}.log", private=out if i else None)
                 for i, h in enumerate(hosts)]
        codes = wait(procs, BOUND_S)
    logs = [(tmp / f"{i}.log").read_text(errors="replace") for i in range(2)]
    assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
    assert "profkit tensorboard" in logs[0] and "profkit tensorboard" not in logs[1]
    (run_dir,) = (out / run[0]).iterdir()
    return run_dir



def run_on_one_host(tmp: Path, run: tuple[str, ...] = DDP) -> Path:
    """The same ``profkit run`` line under torchrun on one host (both ranks here)."""
    out = tmp / "out"
    line = torchrun(0, out, 30, run=run)
    at = line.index("--nnodes")
    line[at:line.index("-m", at)] = ["--standalone", "--nproc-per-node", "2"]
    done = subprocess.run(line, capture_output=True, text=True, timeout=BOUND_S)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (out / run[0]).iterdir()
    return run_dir



def job(run_dir: Path):
    (w2,) = json.loads((run_dir / "run.json").read_text())["strategies"]
    (job,) = api.job_view([run_dir / w2["dir"]])
    return job



def rows(d: Path) -> list[str]:
    """The first cell of every table row of a run's summary.md."""
    return [line.split("|")[1].strip() for line in (d / "summary.md").read_text().splitlines()
            if line.startswith("|") and not set(line) <= set("|-: ")]



def sweep_until_second(tmp: Path, hosts) -> list:
    """Both hosts run the paced scenario in two configurations (steps of 100 ms, then of
    150 ms: 20 of them, at least 3 s); back (the processes) once the second configuration
    has run for a second."""
    out = tmp / "out"
    more = ("--pace-ms", "100,150", "--iterations", "20", "--rank-timeout",
            str(RANK_TIMEOUT_S))
    procs = [start_on(h, tmp / "hosts", torchrun(i, out, 30, *more, run=PACED),
                      tmp / f"{i}.log", private=out if i else None)
             for i, h in enumerate(hosts)]
    deadline = time.monotonic() + BOUND_S
    # rank 0 makes the second configuration's folder as it starts it
    while not list(out.glob(f"paced/*/{SWEPT}")) and time.monotonic() < deadline:
        assert procs[0].poll() is None, (tmp / "0.log").read_text(errors="replace")
        time.sleep(0.1)
    time.sleep(1.0)
    return procs



def watch(procs, logs: list[Path], text: str, bound_s: float) -> tuple[list, list]:
    """Until every process ended (killed after ``bound_s``): each one's (exit code,
    seconds until it ended) and the seconds until ``text`` first appeared in each log
    (None: never)."""
    start = time.monotonic()
    ended: list = [None] * len(procs)
    seen: list = [None] * len(procs)
    try:
        while None in ended and time.monotonic() - start < bound_s:
            now = time.monotonic() - start
            for i, (p, log) in enumerate(zip(procs, logs, strict=True)):
                if seen[i] is None and text in log.read_text(errors="replace"):
                    seen[i] = now
                if ended[i] is None and p.poll() is not None:
                    ended[i] = (p.returncode, now)
            time.sleep(0.1)
    finally:
        for p in procs:
            stop(p)
    return ended, seen



def count_named(trace: Path, name: str) -> int:
    """Events called ``name`` in a trace's raw JSON (not through profkit's loader)."""
    return sum(e.get("name") == name for e in json.loads(trace.read_text())["traceEvents"])

