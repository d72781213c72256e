"""Load any torch.profiler trace into an :class:`EventTable`.

``load`` reads Chrome traces, ``.json`` and ``.json.gz`` (detected by content, not by
name), and Perfetto-native ``.pftrace`` traces (:mod:`~profiler_kit.trace.pftrace`,
by name). For JSON it picks
the way: a trace whose later part a forked child has been decoding since the command
began (``ahead``, from :mod:`~profiler_kit.trace.load_ahead`), a large trace in parts on
several cores (:mod:`~profiler_kit.trace.parallel`), a small one decoded whole
(:mod:`~profiler_kit.trace.columns`), else in pieces (:mod:`~profiler_kit.trace.pieces`);
``load_simple`` is the per-event reference, and the last resort for files the faster ways
cannot frame. All give the same table.
``find_traces`` finds the traces under a file, a strategy or run folder, or any
TensorBoard logdir. Files that cannot be read raise :class:`TraceError` with one line
naming the file and the problem; odd events inside a good file are skipped and counted.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from profiler_kit.errors import TraceError
from profiler_kit.trace.build import build_table, list_columns, list_memory, meta_from_header
from profiler_kit.trace.columns import document_table
from profiler_kit.trace.normalize import Accumulator, accumulated_launches, join_launches
from profiler_kit.trace.parallel import WHOLE_BYTES, load_in_parts
from profiler_kit.trace.pftrace import is_pftrace, read_pftrace
from profiler_kit.trace.pieces import PieceReader
from profiler_kit.trace.schema import decode_whole, json_problem
from profiler_kit.trace.source import looks_like_trace, read_all
from profiler_kit.trace.table import EventTable

if TYPE_CHECKING:
    from profiler_kit.trace.load_ahead import Pending

__all__ = ["load", "load_simple", "find_traces", "looks_like_trace", "TraceError"]

DEFAULT_CHUNK_BYTES = 4 << 20
SMALL_PIECE_BYTES = 1 << 20


def load(path: str | os.PathLike[str], *, chunk_bytes: int | None = None,
         lenient: bool = False, jobs: int | None = None,
         ahead: Pending | None = None) -> EventTable:
    """Read one trace file into an event table (rows sorted by start time).

    A trace of up to ``WHOLE_BYTES`` (64 MB) is decoded in one process in pieces of 1 MB;
    a larger one in pieces of about ``chunk_bytes`` (default 4 MB), and in ``jobs``
    parts at once in forked workers (default: one per core where this process may fork,
    see :mod:`~profiler_kit.trace.forking`; ask for more than one only from a
    single-threaded process). With ``chunk_bytes`` every trace is read in pieces.
    ``lenient`` sends every piece through the per-event rules (same table, slower: it
    exists to check the fast path against). ``ahead``: the trace the command began to
    load ahead (``load_ahead.prefetch``), taken when it is this file.
    """
    p = Path(path)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived objects, no cycles: collections only cost time
    try:
        if is_pftrace(p):
            return events_table(p, *read_pftrace(p))
        table = _load(p, chunk_bytes, lenient, jobs, ahead)
        return table if table is not None else load_simple(p)
    except (msgspec.DecodeError, RecursionError) as e:  # a safety net: never a traceback
        raise TraceError(f"{p}: {json_problem(e)}") from None
    finally:
        if gc_was_enabled:
            gc.enable()


def _load(path: Path, chunk_bytes: int | None, lenient: bool, jobs: int | None,
          ahead: Pending | None) -> EventTable | None:
    """The table by the fastest way that applies; None: decode the file whole."""
    if ahead is not None and chunk_bytes is None and not lenient:
        table = ahead.take(path)  # its later part decoded since the command began
        if table is not None:
            return table
    piece_bytes = chunk_bytes or DEFAULT_CHUNK_BYTES
    if not lenient and jobs != 1:
        table = load_in_parts(path, piece_bytes, jobs, WHOLE_BYTES)
        if table is not None:
            return table
    if chunk_bytes is None and not lenient:
        # a trace in one process: pieces of 1 MB take no more time than decoding it at
        # once, and the structs of one piece at a time instead of the whole event list
        # (a 17 MB trace: 20 MiB of peak memory instead of 60)
        piece_bytes = SMALL_PIECE_BYTES
    return PieceReader(path, piece_bytes, lenient).read()


def load_simple(path: str | os.PathLike[str]) -> EventTable:
    """Reference loader: decode the whole file at once, then normalize event by event."""
    p = Path(path)
    if is_pftrace(p):
        header, events = read_pftrace(p)
        return _event_by_event(p, header, events)
    doc = decode_whole(p, read_all(p))
    return _event_by_event(p, doc, doc["traceEvents"])


def events_table(path: Path, header: dict[str, Any], events: list[Any]) -> EventTable:
    """The table of events already in hand (a Perfetto trace's, as JSON would hold them):
    whole columns at once where they are regular, else event by event."""
    data = msgspec.json.encode({**header, "traceEvents": events})
    return document_table(path, data) or _event_by_event(path, header, events)


def _event_by_event(path: Path, header: Mapping[str, Any], events: list[Any]) -> EventTable:
    acc = Accumulator()
    for event in events:
        acc.add(event)
    return build_table(meta_from_header(path, header), acc, list_columns(acc),
                       list_memory(acc), dict(acc.inputs), dict(acc.event_waits),
                       accumulated_launches(acc.launches) or join_launches([]))


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
                   and looks_like_trace(f))
    if not found:
        raise TraceError(f"{p}: no trace files (*.json or *.json.gz with traceEvents) found")
    return found


def _hidden(relative: Path) -> bool:
    """Below a hidden folder or hidden itself (``.ipynb_checkpoints``, caches)."""
    return any(part.startswith(".") for part in relative.parts)
