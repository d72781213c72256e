"""The CUDA caching allocator's history over the profiled pass (``--memory-snapshot``).

Recorded with Python stacks and dumped as the pickle of ``torch.cuda.memory._snapshot()``
(what PyTorch's memory viewer, pytorch.org/memory_viz, opens) beside the trace, so
``profkit memory`` can name the lines that hold the peak and find fragmentation and OOMs.
Off by default: its overhead on CUDA is not measured yet. A failure to record or to write
is a note on stderr, never a failed run.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from profiler_kit.util.artifacts import write_bytes_atomic

SUFFIX = ".memory_snapshot.pickle"
# allocator actions kept (a ring buffer): about 10 MB of pickle, read in well under a second
MAX_ENTRIES = 100_000


def path_for(strategy_dir: Path, worker_name: str) -> Path:
    return Path(strategy_dir) / f"{worker_name}{SUFFIX}"


@contextmanager
def recording(cuda_devices: list[Any], strategy_dir: Path, worker_name: str,
              max_entries: int = MAX_ENTRIES) -> Iterator[None]:
    """Record the allocator history of ``cuda_devices`` while the block runs, then dump it."""
    import torch

    started = []
    try:
        for device in cuda_devices:
            torch.cuda.memory._record_memory_history(
                enabled="all", context="all", stacks="python", max_entries=max_entries,
                device=device, clear_history=True)
            started.append(device)
    except (RuntimeError, TypeError, AttributeError) as exc:
        _note(f"no allocator snapshot: recording failed ({exc})")
    try:
        yield
        if started:
            try:
                data = pickle.dumps(torch.cuda.memory._snapshot(),
                                    protocol=pickle.HIGHEST_PROTOCOL)
                write_bytes_atomic(path_for(strategy_dir, worker_name), data)
            except (RuntimeError, OSError, pickle.PicklingError) as exc:
                _note(f"no allocator snapshot: {exc}")
    finally:
        for device in started:
            torch.cuda.memory._record_memory_history(enabled=None, device=device)


def _note(line: str) -> None:
    print(f"profkit: note: {line}", file=sys.stderr)
