"""torchrun (or another env:// launcher) started this process: it is one rank of the run.

Every rank runs the whole run and calls :func:`measure_strategy` for every multi-process
strategy, in the same order. The ranks a strategy uses measure it; their Measurements
travel to every rank through the process group's c10d key-value store (not collectives,
which a failing or idle rank could leave waiting).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import socket
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

from profiler_kit.measure import distributed
from profiler_kit.measure.distributed import RankFailure, rank_device, rank_timeout_s
from profiler_kit.measure.distributed.gather import gather_files
from profiler_kit.measure.distributed.liveness import (
    Heartbeat,
    Pulse,
    name_lost,
    unreachable,
    wait_for_silence,
)
from profiler_kit.measure.distributed.rank import measure_rank, set_threads
from profiler_kit.measure.distributed.watchdog import STARTUP_S, is_communication_error, name_ranks
from profiler_kit.measure.passes import Measurement, MeasureOptions
from profiler_kit.scenario import RunConfig, Scenario, Strategy

_torchrun_ready = False
_lost: str | None = None  # once a host dropped out: why (the later strategies are not run)
_heartbeat: Heartbeat | None = None  # this rank's beats and their watch
_lost_store_once = threading.Lock()


def _init_torchrun(config: RunConfig, timeout_s: float) -> None:
    global _torchrun_ready, _heartbeat
    import torch
    import torch.distributed as dist

    if _torchrun_ready:
        return
    local_rank = int(os.environ["LOCAL_RANK"])
    if config.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(rank_device(config.device, local_rank)))
    set_threads(config.device)
    if not dist.is_initialized():
        # nccl for the workload's tensors, gloo for gathering results (Python objects).
        backend = "cpu:gloo,cuda:nccl" if config.device.startswith("cuda") else "gloo"
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
        atexit.register(_destroy_world)
    hosts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, socket.gethostname())
    distributed.set_hosts(hosts)
    rank = dist.get_rank()
    _heartbeat = Heartbeat(_default_store(), rank, timeout_s, _store_lost,
                           peers=range(1, len(hosts)) if rank == 0 else ())
    # from now until the run ends (between strategies too: torchrun's agent would end a
    # rank that waits, without a word, once its own store calls fail), not while the
    # process exits: rank 0's host may end first (its torchrun without exit barrier)
    _heartbeat.arm()
    atexit.register(_heartbeat.close)
    _torchrun_ready = True


def _store_lost(why: str) -> NoReturn:
    """This rank cannot reach the run's store, on rank 0's host: nothing it measures can
    reach rank 0 any more, and what it waits in may never return. One line, then the
    process ends (exit code 1) from whichever thread found out first."""
    with _lost_store_once:
        rank = int(os.environ.get("RANK", "0"))
        hosts = distributed.hosts()
        me = f"rank {rank}" + (f" ({hosts[rank]})" if rank < len(hosts) else "")
        where = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
        if rank == 0:  # the store is on another host
            whom = f"the run's store at {where}"
        else:
            whom = f"rank 0's host {hosts[0] if hosts else '?'} (the run's store at {where})"
        sys.stderr.write(f"profkit: error: {me} lost the connection to {whom}: {why}\n")
        sys.stderr.flush()
        os._exit(1)


def _destroy_world() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


_strategy_seq = 0  # strategies measured so far in this torchrun process (same on every rank)


def measure_strategy(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: MeasureOptions,
    strategy_dir: Path,
) -> list[Measurement]:
    """Every rank calls this for every strategy, in the same order. The ranks of the
    strategy measure; results travel through the process group's key-value store, and
    every rank (measuring or idle) waits for them while the measuring ranks' step
    counter moves, so a long strategy never times out its idle peers and a hung one is
    noticed after ``--rank-timeout`` seconds without a step. A rank that loses the run's
    store (rank 0's host gone, or the link to it) says so in one line and ends
    (:class:`.liveness.Heartbeat`)."""
    timeout_s = rank_timeout_s(config)
    if _lost is not None:  # the world's collectives would fail or wait for the lost host
        raise RankFailure(f"not run: {_lost}")
    _init_torchrun(config, timeout_s)
    try:
        return _measure(scenario, strategy, config, options, strategy_dir, timeout_s)
    except Exception:
        # a host gone but not silent (its kernel reset the connection) says so at once,
        # before torchrun's agent, whose store calls fail too, ends this rank
        why = unreachable(_default_store())
        if why is not None:
            _store_lost(why)
        raise


def _measure(scenario: Scenario, strategy: Strategy, config: RunConfig,
             options: MeasureOptions, strategy_dir: Path, timeout_s: float
             ) -> list[Measurement]:
    global _strategy_seq, _lost
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    size = strategy.world_size
    if size > world:
        raise RankFailure(f"{strategy.name} needs {size} ranks but torchrun started {world}")
    _strategy_seq += 1
    prefix = f"profkit/{_strategy_seq}/"
    store = _default_store()
    try:
        # Every rank writes its trace where rank 0's runner put the strategy.
        where = [str(strategy_dir)]
        dist.broadcast_object_list(where, src=0)
        strategy_dir = Path(where[0])
        strategy_dir.mkdir(parents=True, exist_ok=True)
        # A group of its own per strategy (even of the whole world): a failing rank aborts
        # it, so its peers' pending collectives fail at once instead of after the timeout.
        sub = dist.new_group(ranks=list(range(size)), timeout=timedelta(seconds=timeout_s))
    except Exception as exc:  # a host gone between strategies: name it, not the socket
        if rank != 0:
            raise
        gone = wait_for_silence(store, range(1, world), timeout_s)
        if not gone:
            raise
        _lost = (f"{name_lost(gone, distributed.hosts())} dropped out before "
                 f"{strategy.name}: no sign of life for {timeout_s:g} s (--rank-timeout; "
                 f"{type(exc).__name__})")
        raise RankFailure(_lost) from None
    distributed.set_group(sub)
    try:
        if rank < size:
            try:
                measurement = measure_rank(
                    scenario, strategy, config, options, strategy_dir,
                    rank, size, int(os.environ["LOCAL_RANK"]),
                    beat=lambda: store.add(prefix + "steps", 1),
                )
                result: tuple[Any, str | None] = (measurement, None)
            except Exception as exc:  # reported to every rank through the store
                result = (None, f"{type(exc).__name__}: {exc}")
                with contextlib.suppress(Exception):
                    sub.abort()
            store.set(prefix + f"result/{rank}", pickle.dumps(result))
        gathered = _collect(store, prefix, size, strategy.name, timeout_s)
    finally:
        distributed.set_group(None)
        with contextlib.suppress(Exception):
            dist.destroy_process_group(sub)
    failed = [r for r, (_m, error) in enumerate(gathered) if error is not None]
    if failed:
        # Peers of a failing rank fail too, with communication errors: name the cause.
        r = min(failed, key=lambda r: (is_communication_error(gathered[r][1]), r))
        raise RankFailure(f"rank {r} failed during {strategy.name}: {gathered[r][1]}")
    measurements = [measurement for measurement, _error in gathered]
    # hosts that do not share the run folder send their traces to rank 0's; a host that
    # drops out meanwhile takes its traces with it, not the measurement
    measurements, gone = gather_files(store, prefix, rank, measurements, timeout_s,
                                      distributed.gather_limit_bytes(config))
    if gone:
        _lost = (f"{name_lost(gone, distributed.hosts())} dropped out while sending "
                 f"{'its' if len(gone) == 1 else 'their'} traces of {strategy.name}: no "
                 f"sign of life for {timeout_s:g} s (--rank-timeout)")
    return measurements


def _default_store() -> Any:
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store()


def _collect(store: Any, prefix: str, size: int, name: str, timeout_s: float) -> list[Any]:
    """Every measuring rank's (measurement, error), waiting as long as steps still happen.

    Polls with ``check`` (no store timeouts, no warnings). The clock restarts at every
    step and every result; once a rank has reported, its peers may still be waiting in a
    collective for up to the group's timeout, hence the extra allowance. A rank that has
    not reported and whose heartbeat stopped for ``timeout_s`` is gone with its host
    (:mod:`.liveness`). Rank 0 decides and publishes the verdict, so every rank raises the
    same error (the others only decide alone, much later, if rank 0 is gone)."""
    global _lost
    import torch.distributed as dist

    keys = [prefix + f"result/{r}" for r in range(size)]
    verdict_key = prefix + "verdict"
    judge = dist.get_rank() == 0
    # rank 0's peers as watched since the ranks met (their silence counts from their
    # last beat, not from now)
    pulse = (_heartbeat.peers if _heartbeat is not None and _heartbeat.peers is not None
             else Pulse(store))
    last_state: tuple[int, int] = (-1, -1)
    last_change = time.monotonic()
    while True:
        done = [store.check([k]) for k in keys]
        if all(done):
            return [pickle.loads(store.get(k)) for k in keys]
        if store.check([verdict_key]):
            verdict = json.loads(store.get(verdict_key))
            if verdict["lost"]:
                _lost = verdict["message"]
            raise RankFailure(verdict["message"])
        missing = [r for r, ok in enumerate(done) if not ok]
        gone = pulse.silent(missing, timeout_s) if judge else []
        if gone:
            _lost = (f"{name_lost(gone, distributed.hosts())} dropped out during {name}: no "
                     f"sign of life for {timeout_s:g} s (--rank-timeout)")
            store.set(verdict_key, json.dumps({"message": _lost, "lost": True}))
            raise RankFailure(_lost)
        state = (int(store.add(prefix + "steps", 0)), sum(done))
        now = time.monotonic()
        if state != last_state:
            last_state, last_change = state, now
        steps, reported = state
        allowance = timeout_s + (timeout_s + 5 if reported else 0.0)
        allowance += STARTUP_S if steps <= size else 0.0
        if now - last_change > (allowance if judge else 2 * allowance + 30):
            message = (
                f"{name_ranks(missing)} made no progress for "
                f"{timeout_s:g} s during {name} (hung?) (--rank-timeout)"
            )
            store.set(verdict_key, json.dumps({"message": message, "lost": False}))
            raise RankFailure(message)
        time.sleep(0.2)

