"""Watching the machine while a round is timed (see :mod:`profiler_kit.contention`).

``Watch.start()`` before the timing pass and ``Watch.stop()`` after it read every
process's CPU time and the machine's (psutil). So the CPU time that other processes used
in between is known (by process where they outlive the round; short-lived ones count in
the machine's total only), as are a virtual machine's steal time, the CPU time of
profkit's own processes, which of their threads were busy and, on Linux, how long those
threads waited for a core while ready to run (``/proc/<pid>/task/<tid>/schedstat``: the
scheduler's own account, so a rank in its own session that the kernel's group scheduling
gave less than the free cores suggest is seen as it was). profkit's own processes
are the tree under the process that started the run (``PROFKIT_ROOT_PID``, inherited by
ranks and DataLoader workers). On CUDA, NVML (``nvidia-ml-py``, where installed) adds
other processes on the GPU and the clock slowdowns (power cap, thermal). Each reading
costs tens of milliseconds, outside the timed steps.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from profiler_kit.contention import BUSY_THREAD_FRACTION, Competitor, RoundContention

ROOT_ENV = "PROFKIT_ROOT_PID"
_TOP = 3  # other processes kept per round, by CPU use


def mark_root() -> None:
    """Make this process the root of profkit's own processes, unless a parent already is
    (its children inherit the mark)."""
    os.environ.setdefault(ROOT_ENV, str(os.getpid()))


def _root_pid() -> int:
    try:
        return int(os.environ.get(ROOT_ENV, os.getpid()))
    except ValueError:
        return os.getpid()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def process_label(name: str, cmdline: list[str] | None) -> str:
    """``python (pytest)`` for ``python -m pytest``, ``python3 (hog)`` for
    ``python3 hog.py``; other programs by their name."""
    if not name.startswith("python") or not cmdline:
        return name
    args = iter(cmdline[1:])
    for arg in args:
        if arg == "-m":
            return f"{name} ({next(args, '?')})"
        if arg == "-c":
            return f"{name} (-c)"
        if not arg.startswith("-"):
            return f"{name} ({Path(arg).stem})"
    return name


class _Snapshot:
    """Every process's CPU seconds, and profkit's own threads' CPU seconds."""

    def __init__(self, root: int) -> None:
        import psutil

        self.at = time.perf_counter()
        t = psutil.cpu_times()
        self.steal = float(getattr(t, "steal", 0.0))  # Linux guests
        # every process's CPU time, those that end before the round does included
        self.busy = t.user + t.system + sum(float(getattr(t, f, 0.0))
                                            for f in ("nice", "irq", "softirq"))
        self.cpu: dict[int, float] = {}
        parent: dict[int, int] = {}
        for p in psutil.process_iter(["ppid", "cpu_times"]):
            times = p.info.get("cpu_times")
            if times is None:  # gone, or not ours to read
                continue
            self.cpu[p.pid] = times.user + times.system
            parent[p.pid] = p.info.get("ppid") or 0
        self.own = _tree(root, parent) | {os.getpid()}
        self.threads: dict[tuple[int, int], float] = {}
        # seconds each own thread waited for a core while ready to run; None: not readable
        self.waits: dict[tuple[int, int], float] | None = {}
        for pid in self.own:
            try:
                for t in psutil.Process(pid).threads():
                    self.threads[(pid, t.id)] = t.user_time + t.system_time
                    if self.waits is not None:
                        wait = _run_queue_wait_s(pid, t.id)
                        if wait is None:
                            self.waits = None
                        else:
                            self.waits[(pid, t.id)] = wait
            except (psutil.Error, OSError):
                continue


def _run_queue_wait_s(pid: int, tid: int) -> float | None:
    """Seconds a thread has waited on a run queue (ready, not running); None where the
    kernel does not say (not Linux), 0 for a thread that ended meanwhile."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except FileNotFoundError:
        return 0.0 if os.path.isdir("/proc/self/task") else None
    except (OSError, ValueError, IndexError):
        return None


def _tree(root: int, parent: dict[int, int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


class Watch:
    """One round's contention: ``start()``, time the round, ``stop()``."""

    def __init__(self, devices: Iterable[Any] = ()) -> None:
        self.cuda = [d for d in devices if getattr(d, "type", str(d)) == "cuda"]
        self._start: _Snapshot | None = None

    def start(self) -> None:
        try:
            self._start = _Snapshot(_root_pid())
        except Exception:  # noqa: BLE001 - no psutil, or /proc unreadable: no record
            self._start = None

    def stop(self, intra_op_threads: int | None = None) -> RoundContention | None:
        if self._start is None:
            return None
        try:
            end = _Snapshot(_root_pid())
        except Exception:  # noqa: BLE001
            return None
        return _contention(self._start, end, intra_op_threads, self.cuda)


