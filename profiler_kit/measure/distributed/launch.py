"""Measuring a multi-process strategy: spawn its ranks on this host, or join torchrun.

:func:`run_strategy` is what the runner calls. Spawned ranks run :mod:`.rank_main`,
each in its own process group; :mod:`.watchdog` ends the strategy when one fails or
hangs, and then every rank this module started is killed.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from profiler_kit.measure.distributed import (
    WORKER_ENV,
    RankFailure,
    rank_timeout_s,
    under_torchrun,
)
from profiler_kit.measure.distributed.rank import own_files
from profiler_kit.measure.distributed.watchdog import wait
from profiler_kit.measure.passes import Measurement, MeasureOptions
from profiler_kit.ports import free_port
from profiler_kit.scenario import RunConfig, Scenario, Strategy

_PORT_ATTEMPTS = 3  # the free port can be taken between choosing it and listening on it
RANK_MAIN = "profiler_kit.measure.distributed.rank_main"


def run_strategy(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: MeasureOptions,
    strategy_dir: Path,
) -> list[Measurement]:
    """Measure ``strategy`` as ``strategy.world_size`` ranks; one Measurement per rank.

    Raises :class:`RankFailure` naming the rank when one raises, dies or hangs; by
    then no rank that this call started is still running.
    """
    strategy_dir = Path(strategy_dir)
    if under_torchrun():
        from profiler_kit.measure.distributed import torchrun

        measured = torchrun.measure_strategy(scenario, strategy, config, options, strategy_dir)
    else:
        measured = _spawn(scenario, strategy, config, options, strategy_dir)
    return [own_files(m, rank) for rank, m in enumerate(measured)]


@dataclass(frozen=True)
class RankJob:
    """What a spawned rank needs (pickled into the job folder)."""

    scenario_ref: str  # built-in name or path of the user's scenario file
    strategy: Strategy
    config: RunConfig
    options: MeasureOptions
    strategy_dir: str
    job_dir: str
    timeout_s: float


def scenario_ref(scenario: Scenario) -> str:
    """How a spawned rank loads the same scenario: its built-in name or its file."""
    module_name = type(scenario).__module__
    if module_name.startswith("profiler_kit.scenarios."):
        return module_name.rsplit(".", 1)[1]
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if path is None:
        raise RankFailure(
            f"scenario {scenario.name!r} is defined in {module_name!r}, which a new "
            "process cannot import: define it in a .py file"
        )
    return str(Path(path).resolve())


def _spawn(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: MeasureOptions,
    strategy_dir: Path,
) -> list[Measurement]:
    for attempt in range(_PORT_ATTEMPTS):
        try:
            return _spawn_once(scenario, strategy, config, options, strategy_dir)
        except RankFailure as failure:
            # Another process took the free port before rank 0 listened on it: try another.
            text = str(failure)
            if attempt + 1 == _PORT_ATTEMPTS or not (
                "EADDRINUSE" in text or "address already in use" in text.lower()
            ):
                raise
    raise AssertionError("unreachable")


def _spawn_once(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: MeasureOptions,
    strategy_dir: Path,
) -> list[Measurement]:
    world = strategy.world_size
    timeout_s = rank_timeout_s(config)
    strategy_dir.mkdir(parents=True, exist_ok=True)
    job_dir = Path(tempfile.mkdtemp(prefix="profkit-ranks-"))
    job = RankJob(
        scenario_ref(scenario), strategy, config, options, str(strategy_dir),
        str(job_dir), timeout_s,
    )
    (job_dir / "job.pkl").write_bytes(pickle.dumps(job))
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, env.get("PYTHONPATH", "")) if p
    )
    env.update(
        {
            WORKER_ENV: "1",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()),
            "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(world),
        }
    )
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for r in range(world):
            env_r = dict(env, RANK=str(r), LOCAL_RANK=str(r))
            log = open(job_dir / f"rank{r}.log", "wb")  # noqa: SIM115 (closed with the process)
            try:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", RANK_MAIN, str(job_dir)],
                        env=env_r,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # its own process group: killed as a whole
                    )
                )
            finally:
                log.close()
        try:
            wait(procs, job_dir, strategy.name, timeout_s)
            return [_load_result(job_dir, r, strategy.name) for r in range(world)]
        except RankFailure as failure:
            _kill_all(procs)
            raise RankFailure(f"{failure}{_keep_logs(job_dir, strategy_dir, world)}") from None
    finally:
        _kill_all(procs)
        shutil.rmtree(job_dir, ignore_errors=True)


def _keep_logs(job_dir: Path, strategy_dir: Path, world: int) -> str:
    """Copy every rank's output (tracebacks, warnings) beside its traces; say where."""
    kept = []
    for r in range(world):
        log = job_dir / f"rank{r}.log"
        if log.exists() and log.stat().st_size:
            with contextlib.suppress(OSError):
                shutil.copyfile(log, strategy_dir / log.name)
                kept.append(log.name)
    return f" (rank output: {strategy_dir}/rank*.log)" if kept else ""

def _load_result(job_dir: Path, rank: int, name: str) -> Measurement:
    path = job_dir / f"rank{rank}.result"
    if not path.exists():
        raise RankFailure(f"rank {rank} exited without a result during {name}")
    return pickle.loads(path.read_bytes())


def _kill_all(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGKILL every rank's process group (the rank and anything it started), then reap."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(Exception):
            p.wait(timeout=10)

