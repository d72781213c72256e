"""Read a CUDA caching-allocator snapshot pickle without torch and without executing it.

The unpickler refuses every class: a foreign pickle fails with one line instead of running
code. The typed snapshot and what it shows are in :mod:`profiler_kit.analysis.memory.snapshot`.
"""

from __future__ import annotations

import gc
import pickle
from pathlib import Path

from profiler_kit.analysis.memory.snapshot import Snapshot, parse_snapshot
from profiler_kit.errors import TraceError


class _NoClasses(pickle.Unpickler):
    """Plain containers only: any class or callable in the stream is refused."""

    def find_class(self, module: str, name: str):  # noqa: ARG002 - refuses everything
        raise pickle.UnpicklingError(f"refuses to load {module}.{name}")


def load_snapshot(path: str | Path) -> Snapshot:
    """The snapshot at ``path``; a truncated or foreign file raises one-line TraceError."""
    path = Path(path)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of containers, no cycles: collections only cost time
    try:
        return _load(path)
    finally:
        if gc_was_enabled:
            gc.enable()


def _load(path: Path) -> Snapshot:
    try:
        with open(path, "rb") as fh:  # streamed: the file's bytes are never held whole
            data = _NoClasses(fh).load()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError,
            AttributeError, KeyError, MemoryError) as exc:
        reason = exc or "truncated"
        raise TraceError(f"{path}: not an allocator snapshot pickle ({reason})") from None
    return parse_snapshot(data, str(path))
