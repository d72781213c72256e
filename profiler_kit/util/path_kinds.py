"""What a path the user gives is, decided in one place for every command: a trace, a
merged trace, a run folder or its record, a DDP benchmark report, rank summaries, memory
categories, an allocator snapshot, another folder or another file.

Each kind is told by its name where profkit names it, and by the first bytes otherwise,
so nothing here reads a whole file. Torch-free.
"""

from __future__ import annotations

import enum
import os
import zlib
from pathlib import Path

from profiler_kit.trace.loader import looks_like_trace
from profiler_kit.util.artifacts import RUN_JSON, RUN_SCHEMA

SNIFF_BYTES = 1 << 16
# the start of a merged trace (``profkit merge``), which is also a trace
MERGED_MARK = b'{"schema": "profkit.merged-trace/'
MERGED_SCHEMA = b"profkit.merged-trace/"
SUMMARIES_MARK = b'"profkit.rank-summaries/'
DDP_REPORT_NAME = "ddp_report.json"
MEMORY_CATEGORIES_SUFFIX = ".memory_categories.json"
SNAPSHOT_SUFFIXES = (".pickle", ".pkl")
_PICKLE = b"\x80"  # pickle protocol 2 and later


class PathKind(enum.Enum):
    TRACE = "trace"
    MERGED_TRACE = "merged trace"  # profkit merge's output: also a trace
    RUN_FOLDER = "run folder"  # a folder holding run.json
    RUN_RECORD = "run record"  # run.json itself
    DDP_REPORT = "DDP benchmark report"
    RANK_SUMMARIES = "rank summaries"  # profkit analyze --summary-only's file
    MEMORY_CATEGORIES = "memory categories"
    SNAPSHOT = "allocator snapshot"
    FOLDER = "folder"  # any other folder: of traces, of runs, of strategies
    OTHER = "other file"
    MISSING = "missing"


def kind_of(path: str | os.PathLike[str]) -> PathKind:
    """The kind of ``path`` (MISSING when it does not exist or cannot be read)."""
    path = Path(path)
    try:
        if path.is_dir():
            return PathKind.RUN_FOLDER if (path / RUN_JSON).is_file() else PathKind.FOLDER
        if not path.is_file():
            return PathKind.MISSING
    except OSError:
        return PathKind.MISSING
    name = path.name
    if name.endswith(MEMORY_CATEGORIES_SUFFIX):
        return PathKind.MEMORY_CATEGORIES
    if path.suffix in SNAPSHOT_SUFFIXES:
        return PathKind.SNAPSHOT
    head = _head(path)
    if head.startswith(_PICKLE):
        return PathKind.SNAPSHOT
    if is_merged_trace(path):
        return PathKind.MERGED_TRACE
    if looks_like_trace(path):  # *.json[.gz] holding traceEvents, or a *.pftrace
        return PathKind.TRACE
    if f'"schema": "{RUN_SCHEMA}"'.encode() in head:
        return PathKind.RUN_RECORD
    if SUMMARIES_MARK in head[:64]:
        return PathKind.RANK_SUMMARIES
    if name == DDP_REPORT_NAME or (name.endswith(".json") and b'"traceEvents"' not in head
                                   and name != RUN_JSON):
        return PathKind.DDP_REPORT
    if name == RUN_JSON:
        return PathKind.RUN_RECORD
    return PathKind.OTHER


def is_merged_trace(path: Path) -> bool:
    """Whether ``path`` (plain or gzip) is a trace ``profkit merge`` wrote."""
    head = _head(path, 4096)
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 64)
        except zlib.error:
            return False
    # a merged .pftrace names its schema in its first packet, the trace config
    return head.startswith(MERGED_MARK) or MERGED_SCHEMA in head[:64]


def _head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def is_memory_file(path: Path) -> bool:
    """A file ``profkit memory`` reads besides traces: memory categories or a snapshot."""
    return kind_of(path) in (PathKind.MEMORY_CATEGORIES, PathKind.SNAPSHOT)
