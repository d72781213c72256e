"""Measuring a multi-process strategy: spawn its ranks on this host, or join torchrun.

:func:`run_strategy` is what the runner calls. Spawned ranks are started by
``torch.distributed.elastic.multiprocessing.start_processes`` (the engine torchrun runs
on), forked from a fork server that imported torch once, and run :mod:`.rank_main`, each
in its own process group. As under torchrun, the
launching process hosts the ranks' c10d store, through which their Measurements come
back. :mod:`.watchdog` ends the strategy when one fails or stops making progress, and
then every rank this module started, and all they started, is killed.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from profiler_kit.measure.distributed import (
    WORKER_ENV,
    RankFailure,
    rank_timeout_s,
    under_torchrun,
)
from profiler_kit.measure.distributed.rank import own_files
from profiler_kit.measure.distributed.watchdog import STARTUP_S, ProgressTimers, rank_output, watch
from profiler_kit.measure.passes import Measurement, MeasureOptions
from profiler_kit.scenario import RunConfig, Scenario, Strategy
from profiler_kit.util import child_processes

if TYPE_CHECKING:
    from torch.distributed import Store
    from torch.distributed.elastic.multiprocessing import PContext

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
        measured = _spawn(RankJob(scenario_ref(scenario), strategy, config, options,
                                  str(strategy_dir), rank_timeout_s(config)))
    return [own_files(m, rank) for rank, m in enumerate(measured)]


@dataclass(frozen=True)
class RankJob:
    """What a spawned rank needs (pickled into the job folder)."""

    scenario_ref: str  # built-in name or path of the user's scenario file
    strategy: Strategy
    config: RunConfig
    options: MeasureOptions
    strategy_dir: str
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


def _spawn(job: RankJob) -> list[Measurement]:
    from torch.distributed import TCPStore

    world, name = job.strategy.world_size, job.strategy.name
    strategy_dir = Path(job.strategy_dir)
    strategy_dir.mkdir(parents=True, exist_ok=True)
    # The OS picks the store's port as it starts listening: no rank can find it taken.
    store = TCPStore("127.0.0.1", 0, is_master=True)
    job_dir = Path(tempfile.mkdtemp(prefix="profkit-ranks-"))
    (job_dir / "job.pkl").write_bytes(pickle.dumps(job))
    package_root = str(Path(__file__).resolve().parents[3])
    env = {
        "PYTHONPATH": os.pathsep.join(
            p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p
        ),
        WORKER_ENV: "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(store.port),
        "TORCHELASTIC_USE_AGENT_STORE": "True",  # the ranks join this store
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(world),
    }
    try:
        with ProgressTimers(job_dir, job.timeout_s + STARTUP_S) as timers:
            ranks = _start_ranks(env, world, job_dir)
            try:
                timers.start(ranks.pids().values())
                watch(ranks, timers, job_dir, name, job.timeout_s)
                return [_load_result(store, r, name) for r in range(world)]
            except RankFailure as failure:
                raise RankFailure(f"{failure}{_keep_logs(ranks, strategy_dir)}") from None
            finally:
                # Elastic stops only the ranks still running; what a rank started (its
                # process group) may outlive it, so every group is killed.
                for pid in ranks.pids().values():
                    child_processes.kill_group(pid)
                ranks.close(signal.SIGKILL, timeout=10)
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


def _start_ranks(env: dict[str, str], world: int, job_dir: Path) -> PContext:
    """:func:`rank_main.forked_main` once per rank, through torch.distributed.elastic
    (each rank in its own process group, output and error file per rank).

    The ranks are forked from multiprocessing's fork server, which imported torch and
    the rank's modules once for the whole run: a rank starts in a fraction of a second
    instead of the 3 to 7 s of ``import torch`` (and torchvision) in a new interpreter,
    which every strategy and every round paid. The server has started no thread and
    initialized no CUDA, so forking it is safe; each rank still is a process of its own.

    Elastic turns SIGINT/SIGTERM/SIGHUP/SIGQUIT into its own exception while its agent
    runs; profkit keeps its handlers, so a Ctrl-C stays a KeyboardInterrupt (exit 130)
    and the ranks are killed on the way out. Elastic's log lines (closing signals,
    failures) are dropped: profkit reports a failure in one line of its own."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std, start_processes

    elastic_log = logging.getLogger("torch.distributed.elastic")
    elastic_log.propagate, elastic_log.handlers = False, [logging.NullHandler()]
    saved = {s: signal.getsignal(s) for s in signal.valid_signals()}
    try:
        from profiler_kit.measure.distributed import rank_main

        # the server imports what the rank runs, and torchvision if this process already
        # needed it (the ddp scenario's models): once, not in every rank of every round
        preload = [RANK_MAIN, *(["torchvision"] if "torchvision" in sys.modules else [])]
        multiprocessing.get_context("forkserver").set_forkserver_preload(preload)
        # multiprocessing re-imports the parent's __main__ in each child (the user's script
        # or profkit's command line): a rank needs none of it, so it is given none
        main, sys.modules["__main__"] = sys.modules["__main__"], types.ModuleType("__main__")
        try:
            return start_processes(
                name="profkit-rank",
                entrypoint=rank_main.forked_main,
                start_method="forkserver",
                args={r: (str(job_dir),) for r in range(world)},
                # this process's environment now, not the one the server started with
                envs={r: {**os.environ, **env, "RANK": str(r), "LOCAL_RANK": str(r)}
                      for r in range(world)},
                logs_specs=DefaultLogsSpecs(log_dir=str(job_dir / "logs"), redirects=Std.ALL),
            )
        finally:
            sys.modules["__main__"] = main
    finally:  # (elastic changes no handler outside the main thread)
        for s, handler in saved.items():
            if handler is not None and signal.getsignal(s) is not handler:
                signal.signal(s, handler)


def _keep_logs(ranks: PContext, strategy_dir: Path) -> str:
    """Copy every rank's output (tracebacks, warnings) beside its traces; say where."""
    kept = False
    for r in range(ranks.nprocs):
        text = rank_output(ranks, r)
        if text:
            with contextlib.suppress(OSError):
                (strategy_dir / f"rank{r}.log").write_text(text)
                kept = True
    return f" (rank output: {strategy_dir}/rank*.log)" if kept else ""


def _load_result(store: Store, rank: int, name: str) -> Measurement:
    if not store.check([f"result/{rank}"]):
        raise RankFailure(f"rank {rank} exited without a result during {name}")
    return pickle.loads(store.get(f"result/{rank}"))