def _contention(a: _Snapshot, b: _Snapshot, intra_op_threads: int | None,
                cuda: list[Any]) -> RoundContention:
    wall = max(b.at - a.at, 1e-9)
    own = a.own | b.own
    others: dict[str, float] = {}
    own_cpu = others_cpu = 0.0
    for pid, cpu in b.cpu.items():
        used = max(cpu - a.cpu.get(pid, 0.0), 0.0)  # a process born in the round: all of it
        if pid in own:
            own_cpu += used
            continue
        others_cpu += used
        if used >= 0.01 * wall:  # named only when it used a percent of a core
            label = _pid_label(pid)
            others[label] = others.get(label, 0.0) + used
    busy = sum(1 for key, cpu in b.threads.items()
               if cpu - a.threads.get(key, 0.0) >= BUSY_THREAD_FRACTION * wall)
    waited = None
    if a.waits is not None and b.waits is not None:
        waited = sum(max(w - a.waits.get(key, 0.0), 0.0) for key, w in b.waits.items())
    busiest = sorted((Competitor(n, s / wall) for n, s in others.items()),
                     key=lambda c: -c.cores)
    freq, governor = _cpu_frequency()
    gpu_others, throttle = _gpu(cuda, own)
    return RoundContention(
        # processes that ended within the round are seen only in the machine's total
        wall_s=wall, cores=_cores(),
        others_cores=max(others_cpu, b.busy - a.busy - own_cpu, 0.0) / wall,
        steal_cores=max(b.steal - a.steal, 0.0) / wall,
        busiest=tuple(c for c in busiest[:_TOP] if c.cores >= 0.01),
        own_cores=own_cpu / wall, own_threads=busy, intra_op_threads=intra_op_threads,
        own_wait_cores=None if waited is None else waited / wall,
        load_avg_1m=_load_avg(), cpu_freq_fraction=freq, cpu_governor=governor,
        gpu_others=gpu_others, gpu_throttle=throttle)


def _load_avg() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def _cpu_frequency() -> tuple[float | None, str | None]:
    """Current over maximum frequency (None where the machine does not say, as in most
    VMs) and the scaling governor of CPU 0 (Linux)."""
    fraction = None
    try:
        import psutil

        f = psutil.cpu_freq()
        if f is not None and f.max and f.current:
            fraction = min(f.current / f.max, 1.0)
    except Exception:  # noqa: BLE001
        pass
    governor = None
    try:
        governor = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
                        ).read_text().strip() or None
    except OSError:
        pass
    return fraction, governor


# clock-event reasons that lower the GPU's clocks against its will (NVML's names)
SLOWDOWNS = ("SwPowerCap", "HwSlowdown", "HwThermalSlowdown", "SwThermalSlowdown",
             "HwPowerBrakeSlowdown")


def slowdowns(mask: int, nvml: Any) -> tuple[str, ...]:
    """The ``SLOWDOWNS`` set in NVML's clock-event ``mask`` (``nvml``: the pynvml module,
    whose constants are ``nvmlClocksEventReason*``, ``nvmlClocksThrottleReason*`` before
    driver 535)."""
    found = []
    for name in SLOWDOWNS:
        bit = getattr(nvml, f"nvmlClocksEventReason{name}",
                      getattr(nvml, f"nvmlClocksThrottleReason{name}", 0))
        if isinstance(bit, int) and bit and mask & bit:
            found.append(name)
    return tuple(found)


def _handle(nvml: Any, device: Any) -> Any:
    """The NVML handle of a torch CUDA device, by UUID (CUDA_VISIBLE_DEVICES renumbers
    devices; NVML does not), else by index."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    try:
        uuid = str(torch.cuda.get_device_properties(index).uuid)
        return nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:  # noqa: BLE001 - an older torch, or MIG
        return nvml.nvmlDeviceGetHandleByIndex(index)


def _gpu(cuda: list[Any], own: set[int]) -> tuple[tuple[Competitor, ...], tuple[str, ...]]:
    """Other processes on the run's GPUs and the clock slowdowns seen, from NVML."""
    if not cuda:
        return (), ()
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no NVML: nothing to say
        return (), ()
    others: set[str] = set()
    reasons: set[str] = set()
    try:
        for d in cuda:
            handle = _handle(pynvml, d)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if p.pid not in own:
                    others.add(_pid_label(p.pid))
            current = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons",
                              pynvml.nvmlDeviceGetCurrentClocksThrottleReasons)
            reasons.update(slowdowns(current(handle), pynvml))
    except Exception:  # noqa: BLE001 - a field this driver lacks
        pass
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return tuple(Competitor(n, 0.0) for n in sorted(others)), tuple(sorted(reasons))


def _pid_label(pid: int) -> str:
    """The label of a process (see ``process_label``), or ``pid N`` where it is gone."""
    try:
        import psutil

        p = psutil.Process(pid)
        return process_label(p.name(), p.cmdline())
    except Exception:  # noqa: BLE001 - another user's process
        return f"pid {pid}"
