"""Reading a trace's event list piece by piece, so memory stays bounded.

The ``traceEvents`` array is cut at candidate boundaries between events (``}, {``)
into pieces of a few MB, and each piece is decoded as ``[ piece ]``. A piece decodes
iff it ends at a true boundary: it starts at one, so everything before its end is a
valid prefix of the array. When it does not decode, the piece grows. Memory stays at
a few pieces plus the columns; gzip is decompressed as it streams.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import msgspec

from profiler_kit.errors import TraceError
from profiler_kit.trace.columns import ColumnBuilder, Irregular, Part
from profiler_kit.trace.schema import TYPED, UNTYPED, decode_json, decode_untyped
from profiler_kit.trace.source import iter_blocks
from profiler_kit.trace.table import EventTable

HEADER_LIMIT = 64 << 20  # the event list starts within this many bytes in any real trace
BOUNDARY = re.compile(rb"\}\s*,\s*\{")
EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[\s*')
ERROR_AT = re.compile(r"\(byte (\d+)\)")
WHITESPACE = frozenset(b" \t\r\n")


def _released(view: memoryview) -> bool:
    """Release ``view``; False while decoded values still borrow it.

    msgspec's ``Raw`` values point into the bytes they were decoded from. They die with
    the piece's events, unless something else holds the frames that held them (Dask's
    worker profiler samples every thread's frames): then the view is left to be freed
    with them, and the buffer under it must not be resized (the caller copies it).
    """
    try:
        view.release()
    except BufferError:
        return False
    return True


class Misaligned(Exception):
    """A part of a trace read in parallel did not end at the boundary where the next
    part starts (a false boundary, or broken data there): load the file in one pass."""


class Split(Protocol):
    """The first part's end, and the other parts (decoded elsewhere, in file order)."""

    stop: int

    def parts(self) -> list[Part]: ...


class Buffer:
    """Decompressed bytes not yet consumed (from ``pos``), refilled from the block stream.

    One byte before ``pos`` is always kept, so a piece can be framed as ``[ ... ]`` in
    place (see ``PieceReader._events``).
    """

    def __init__(self, blocks: Iterator[bytes]) -> None:
        self.blocks = blocks
        self.data = bytearray()
        self.pos = 0
        self.dropped = 0  # bytes of the file before ``data``
        self.eof = False

    def more(self) -> bool:
        """Append the next block (dropping consumed bytes); False at the end of the file."""
        if self.eof:
            return False
        block = next(self.blocks, None)
        if block is None:
            self.eof = True
            return False
        drop = max(self.pos - 1, 0)
        if drop:
            del self.data[:drop]
            self.dropped += drop
            self.pos -= drop
        self.data += block
        return True

    def skip_to(self, offset: int) -> None:
        """Drop what comes before the absolute ``offset`` (reading up to it)."""
        while self.dropped + len(self.data) <= offset:
            self.pos = len(self.data)
            if not self.more():
                break
        self.pos = max(offset - self.dropped, 0)

    def boundary_from(self, offset: int) -> re.Match[bytes] | None:
        """The first candidate boundary at or after the absolute ``offset``, in ``data``
        (None at the end of the file). Reading more never changes which one it is."""
        found = BOUNDARY.search(self.data, max(offset - self.dropped, 0))
        while found is None and self.more():
            found = BOUNDARY.search(self.data, max(offset - self.dropped, 0))
        return found

    def rest(self, start: int) -> bytes:
        """Everything from ``start`` in ``data`` to the end of the file."""
        parts = [bytes(self.data[start:])]
        parts.extend(self.blocks)
        self.eof = True
        return b"".join(parts)


