"""Devices: which ones exist, synchronizing every one in use, peak memory, AMP dtype.

A sample is only sound when every device the strategy touched has finished its
work, so :func:`synchronize` takes the whole list, not just the current device.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shlex
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from profiler_kit.errors import UsageError
from profiler_kit.scenario import CUDA, MULTI_GPU, Strategy


def cuda_count() -> int:
    """Number of usable CUDA devices (0 when torch has no CUDA or no GPU is present)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve(requested: str) -> str:
    """``auto`` / ``cpu`` / ``cuda`` / ``cuda:N`` -> the device the run uses, or UsageError."""
    requested = requested.strip().lower()
    if requested == "auto":
        return "cuda" if cuda_count() > 0 else "cpu"
    if requested == "cpu":
        return "cpu"
    if requested == "cuda" or requested.startswith("cuda:"):
        count = cuda_count()
        if count == 0:
            raise UsageError(
                f"--device {requested}: this machine has no CUDA device; use --device cpu"
            )
        if ":" in requested:
            index = requested.split(":", 1)[1]
            if not index.isdigit() or int(index) >= count:
                raise UsageError(
                    f"--device {requested}: no such device; this machine has {count} CUDA device(s)"
                )
        return requested
    raise UsageError(f"--device {requested!r}: choose auto, cpu, cuda or cuda:N")


def unmet_requirement(strategy: Strategy, device: str) -> str | None:
    """Why ``strategy`` cannot run on this machine with this run device, or None if it can."""
    for need in strategy.requires:
        if need == CUDA:
            if cuda_count() == 0:
                return "needs CUDA; this machine has none"
            if not device.startswith("cuda"):
                return f"needs CUDA; the run's device is {device}"
        elif need == MULTI_GPU:
            count = cuda_count()
            if count < 2:
                return f"needs ≥2 GPUs; found {count}"
            if not device.startswith("cuda"):
                return f"needs ≥2 GPUs; the run's device is {device}"
        else:
            return f"needs {need}, which profkit cannot check"
    if strategy.processes and strategy.world_size > 1 and device.startswith("cuda"):
        from profiler_kit.measure.distributed import under_torchrun

        count = cuda_count()
        if count < strategy.world_size and not under_torchrun():  # torchrun places the ranks
            return f"needs {strategy.world_size} GPUs (one per rank); found {count}"
    return None


def amp_dtype(device: str) -> str:
    """The autocast dtype of AMP twins: float16 on CUDA, bfloat16 on CPU."""
    return "float16" if device.startswith("cuda") else "bfloat16"


def synchronize(devices: Iterable[Any]) -> None:
    """Wait until every CUDA device in ``devices`` has finished its queued work (CPU: no-op)."""
    for d in devices:
        dev = torch.device(d)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)


def cuda_devices(devices: Iterable[Any]) -> list[torch.device]:
    """The distinct CUDA devices among ``devices``, with explicit indices."""
    found: dict[int, torch.device] = {}
    for d in devices:
        dev = torch.device(d)
        if dev.type == "cuda":
            index = dev.index if dev.index is not None else torch.cuda.current_device()
            found[index] = torch.device("cuda", index)
    return [found[i] for i in sorted(found)]


def reset_peak_memory(devices: Iterable[Any]) -> dict[str, int]:
    """Start a fresh peak for every CUDA device in ``devices``; the bytes allocated then
    (weights, optimizer state, workspaces: what the peak starts from)."""
    held = {}
    for dev in cuda_devices(devices):
        torch.cuda.reset_peak_memory_stats(dev)
        held[str(dev)] = int(torch.cuda.memory_allocated(dev))
    return held


def peak_memory(devices: Iterable[Any], held: dict[str, int]) -> dict[str, dict[str, int]]:
    """Peak allocated/reserved bytes per CUDA device since :func:`reset_peak_memory`, beside
    what was allocated when the peak was reset (``held``, its answer): the step's own rise
    is the difference."""
    return {
        str(dev): {
            "allocated_bytes": int(torch.cuda.max_memory_allocated(dev)),
            "reserved_bytes": int(torch.cuda.max_memory_reserved(dev)),
            "allocated_at_start_bytes": held.get(str(dev), 0),
        }
        for dev in cuda_devices(devices)
    }


def memory_capacity(device: str) -> int | None:
    """The total memory of a CUDA device (None for the CPU)."""
    found = cuda_devices([device])
    return int(torch.cuda.get_device_properties(found[0]).total_memory) if found else None


def _torchvision_version() -> str | None:
    """torchvision's ``__version__`` (with its build, e.g. ``+cu130``) read from its
    ``version.py`` without importing it: the import would pull in Dynamo (3 s a process)."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:  # pragma: no cover - a run dependency
        return None
    try:
        text = Path(spec.origin).with_name("version.py").read_text()
    except OSError:  # pragma: no cover - an unusual install: ask the package itself
        import torchvision
        return str(torchvision.__version__)
    found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return found.group(1) if found else None


def environment(argv: list[str] | None = None) -> dict[str, Any]:
    """What a reader of run.json needs to know about the machine and software."""
    torchvision_version = _torchvision_version()
    count = cuda_count()
    cudnn = torch.backends.cudnn.version() if count else None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torchvision": torchvision_version,
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "cuda_available": count > 0,
        "device_count": count,
        "devices": [torch.cuda.get_device_name(i) for i in range(count)],
        # what `profkit memory` sizes the largest batch against
        "device_memory_bytes": [torch.cuda.get_device_properties(i).total_memory
                                for i in range(count)],
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_threads": torch.get_num_threads(),
        "hostname": socket.gethostname(),
        "command_line": shlex.join(argv if argv is not None else sys.argv),
    }

