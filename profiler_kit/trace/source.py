"""Reading trace bytes: plain or gzip (by content), whole or as a stream of blocks.

Every I/O or decompression problem becomes a :class:`TraceError` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from profiler_kit.errors import TraceError
from profiler_kit.trace.pftrace import is_pftrace

try:  # Intel's igzip: zlib's API and results, about twice as fast to inflate
    from isal import isal_zlib as inflating
except ImportError:  # no wheel for this platform
    import zlib as inflating  # type: ignore[no-redef]


class Unreadable(msgspec.Struct, frozen=True):
    """A trace that could not be read, and why; the other traces are still analyzed."""

    path: str
    reason: str


GZIP_MAGIC = b"\x1f\x8b"
BLOCK_BYTES = 4 << 20
TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = frozenset({"run.json", "key_averages.json", "key_averages.json.gz"})
SNIFF_BYTES = 1 << 20


def looks_like_trace(f: Path, sniff_bytes: int = SNIFF_BYTES) -> bool:
    """A trace by its name (``*.pt.trace.json[.gz]``, ``*.pftrace[.gz]``) or by a
    ``traceEvents`` key in the first ``sniff_bytes`` of its content; a truncated ``.gz``
    is read as far as it goes. Never one of profkit's own files that sit beside traces."""
    name = f.name
    if is_pftrace(f):
        return True
    if not name.endswith(TRACE_SUFFIXES) or name in NOT_TRACES:
        return False
    if name.endswith((".pt.trace.json", ".pt.trace.json.gz")):
        return True
    return b'"traceEvents"' in head(f, sniff_bytes)


def iter_blocks(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The file's decompressed content in blocks of about ``block_bytes``.

    Gzip is decompressed as it streams (several concatenated members are allowed),
    so the whole decompressed text is never held at once.
    """
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror or e})") from None
    with fh:
        first = _read(fh, path, block_bytes)
        if not first:
            raise TraceError(f"{path}: empty file")
        if first[:2] != GZIP_MAGIC:
            while first:
                yield first
                first = _read(fh, path, block_bytes)
            return
        # inflated here, not in a background thread: measured, a thread made neither a
        # 10 MB nor a 50 MB trace load sooner and cost 5 to 10 % more CPU time
        yield from _gunzip(fh, path, first, block_bytes)


def _read(fh: Any, path: Path, n: int) -> bytes:
    try:
        return fh.read(n)
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror or e})") from None


def _gunzip(fh: Any, path: Path, first: bytes, block_bytes: int) -> Iterator[bytes]:
    d = inflating.decompressobj(inflating.MAX_WBITS | 16)
    data = first
    produced = False
    while True:
        try:
            # bound the output per call: a small gzip can expand a lot
            out = d.decompress(data, block_bytes)
            while out:
                produced = True
                yield out
                out = d.decompress(d.unconsumed_tail, block_bytes)
        except inflating.error as e:
            raise TraceError(f"{path}: corrupt gzip data ({e})") from None
        if d.eof:
            rest = d.unused_data
            if rest.strip(b"\x00"):
                if rest[:2] != GZIP_MAGIC:
                    return  # trailing garbage after the last member is ignored, like gzip(1)
                d = inflating.decompressobj(inflating.MAX_WBITS | 16)
                data = rest
                continue
            data = _read(fh, path, block_bytes)
            if not data:
                break
            if data[:2] != GZIP_MAGIC:
                return
            d = inflating.decompressobj(inflating.MAX_WBITS | 16)
            continue
        data = _read(fh, path, block_bytes)
        if not data:
            raise TraceError(f"{path}: truncated gzip file (compressed data ends early)")
    if not produced:
        raise TraceError(f"{path}: empty file (gzip with no content)")


def content_size(path: Path) -> int | None:
    """The decompressed size: the file's, or what a gzip trailer says (None if unsure)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            if fh.read(2) != GZIP_MAGIC:
                return size
            fh.seek(-4, 2)
            stated = int.from_bytes(fh.read(4), "little")  # mod 2**32
    except OSError:
        return None
    return stated if stated >= size else None


def head(path: Path, n: int) -> bytes:
    """The first ``n`` bytes of a file's (decompressed) content, as far as they can be read
    (a truncated or corrupt ``.gz`` gives what decompresses before the damage)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(n)
    except OSError:
        return b""
    if raw[:2] != GZIP_MAGIC:
        return raw
    try:
        return inflating.decompressobj(wbits=31).decompress(raw, n)
    except inflating.error:
        return b""


def read_all(path: Path) -> bytes:
    """The whole decompressed content."""
    return b"".join(iter_blocks(path))
