"""Load any torch.profiler (Kineto) Chrome trace into an :class:`EventTable`.

``load`` reads ``.json`` and ``.json.gz`` (detected by content, not by name);
``find_traces`` finds the traces under a file, a strategy or run folder, or any
TensorBoard logdir. Files that cannot be read raise :class:`TraceError` with one line
naming the file and the problem; odd events inside a good file are skipped and counted.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

from profiler_kit.errors import TraceError
from profiler_kit.trace.build import build_table, list_columns, list_memory, meta_from_header
from profiler_kit.trace.normalize import Accumulator
from profiler_kit.trace.source import decode_whole, read_all
from profiler_kit.trace.table import EventTable

__all__ = ["load", "load_simple", "find_traces", "TraceError"]

TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = frozenset({"run.json", "key_averages.json", "key_averages.json.gz"})
SNIFF_BYTES = 1 << 20


def load(path: str | os.PathLike[str], *, chunk_bytes: int | None = None,
         lenient: bool = False, jobs: int | None = None) -> EventTable:
    """Read one trace file into an event table (rows sorted by start time).

    A trace of up to 64 MB is decoded at once; a larger one in pieces of about
    ``chunk_bytes`` (default 4 MB), so memory stays bounded, and in ``jobs`` parts at
    once (default: one per core where the process may fork). ``lenient`` sends every
    piece through the per-event rules (same table, slower: it exists to check the fast
    path against).
    """
    from profiler_kit.trace import stream

    return stream.load(Path(path), chunk_bytes=chunk_bytes, lenient=lenient, jobs=jobs)


def load_simple(path: str | os.PathLike[str]) -> EventTable:
    """Reference loader: decode the whole file at once, then normalize event by event."""
    p = Path(path)
    doc = decode_whole(p, read_all(p))
    acc = Accumulator()
    for event in doc["traceEvents"]:
        acc.add(event)
    return build_table(meta_from_header(p, doc), acc, list_columns(acc), list_memory(acc))


def find_traces(path: str | os.PathLike[str]) -> list[Path]:
    """Trace files at ``path``: the file itself, or every trace below a folder, sorted.

    Below a folder, ``*.pt.trace.json[.gz]`` always count; other ``*.json[.gz]`` files
    count when they hold a ``traceEvents`` key near the start (so ``run.json`` and
    ``key_averages.json`` are left out). Hidden files and folders are left out.
    """
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.exists():
        raise TraceError(f"{p}: no such file or folder")
    found = sorted(f for f in p.rglob("*") if f.is_file() and not _hidden(f.relative_to(p))
                   and _looks_like_trace(f))
    if not found:
        raise TraceError(f"{p}: no trace files (*.json or *.json.gz with traceEvents) found")
    return found


def _hidden(relative: Path) -> bool:
    """Below a hidden folder or hidden itself (``.ipynb_checkpoints``, caches)."""
    return any(part.startswith(".") for part in relative.parts)


def _looks_like_trace(f: Path) -> bool:
    name = f.name
    if not name.endswith(TRACE_SUFFIXES) or name in NOT_TRACES:
        return False
    if name.endswith((".pt.trace.json", ".pt.trace.json.gz")):
        return True
    return b'"traceEvents"' in _head(f)


def _head(f: Path) -> bytes:
    """The first MB of a file's (decompressed) content; empty when unreadable."""
    try:
        with open(f, "rb") as fh:
            raw = fh.read(SNIFF_BYTES)
        if raw[:2] == b"\x1f\x8b":
            with gzip.open(f, "rb") as gz:
                return gz.read(SNIFF_BYTES)
        return raw
    except (OSError, EOFError, zlib.error):
        return b""