class PieceReader:
    """Reads one trace in pieces of about ``chunk_bytes``; ``lenient`` sends every piece
    through the per-event rules."""

    def __init__(self, path: Path, chunk_bytes: int, lenient: bool = False) -> None:
        self.path = path
        self.chunk_bytes = max(int(chunk_bytes), 1)
        self.lenient = lenient
        self.columns = ColumnBuilder()

    def read(self, blocks: Iterator[bytes] | None = None,
             split: Split | None = None) -> EventTable | None:
        """The table from ``blocks`` (default: the file's); None when the file is to be
        decoded whole (no top-level event list found). With ``split``, this reader decodes
        the first part only and the workers of ``split`` the others (:class:`Misaligned`
        if they do not join up)."""
        if blocks is None:
            blocks = iter_blocks(self.path, self._block_bytes())
        buf = Buffer(blocks)
        buf.more()
        found = EVENTS_KEY.search(buf.data)
        while found is None and len(buf.data) < HEADER_LIMIT and buf.more():
            found = EVENTS_KEY.search(buf.data)
        if found is None:
            if split is not None:
                raise Misaligned
            return None
        header = bytes(buf.data[: found.start()])
        buf.pos = found.end()
        if split is None:
            suffix = self._events(buf)
        else:
            if buf.dropped + buf.pos >= split.stop:
                raise Misaligned  # the first part would be empty
            self._events(buf, split.stop)
            parts = split.parts()
            self.columns.merge(parts)
            if not parts or parts[-1].suffix is None:
                raise Misaligned
            suffix = parts[-1].suffix
        try:
            doc = decode_json(UNTYPED, header + b'"traceEvents": null' + suffix)
        except (msgspec.DecodeError, msgspec.ValidationError):
            doc = None
        if not isinstance(doc, dict):
            # "traceEvents" was not the top-level key, or the file is broken: decode it whole
            return None
        return self.columns.table(self.path, doc)

    def read_part(self, start: int, stop: int | None) -> Part:
        """Decode from the first candidate boundary at or after ``start`` to the one at or
        after ``stop`` (the end of the event list when None)."""
        buf = Buffer(iter_blocks(self.path, self._block_bytes()))
        buf.skip_to(start)
        found = buf.boundary_from(start)
        if found is None:
            raise Misaligned
        buf.pos = found.end() - 1
        return self.columns.part(self._events(buf, stop))

    def _block_bytes(self) -> int:
        return min(max(self.chunk_bytes, 1 << 16), 16 << 20)

    def _events(self, buf: Buffer, stop: int | None = None) -> bytes | None:
        """Decode the event array from ``buf.pos``; return the bytes after its ``]``.

        With ``stop`` (an absolute offset), end instead at the first candidate boundary
        at or after it and return None; :class:`Misaligned` if that is not a true one.
        """
        while len(buf.data) <= buf.pos and buf.more():
            pass
        if buf.data[buf.pos:buf.pos + 1] == b"]":
            if stop is not None:
                raise Misaligned
            return buf.rest(buf.pos + 1)
        target = self.chunk_bytes
        while True:
            found = BOUNDARY.search(buf.data, buf.pos + target)
            while found is None and buf.more():
                found = BOUNDARY.search(buf.data, buf.pos + target)
            at_stop = stop is not None and (found is None or buf.dropped + found.start() >= stop)
            if at_stop:
                found = buf.boundary_from(stop)  # type: ignore[arg-type]
                if found is None or found.start() < buf.pos:
                    raise Misaligned
            data = buf.data
            if found is not None:
                # frame data[pos-1 : end+1] as "[ events ]" in place, without copying
                first, end = buf.pos - 1, found.start() + 1
                saved = data[first], data[end]
                data[first], data[end] = 0x5B, 0x5D  # "[", "]"
                view = memoryview(data)[first:end + 1]
            else:
                first, end = buf.pos - 1, len(data)
                saved = None
                view = memoryview(b"[" + data[buf.pos:] + b"]")
            try:
                self._decode(view)
                error = None
            except msgspec.DecodeError as e:
                error = str(e)
            finally:
                if saved is not None:
                    data[first], data[end] = saved
                if not _released(view) and saved is not None:
                    buf.data = data = bytearray(data)  # borrowed still: go on with a copy
            if at_stop:
                if error is not None:  # a piece from a true boundary ends at a true one
                    raise Misaligned
                return None
            if error is None:
                if found is None:
                    raise TraceError(
                        f"{self.path}: truncated JSON (the file ends inside the traceEvents list)")
                buf.pos = found.end() - 1
                target = self.chunk_bytes
                continue
            at = ERROR_AT.search(error)
            n_view = end + 1 - first
            if "trailing characters" in error and at:
                if stop is not None:  # the array ends before the planned boundary
                    raise Misaligned
                # the array closed inside this piece: decode up to its "]", keep what follows
                close = first + int(at.group(1)) - 2
                while close > buf.pos and data[close] in WHITESPACE:
                    close -= 1
                tail = memoryview(b"[" + data[buf.pos:close + 1])
                self._decode(tail)
                _released(tail)
                return buf.rest(close + 1)
            if at and int(at.group(1)) < n_view - 1:
                offset = buf.dropped + first + int(at.group(1))
                raise TraceError(f"{self.path}: not valid JSON ({error.split(' (byte')[0]}"
                                 f", near byte {offset})")
            if found is None:  # the error is at the file's end
                raise TraceError(
                    f"{self.path}: truncated JSON (the file ends inside the traceEvents list)")
            target = max(2 * (end - buf.pos), self.chunk_bytes)

    def _decode(self, piece: memoryview) -> None:
        """Decode one ``[ ... ]`` piece into rows (DecodeError if it is not complete JSON)."""
        if not self.lenient:
            try:
                events = decode_json(TYPED, piece)
            except msgspec.ValidationError:
                pass
            else:
                try:
                    self.columns.add_typed(events)
                    return
                except Irregular:
                    pass
        self.columns.add_untyped(decode_untyped(piece))
