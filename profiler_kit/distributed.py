"""Process launch for multi-process strategies: spawn the ranks on one host, or join torchrun.

How a scenario's workload learns its rank and world size: for a strategy with
``processes=True`` the runner calls :func:`run_strategy`, which calls
``Scenario.build(strategy, config)`` *inside each rank*, after the process group is
initialized, with ``config.rank`` (0 .. ``config.world_size - 1``) and
``config.world_size`` (= ``strategy.world_size``) set, and ``config.device`` naming the
rank's own device (``"cuda:<local rank>"`` on CUDA, see :func:`rank_device`; ``"cpu"``
otherwise; on CPU each rank runs one thread unless ``OMP_NUM_THREADS`` is set). Pass
:func:`group` as the process group to ``DistributedDataParallel``, pipeline stages and
collectives: it is the whole world when profkit spawned the ranks, and a sub-group of
torchrun's world when a strategy uses fewer ranks than torchrun started.

Two launch modes, one code path per rank:

* **spawn** (default): profkit starts ``strategy.world_size`` Python processes on this
  host (``MASTER_ADDR=127.0.0.1``, a free port, gloo on CPU, nccl on CUDA), each in its
  own process group so that a failing run can be killed without leaving anything
  behind. A rank that raises, exits or stops making progress for ``--rank-timeout``
  seconds ends the strategy with :class:`RankFailure` naming the rank.
* **torchrun**: when ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``MASTER_ADDR`` are set,
  this process *is* one rank. Nothing is spawned; every participating rank measures,
  and the Measurements are gathered to every rank (``all_gather_object`` over the
  global group) so the runner can combine them; only :func:`is_output_rank` writes files
  and prints.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy

DEFAULT_RANK_TIMEOUT_S = 300.0

# Scenarios with multi-process strategies add this parameter (``--rank-timeout``);
# run_strategy reads it from ``config.params``.
RANK_TIMEOUT_PARAM = Param(
    "rank_timeout",
    float,
    DEFAULT_RANK_TIMEOUT_S,
    "seconds a rank may go without progress (or a collective may wait) before the "
    "strategy is ended as failed",
    min_value=1.0,
)

_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")
_WORKER_ENV = "PROFKIT_RANK_WORKER"  # set in ranks that profkit spawned
_POLL_S = 0.05
_STARTUP_S = 120.0  # extra allowance until a rank's first step is done (imports, init)
_PORT_ATTEMPTS = 3  # the free port can be taken between choosing it and listening on it
_STACK_WAIT_S = 1.0  # how long a stalled rank gets to write its stacks when asked
STACK_SIGNAL = signal.SIGUSR1
_GRACE_S = 0.3  # after a first failure, how long to wait for the rank that caused it

_group: Any = None  # the process group of the strategy being measured in this process


class RankFailure(RuntimeError):
    """A rank raised, died or hung: the strategy failed (the run goes on)."""


# ---------------------------------------------------------------------------
# What workloads and the runner ask


def group() -> Any:
    """The process group of the strategy this rank is measuring (``None`` = the world)."""
    return _group


def under_torchrun() -> bool:
    """True when this process was started by torchrun (or another env:// launcher)."""
    if os.environ.get(_WORKER_ENV):
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
    return env


# ---------------------------------------------------------------------------
# The entry point the runner calls


def run_strategy(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: Any,
    strategy_dir: Path,
) -> list[Any]:
    """Measure ``strategy`` as ``strategy.world_size`` ranks; one Measurement per rank.

    Raises :class:`RankFailure` naming the rank when one raises, dies or hangs; by
    then no rank that this call started is still running.
    """
    strategy_dir = Path(strategy_dir)
    if under_torchrun():
        measured = _run_in_torchrun(scenario, strategy, config, options, strategy_dir)
    else:
        measured = _spawn(scenario, strategy, config, options, strategy_dir)
    return [_own_files(m, rank) for rank, m in enumerate(measured)]


def _own_files(measurement: Any, rank: int) -> Any:
    """Keep only the rank's own traces: ranks write into one folder at the same time, so
    each one's "new files" listing also catches its peers' traces."""
    files = getattr(measurement, "trace_files", None)
    if files is None:
        return measurement
    own = tuple(f for f in files if Path(f).name.startswith(f"rank{rank}."))
    return replace(measurement, trace_files=own)


# ---------------------------------------------------------------------------
# Inside one rank (both modes)


def _measure_rank(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: Any,
    strategy_dir: Path,
    rank: int,
    world_size: int,
    local_rank: int,
    beat: Callable[[], None] | None = None,
) -> Any:
    from profiler_kit import runner

    rank_config = replace(
        config,
        rank=rank,
        world_size=world_size,
        device=rank_device(config.device, local_rank),
    )
    workload = scenario.build(strategy, rank_config)
    if beat is not None:
        beat()
    # The runner reports every iteration after timing it: a heartbeat outside the samples.
    progress = (lambda *_args: beat()) if beat is not None else None
    try:
        return runner.measure(workload, options, strategy_dir, worker_name=f"rank{rank}",
                              progress=progress)
    finally:
        close = getattr(workload, "close", None)
        if close is not None:
            close()


def _set_threads(device: str) -> None:
    import torch

    if not device.startswith("cuda"):
        torch.set_num_threads(rank_threads())


# ---------------------------------------------------------------------------
# torchrun: this process is one rank


_torchrun_ready = False


def _init_torchrun(config: RunConfig, timeout_s: float) -> None:
    global _torchrun_ready
    import torch
    import torch.distributed as dist

    if _torchrun_ready:
        return
    local_rank = int(os.environ["LOCAL_RANK"])
    if config.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(rank_device(config.device, local_rank)))
    _set_threads(config.device)
    if not dist.is_initialized():
        # nccl for the workload's tensors, gloo for gathering results (Python objects).
        backend = "cpu:gloo,cuda:nccl" if config.device.startswith("cuda") else "gloo"
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
        atexit.register(_destroy_world)
    _torchrun_ready = True


