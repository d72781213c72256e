"""A trace's raw events, piece by piece, for tools that pass events through (``merge``).

The event list is cut and decoded as the loader does (:mod:`.pieces`), but each piece
goes to a callback as plain JSON values instead of into columns, so a trace of any
size streams through in the memory of a few pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from profiler_kit.errors import TraceError
from profiler_kit.trace.pieces import EVENTS_KEY, HEADER_LIMIT, Buffer, PieceReader
from profiler_kit.trace.schema import UNTYPED, decode_json, decode_untyped, decode_whole
from profiler_kit.trace.source import iter_blocks, read_all

PIECE_BYTES = 4 << 20

Sink = Callable[[list[Any]], None]


class _Pieces(PieceReader):
    def __init__(self, path: Path, chunk_bytes: int, sink: Sink) -> None:
        super().__init__(path, chunk_bytes)
        self.sink = sink

    def _decode(self, piece: memoryview) -> None:
        events = decode_untyped(piece)
        self.sink(events if isinstance(events, list) else [])

    def stream(self) -> dict[str, Any] | None:
        """The top-level keys other than the events (None: decode the file whole)."""
        buf = Buffer(iter_blocks(self.path, self._block_bytes()))
        buf.more()
        found = EVENTS_KEY.search(buf.data)
        while found is None and len(buf.data) < HEADER_LIMIT and buf.more():
            found = EVENTS_KEY.search(buf.data)
        if found is None:
            return None
        header = bytes(buf.data[: found.start()])
        buf.pos = found.end()
        suffix = self._events(buf)
        try:
            doc = decode_json(UNTYPED, header + b'"traceEvents": null' + (suffix or b""))
        except (msgspec.DecodeError, msgspec.ValidationError):
            doc = None
        if not isinstance(doc, dict):
            raise TraceError(f"{self.path}: not a torch.profiler trace (no top-level "
                             "traceEvents list)")
        doc.pop("traceEvents", None)
        return doc


def stream_events(path: str | Path, sink: Sink, piece_bytes: int = PIECE_BYTES
                  ) -> dict[str, Any]:
    """Hand ``sink`` the events of ``path`` in file order, a list per piece of about
    ``piece_bytes``; return the other top-level keys. TraceError when it cannot be read.

    A file whose event list is not where the pieces look for it is decoded whole (only
    such odd files cost their full size in memory)."""
    p = Path(path)
    try:
        header = _Pieces(p, piece_bytes, sink).stream()
    except (msgspec.DecodeError, RecursionError) as e:
        raise TraceError(f"{p}: not valid JSON ({e})") from None
    if header is not None:
        return header
    doc = decode_whole(p, read_all(p))
    sink(doc.pop("traceEvents"))
    return doc
