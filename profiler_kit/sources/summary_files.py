"""Rank summaries on disk: ``profkit analyze --summary-only`` writes them, the job view
reads them back, so traces can be summarized where they live and reduced anywhere.

The file is JSON, schema ``profkit.rank-summaries/1``: ``{"schema": ..., "summaries":
[RankSummary, ...], "unreadable": [{"path", "reason"}, ...]}``; a call is an array
``[kind, group, seq, start_ns, end_ns, size_bytes, dtype, step, exposed]`` to keep
thousands of calls small.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from profiler_kit.analysis.jobs.rank_summary import RankSummary
from profiler_kit.errors import TraceError
from profiler_kit.trace.source import Unreadable
from profiler_kit.util.path_kinds import PathKind, kind_of

SCHEMA = "profkit.rank-summaries/1"


class SummaryDocument(msgspec.Struct):
    schema: str
    summaries: list[RankSummary]
    unreadable: list[Unreadable] = []  # traces left out (absent in files of profkit <= 0.1)


_DECODER = msgspec.json.Decoder(SummaryDocument)


def dumps(summaries: list[RankSummary], unreadable: Sequence[Unreadable] = ()) -> bytes:
    return msgspec.json.encode(SummaryDocument(SCHEMA, summaries, list(unreadable))) + b"\n"


def is_summary_file(path: Path) -> bool:
    """A ``.json`` file that starts as a summaries document does."""
    return path.name.endswith(".json") and kind_of(path) is PathKind.RANK_SUMMARIES


def find_summary_files(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """The summaries files at or below ``paths`` (sorted within a folder)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(f for f in sorted(p.rglob("*.json")) if is_summary_file(f))
        elif is_summary_file(p):
            found.append(p)
    return found


def load(path: Path) -> SummaryDocument:
    """The summaries in ``path`` and the traces they left out; TraceError naming the file
    when it is not a summaries file."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        doc = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise TraceError(f"{path}: not a profkit rank-summaries file ({e})") from None
    if not doc.schema.startswith("profkit.rank-summaries/1"):
        raise TraceError(f"{path}: rank-summaries schema {doc.schema!r} is not one this "
                         f"profkit reads ({SCHEMA})")
    return doc
