"""What a multi-process workload asks: its process group, its device, how it was launched.

For a strategy with ``processes=True`` the runner measures it as ``strategy.world_size``
ranks (:mod:`.launch`). ``Scenario.build(strategy, config)`` is called *inside each
rank*, after the process group is initialized, with ``config.rank`` (0 ..
``config.world_size - 1``) and ``config.world_size`` (= ``strategy.world_size``) set,
and ``config.device`` naming the rank's own device (``"cuda:<local rank>"`` on CUDA, see
:func:`rank_device`; ``"cpu"`` otherwise; on CPU each rank runs one thread unless
``OMP_NUM_THREADS`` is set). Pass :func:`group` as the process group to
``DistributedDataParallel``, pipeline stages and collectives: it is the whole world when
profkit spawned the ranks, and a sub-group of torchrun's world when a strategy uses
fewer ranks than torchrun started.

Two launch modes, one code path per rank (:mod:`.rank`):

* **spawn** (default, :mod:`.launch`): profkit starts ``strategy.world_size`` Python
  processes on this host with ``torch.distributed.elastic``, forked from a fork server
  that imported torch once for the whole run (``MASTER_ADDR=127.0.0.1``,
  the port of the c10d store the launching process hosts, gloo on CPU, nccl on CUDA),
  each running :mod:`.rank_main` in its own process group so that a failing run can be
  killed without leaving anything behind. A rank that raises, exits or stops making
  progress for ``--rank-timeout`` seconds (its elastic timer expires) ends the strategy
  with :class:`RankFailure` naming the rank (:mod:`.watchdog`).
* **torchrun** (:mod:`.torchrun`): when ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and
  ``MASTER_ADDR`` are set, this process *is* one rank. Nothing is spawned; every
  participating rank measures, and the Measurements travel to every rank through the
  process group's c10d key-value store, so the runner can combine them; only
  :func:`is_output_rank` writes files and prints.

This module imports neither torch nor the rest of the measuring side.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from profiler_kit.scenario import Param, RunConfig

DEFAULT_RANK_TIMEOUT_S = 300.0

# Scenarios with multi-process strategies add this parameter (``--rank-timeout``);
# the launchers read it from ``config.params``.
RANK_TIMEOUT_PARAM = Param(
    "rank_timeout",
    float,
    DEFAULT_RANK_TIMEOUT_S,
    "seconds a rank may go without progress (or a collective may wait) before the "
    "strategy is ended as failed",
    min_value=1.0,
)

DEFAULT_GATHER_LIMIT_MB = 1024.0
# ... and this one (``--gather-limit-mb``), read by the torchrun launcher
GATHER_LIMIT_PARAM = Param(
    "gather_limit_mb",
    float,
    DEFAULT_GATHER_LIMIT_MB,
    "under torchrun, where a host does not share the run folder: a rank whose traces of "
    "a configuration weigh more than this sends its rank summary to rank 0 instead",
    min_value=0.0,
)

_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")
WORKER_ENV = "PROFKIT_RANK_WORKER"  # set in ranks that profkit spawned

_group: Any = None  # the process group of the strategy being measured in this process
_hosts: tuple[str, ...] = ()  # under torchrun: each rank's host name, by rank


class RankFailure(RuntimeError):
    """A rank raised, died or hung: the strategy failed (the run goes on)."""


# ---------------------------------------------------------------------------
# What workloads and the runner ask


def group() -> Any:
    """The process group of the strategy this rank is measuring (``None`` = the world)."""
    return _group


def set_group(process_group: Any) -> None:
    """Set by the launchers around each strategy a rank measures."""
    global _group
    _group = process_group


def set_hosts(hosts: list[str]) -> None:
    """Set by the torchrun launcher once the ranks know each other: each rank's host."""
    global _hosts
    _hosts = tuple(hosts)


def hosts() -> tuple[str, ...]:
    """Under torchrun, once the ranks know each other: each rank's host, by rank."""
    return _hosts


def under_torchrun() -> bool:
    """True when this process was started by torchrun (or another env:// launcher)."""
    if os.environ.get(WORKER_ENV):
        return False
    return all(os.environ.get(v) for v in _TORCHRUN_VARS)


def is_output_rank() -> bool:
    """Whether this process writes run files and prints: always, except torchrun ranks != 0."""
    return not under_torchrun() or int(os.environ["RANK"]) == 0


def backend_for(device: str) -> str:
    """gloo on CPU, nccl on CUDA."""
    return "nccl" if device.startswith("cuda") else "gloo"


def rank_device(device: str, local_rank: int) -> str:
    """The device a rank uses: its own GPU on CUDA (counted from the run's device when
    it names one, ``cuda:1`` -> ranks on 1, 2, ...), the CPU otherwise."""
    if not device.startswith("cuda"):
        return "cpu"
    first = device.partition(":")[2]
    return f"cuda:{(int(first) if first.isdigit() else 0) + local_rank}"


def rank_threads() -> int:
    """CPU threads per rank: ``OMP_NUM_THREADS`` when the user set it, else 1."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def rank_timeout_s(config: RunConfig) -> float:
    value = config.params.get(RANK_TIMEOUT_PARAM.name, DEFAULT_RANK_TIMEOUT_S)
    return float(value) if value else DEFAULT_RANK_TIMEOUT_S


def gather_limit_bytes(config: RunConfig) -> float:
    value = config.params.get(GATHER_LIMIT_PARAM.name, DEFAULT_GATHER_LIMIT_MB)
    return float(DEFAULT_GATHER_LIMIT_MB if value is None else value) * 1e6


def interconnect_topology() -> str | None:
    """``nvidia-smi topo -m`` output, or None when the command is not there or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "topo", "-m"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def environment(device: str) -> dict[str, Any]:
    """The distributed part of a run's environment: launcher, backend, topology."""
    topology = interconnect_topology()
    env: dict[str, Any] = {
        "launcher": "torchrun" if under_torchrun() else "spawn",
        "backend": backend_for(device),
        "master_addr": os.environ.get("MASTER_ADDR", "127.0.0.1")
        if under_torchrun()
        else "127.0.0.1",
        "threads_per_rank": rank_threads() if not device.startswith("cuda") else None,
        "interconnect_topology": topology,
        "interconnect_note": "nvidia-smi topo -m"
        if topology is not None
        else "no interconnect topology: nvidia-smi is not available on this host",
    }
    if under_torchrun():
        env["world_size"] = int(os.environ["WORLD_SIZE"])
        env["local_world_size"] = int(os.environ.get("LOCAL_WORLD_SIZE", "0") or 0) or None
        if _hosts:  # known once a strategy ran: which host each rank ran on
            env["rank_hosts"] = list(_hosts)
            env["hosts"] = len(set(_hosts))
    return env