def _destroy_world() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        with contextlib.suppress(Exception):
            dist.destroy_process_group()


_strategy_seq = 0  # strategies measured so far in this torchrun process (same on every rank)


def _run_in_torchrun(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: Any,
    strategy_dir: Path,
) -> list[Any]:
    """Every rank calls this for every strategy, in the same order. The ranks of the
    strategy measure; results travel through the process group's key-value store, and
    every rank (measuring or idle) waits for them while the measuring ranks' step
    counter moves, so a long strategy never times out its idle peers and a hung one is
    noticed after ``--rank-timeout`` seconds without a step."""
    global _group, _strategy_seq
    import torch.distributed as dist

    timeout_s = rank_timeout_s(config)
    _init_torchrun(config, timeout_s)
    rank, world = dist.get_rank(), dist.get_world_size()
    size = strategy.world_size
    if size > world:
        raise RankFailure(f"{strategy.name} needs {size} ranks but torchrun started {world}")
    _strategy_seq += 1
    prefix = f"profkit/{_strategy_seq}/"
    store = _default_store()
    # Every rank writes its trace where rank 0's runner put the strategy.
    where = [str(strategy_dir)]
    dist.broadcast_object_list(where, src=0)
    strategy_dir = Path(where[0])
    strategy_dir.mkdir(parents=True, exist_ok=True)
    # A group of its own per strategy (even of the whole world): a failing rank aborts it,
    # so its peers' pending collectives fail at once instead of after the timeout.
    sub = dist.new_group(ranks=list(range(size)), timeout=timedelta(seconds=timeout_s))
    _group = sub
    try:
        if rank < size:
            try:
                measurement = _measure_rank(
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
        _group = None
        with contextlib.suppress(Exception):
            dist.destroy_process_group(sub)
    failed = [r for r, (_m, error) in enumerate(gathered) if error is not None]
    if failed:
        # Peers of a failing rank fail too, with communication errors: name the cause.
        r = min(failed, key=lambda r: (_is_communication_error(gathered[r][1]), r))
        raise RankFailure(f"rank {r} failed during {strategy.name}: {gathered[r][1]}")
    return [measurement for measurement, _error in gathered]


def _is_communication_error(error: str | None) -> bool:
    return any(w in (error or "") for w in ("DistBackendError", "DistNetworkError",
                                            "Connection", "gloo", "NCCL", "abort"))


def _default_store() -> Any:
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store()


def _collect(store: Any, prefix: str, size: int, name: str, timeout_s: float) -> list[Any]:
    """Every measuring rank's (measurement, error), waiting as long as steps still happen.

    Polls with ``check`` (no store timeouts, no warnings). The clock restarts at every
    step and every result; once a rank has reported, its peers may still be waiting in a
    collective for up to the group's timeout, hence the extra allowance. Rank 0 decides
    that a rank hung and publishes the verdict, so every rank raises the same error
    (the others only decide alone, much later, if rank 0 is gone)."""
    import torch.distributed as dist

    keys = [prefix + f"result/{r}" for r in range(size)]
    verdict_key = prefix + "verdict"
    judge = dist.get_rank() == 0
    last_state: tuple[int, int] = (-1, -1)
    last_change = time.monotonic()
    while True:
        done = [store.check([k]) for k in keys]
        if all(done):
            return [pickle.loads(store.get(k)) for k in keys]
        if store.check([verdict_key]):
            raise RankFailure(store.get(verdict_key).decode())
        state = (int(store.add(prefix + "steps", 0)), sum(done))
        now = time.monotonic()
        if state != last_state:
            last_state, last_change = state, now
        steps, reported = state
        allowance = timeout_s + (timeout_s + 5 if reported else 0.0)
        allowance += _STARTUP_S if steps <= size else 0.0
        if now - last_change > (allowance if judge else 2 * allowance + 30):
            missing = [r for r, ok in enumerate(done) if not ok]
            who = ", ".join(str(r) for r in missing)
            message = (
                f"rank{'s' if len(missing) > 1 else ''} {who} made no progress for "
                f"{timeout_s:g} s during {name} (hung?) (--rank-timeout)"
            )
            store.set(verdict_key, message)
            raise RankFailure(message)
        time.sleep(0.2)


# ---------------------------------------------------------------------------
# spawn: profkit starts the ranks on this host


@dataclass(frozen=True)
class _RankJob:
    """What a spawned rank needs (pickled into the job folder)."""

    scenario_ref: str  # built-in name or path of the user's scenario file
    strategy: Strategy
    config: RunConfig
    options: Any
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


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: Any,
    strategy_dir: Path,
) -> list[Any]:
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
    options: Any,
    strategy_dir: Path,
) -> list[Any]:
    world = strategy.world_size
    timeout_s = rank_timeout_s(config)
    strategy_dir.mkdir(parents=True, exist_ok=True)
    job_dir = Path(tempfile.mkdtemp(prefix="profkit-ranks-"))
    job = _RankJob(
        scenario_ref(scenario), strategy, config, options, str(strategy_dir),
        str(job_dir), timeout_s,
    )
    (job_dir / "job.pkl").write_bytes(pickle.dumps(job))
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, env.get("PYTHONPATH", "")) if p
    )
    env.update(
        {
            _WORKER_ENV: "1",
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
                        [sys.executable, "-m", "profiler_kit.distributed", str(job_dir)],
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
            _wait(procs, job_dir, strategy.name, timeout_s)
            return [_load_result(job_dir, r, strategy.name) for r in range(world)]
        except RankFailure as failure:
            _kill_all(procs)
            raise RankFailure(f"{failure}{_keep_logs(job_dir, strategy_dir, world)}") from None
    finally:
        _kill_all(procs)
        shutil.rmtree(job_dir, ignore_errors=True)


def _wait(
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
        time.sleep(_POLL_S)


def _hang_message(procs: Sequence[subprocess.Popen[bytes]], job_dir: Path, stale: list[int],
                  name: str, timeout_s: float) -> str:
    """Name the rank(s) that stopped; a rank waiting in a collective is not the cause."""
    for r in stale:  # ask each stalled rank for its stacks (see _rank_main)
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
        return started + _STARTUP_S
    last = max(started, time.monotonic() - age)
    return last if (job_dir / f"rank{rank}.running").exists() else last + _STARTUP_S


def _failure_message(
    job_dir: Path, failed: list[int], codes: list[int | None], name: str
) -> str:
    def error_of(r: int) -> str | None:
        path = job_dir / f"rank{r}.error"
        return path.read_text().strip() if path.exists() else None

    def blame(r: int) -> tuple[int, int]:
        error = error_of(r) or ""
        # killed by a signal or exited without a Python error first; peers' comm errors last
        return (0 if error == "" else 1 + _is_communication_error(error), r)

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


def _load_result(job_dir: Path, rank: int, name: str) -> Any:
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


# ---------------------------------------------------------------------------
# The spawned rank's main


def _watch_parent(parent: int) -> None:
    """End this rank when the process that spawned it is gone (no orphans)."""

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, name="profkit-parent-watch", daemon=True).start()


def _rank_main(job_dir: Path) -> None:
    global _group
    _watch_parent(os.getppid())
    job: _RankJob = pickle.loads((job_dir / "job.pkl").read_bytes())
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    beat_path = job_dir / f"rank{rank}.beat"
    # When the launcher finds this rank stalled, it sends SIGUSR1 and the rank's stacks
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
        _set_threads(device)
        # The launcher watches for stalls (and asks for stacks) at job.timeout_s; the
        # backend's own timeout is only a backstop, so it must not fire first.
        dist.init_process_group(
            backend_for(device), timeout=timedelta(seconds=2 * job.timeout_s + 30)
        )
        beat()
        _group = None
        measurement = _measure_rank(
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
    # Run the imported module's copy, so workloads that import profiler_kit.distributed
    # see the same state (group()) as the rank's main.
    from profiler_kit import distributed as _module

    _module._rank_main(Path(sys.argv[1]))
