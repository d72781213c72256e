"""Fast, bounded-memory loading: trace JSON decoded with msgspec into typed structs.

A trace whose content is at most ``WHOLE_BYTES`` (most traces) is decoded at once
into a :class:`Document`. A larger one has its ``traceEvents`` array cut at candidate
boundaries between events (``}, {``) into pieces of a few MB, and each piece is
decoded as ``[ piece ]``. Either way the structs declare only the fields the table
needs (msgspec skips the rest in C). A piece decodes iff it ends at a true boundary:
it starts at one, so everything before its end is a valid prefix of the array. When
it does not decode, the piece grows. Pieces with odd field types, or values numpy
cannot hold, go through the per-event rules of :mod:`normalize` instead; all paths
give the same rows. Memory stays at a few pieces plus the columns; gzip is
decompressed as it streams. :mod:`profiler_kit.trace.parallel` decodes a large trace
in parts on several cores with the same loader.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, Union

import msgspec
import numpy as np

from profiler_kit.errors import TraceError
from profiler_kit.trace.build import (
    EVENT_COLUMNS,
    build_table,
    list_columns,
    list_memory,
    meta_from_header,
)
from profiler_kit.trace.normalize import (
    GPU_CAT_VALUES,
    INT32_MAX,
    INT32_MIN,
    INT64_MIN,
    Accumulator,
    category_code,
    string_id,
)
from profiler_kit.trace.source import (
    decode_json,
    iter_blocks,
    json_problem,
    read_small,
    utf8_replaced,
)
from profiler_kit.trace.table import EventTable

DEFAULT_CHUNK_BYTES = 4 << 20
WHOLE_BYTES = 64 << 20  # content up to this size is decoded in one piece
BATCH_EVENTS = 16384  # columns are built this many events at a time (cache-friendly)
HEADER_LIMIT = 64 << 20  # the event list starts within this many bytes in any real trace
BOUNDARY = re.compile(rb"\}\s*,\s*\{")
EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[\s*')
ERROR_AT = re.compile(r"\(byte (\d+)\)")
EXACT_FLOAT = 2.0**53  # floats below this hold every integer exactly
GPU_CODES = np.array(sorted(GPU_CAT_VALUES), dtype=np.int8)
ABSENT = INT64_MIN  # stands for a field the event does not have


class Args(msgspec.Struct, gc=False):
    """The ``args`` of a complete event that the table uses; others are skipped in C.

    Absent fields take sentinels so columns need no per-event Python (so a literal
    -2**63 in these fields reads as absent); an explicit ``null`` fails validation and
    sends the piece to the per-event path.
    """

    device: int = ABSENT
    stream: int | str = ABSENT  # HIP runtime events write "0x0"
    correlation: int = -1
    external_id: int = msgspec.field(default=ABSENT, name="External id")
    external_id_legacy: int = msgspec.field(default=-1, name="external id")


class OtherArgs(msgspec.Struct, gc=False):
    """The ``args`` of metadata and ``[memory]`` events (checked one by one later)."""

    label: Any = msgspec.field(default=None, name="name")
    nbytes: Any = msgspec.field(default=None, name="Bytes")
    total_allocated: Any = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Any = msgspec.field(default=None, name="Total Reserved")
    device_type: Any = msgspec.field(default=None, name="Device Type")
    device_id: Any = msgspec.field(default=None, name="Device Id")


class Complete(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None  # JSON integers arrive as floats; exact below 2**53
    dur: float | None = None
    args: Args = msgspec.field(default_factory=Args)


class Instant(msgspec.Struct, tag_field="ph", tag="i", gc=False):
    name: str | None = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    args: OtherArgs | None = None


class InstantUpper(Instant, tag="I"):
    pass


class Metadata(Instant, tag="M"):
    pass


class FlowStart(msgspec.Struct, tag_field="ph", tag="s", gc=False):
    pass


class FlowEnd(FlowStart, tag="f"):
    pass


class FlowStep(FlowStart, tag="t"):
    pass


# Chrome trace phases the table does not use: decoded without fields, counted as skipped
# (as the per-event rules do), so a counter or an async span does not send a piece there
UNSUPPORTED_PHASES = ("B", "E", "C", "b", "n", "e", "S", "T", "p", "F", "P", "N", "O", "D",
                      "V", "v", "R", "c", "(", ")")
_UNSUPPORTED = {msgspec.defstruct(f"Phase{i}", [], tag_field="ph", tag=ph, gc=False): ph
                for i, ph in enumerate(UNSUPPORTED_PHASES)}
Event = Union[  # noqa: UP007 - built from a tuple of types
    (Complete, Instant, InstantUpper, Metadata, FlowStart, FlowEnd, FlowStep, *_UNSUPPORTED)]
TYPED = msgspec.json.Decoder(list[Event])  # other phases: ValidationError, per-event path


class Document(msgspec.Struct, gc=False):
    """A whole trace: its events, and the top-level keys :func:`meta_from_header` reads."""

    events: list[Event] | None = msgspec.field(default=None, name="traceEvents")
    schema_version: Any = msgspec.field(default=None, name="schemaVersion")
    device_properties: Any = msgspec.field(default=None, name="deviceProperties")
    distributed_info: Any = msgspec.field(default=None, name="distributedInfo")
    base_time_ns: Any = msgspec.field(default=None, name="baseTimeNanoseconds")

    def header(self) -> dict[str, Any]:
        return {"schemaVersion": self.schema_version, "deviceProperties": self.device_properties,
                "distributedInfo": self.distributed_info,
                "baseTimeNanoseconds": self.base_time_ns}


DOCUMENT = msgspec.json.Decoder(Document)
UNTYPED = msgspec.json.Decoder()
WHITESPACE = frozenset(b" \t\r\n")


class Irregular(Exception):
    """A piece the column path cannot take as it is; the per-event path takes it."""


class Misaligned(Exception):
    """A part of a trace loaded in parallel did not end at the boundary where the next
    part starts (a false boundary, or broken data there): load the file in one pass."""


class Split(Protocol):
    """The first part's end, and the other parts (decoded elsewhere, in file order)."""

    stop: int

    def parts(self) -> list[Part]: ...


class Part(msgspec.Struct):
    """What one worker decoded of a trace: the events between two boundaries."""

    chunks: list[dict[str, np.ndarray]]
    names: list[str]  # the part's interned names: its name column indexes this
    memory: dict[str, list[int]]
    skipped: dict[str, int]
    normalized: dict[str, int]
    process_names: dict[int, str]
    thread_names: dict[tuple[int, int], str]
    suffix: bytes | None  # the bytes after the event list (the last part only)


def load(path: Path, *, chunk_bytes: int | None = None, lenient: bool = False,
         jobs: int | None = None) -> EventTable:
    """Load ``path``; ``lenient`` sends every piece through the per-event path.

    Without ``chunk_bytes``, content up to ``WHOLE_BYTES`` is decoded whole and larger
    content in pieces of ``DEFAULT_CHUNK_BYTES``; with it, always in pieces of that size.
    Content larger than ``WHOLE_BYTES`` is decoded in ``jobs`` parts at once, in forked
    workers (default: one per core where this process may fork, see
    :mod:`profiler_kit.forking`; ask for more than one only from a single-threaded process).
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived objects, no cycles: collections only cost time
    try:
        whole = chunk_bytes is None and not lenient
        loader = _Loader(path, chunk_bytes or DEFAULT_CHUNK_BYTES, lenient, whole)
        if not lenient and jobs != 1:
            from profiler_kit.trace.parallel import load_in_parts

            table = load_in_parts(loader, jobs)
            if table is not None:
                return table
            loader = _Loader(path, chunk_bytes or DEFAULT_CHUNK_BYTES, lenient, whole)
        return loader.run()
    except (msgspec.DecodeError, RecursionError) as e:  # a safety net: never a traceback
        raise TraceError(f"{path}: {json_problem(e)}") from None
    finally:
        if gc_was_enabled:
            gc.enable()


class _Buffer:
    """Decompressed bytes not yet consumed (from ``pos``), refilled from the block stream.

    One byte before ``pos`` is always kept, so a piece can be framed as ``[ ... ]`` in
    place (see ``_Loader._events``).
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


class _Loader:
    def __init__(self, path: Path, chunk_bytes: int, lenient: bool, whole: bool) -> None:
        self.path = path
        self.chunk_bytes = max(int(chunk_bytes), 1)
        self.lenient = lenient
        self.whole = whole
        self.acc = Accumulator()
        self.chunks: list[dict[str, np.ndarray]] = []
        self.cat_codes: dict[Any, int] = {}
        self.cat_notes: dict[Any, str] = {}

    def run(self, split: Split | None = None) -> EventTable:
        """The table; with ``split``, this loader decodes the first part only and the
        workers of ``split`` the others (:class:`Misaligned` if they do not join up)."""
        data = read_small(self.path, WHOLE_BYTES) if self.whole and split is None else None
        if data is not None:
            table = self._document(data)
            if table is not None:
                return table
            blocks: Iterator[bytes] = iter((data,))  # the same bytes, piece by piece
        else:
            blocks = iter_blocks(self.path, self._block_bytes())
        buf = _Buffer(blocks)
        buf.more()
        found = EVENTS_KEY.search(buf.data)
        while found is None and len(buf.data) < HEADER_LIMIT and buf.more():
            found = EVENTS_KEY.search(buf.data)
        if found is None:
            if split is not None:
                raise Misaligned
            return self._whole()
        header = bytes(buf.data[: found.start()])
        buf.pos = found.end()
        if split is None:
            suffix = self._events(buf)
        else:
            if buf.dropped + buf.pos >= split.stop:
                raise Misaligned  # the first part would be empty
            self._events(buf, split.stop)
            suffix = self._merge(split.parts())
        try:
            doc = decode_json(UNTYPED, header + b'"traceEvents": null' + suffix)
        except (msgspec.DecodeError, msgspec.ValidationError):
            doc = None
        if not isinstance(doc, dict):
            # "traceEvents" was not the top-level key, or the file is broken: decode it whole
            return self._whole()
        return build_table(meta_from_header(self.path, doc), self.acc, self._columns(),
                           list_memory(self.acc))

    def run_part(self, start: int, stop: int | None) -> Part:
        """Decode from the first candidate boundary at or after ``start`` to the one at or
        after ``stop`` (the end of the event list when None)."""
        buf = _Buffer(iter_blocks(self.path, self._block_bytes()))
        buf.skip_to(start)
        found = buf.boundary_from(start)
        if found is None:
            raise Misaligned
        buf.pos = found.end() - 1
        suffix = self._events(buf, stop)
        acc = self.acc
        return Part(chunks=self.chunks, names=list(acc.names), memory=acc.mem,
                    skipped=dict(acc.skipped), normalized=dict(acc.normalized),
                    process_names=acc.process_names, thread_names=acc.thread_names,
                    suffix=suffix)

    def _merge(self, parts: list[Part]) -> bytes:
        """Append the other parts' rows in file order; the bytes after the event list."""
        acc = self.acc
        intern = acc.names
        for part in parts:
            # evaluated before setdefault inserts: a new name gets the next id
            remap = np.fromiter((intern.setdefault(n, len(intern)) for n in part.names),
                                dtype=np.int32, count=len(part.names))
            for chunk in part.chunks:
                chunk["name"] = remap[chunk["name"]]
                self.chunks.append(chunk)
            for key, values in part.memory.items():
                acc.mem[key].extend(values)
            acc.skipped.update(part.skipped)
            acc.normalized.update(part.normalized)
            acc.process_names.update(part.process_names)
            acc.thread_names.update(part.thread_names)
        if not parts or parts[-1].suffix is None:
            raise Misaligned
        return parts[-1].suffix

    def _block_bytes(self) -> int:
        return min(max(self.chunk_bytes, 1 << 16), 16 << 20)

    def _document(self, data: bytes) -> EventTable | None:
        """Decode the whole document at once; None when a piece needs the rules below.

        Anything odd (a value of an unexpected type, a phase the structs do not know,
        broken JSON) leaves no trace here and goes the piecewise way, which handles it
        event by event or names the problem.
        """
        try:
            doc = decode_json(DOCUMENT, data)
            events = doc.events
            if events is None:
                return None
            for start in range(0, len(events), BATCH_EVENTS):
                self._columns_of(events[start:start + BATCH_EVENTS])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, Irregular):
            self.acc = Accumulator()
            self.chunks.clear()
            return None
        return build_table(meta_from_header(self.path, doc.header()), self.acc, self._columns(),
                           list_memory(self.acc))

    def _whole(self) -> EventTable:
        """Decode the file at once (raises the right TraceError for broken files)."""
        from profiler_kit.trace.loader import load_simple

        return load_simple(self.path)

    def _events(self, buf: _Buffer, stop: int | None = None) -> bytes | None:
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
                view.release()
                if saved is not None:
                    data[first], data[end] = saved
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
                with memoryview(b"[" + data[buf.pos:close + 1]) as tail:
                    self._decode(tail)
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
                    self._columns_of(events)
                    return
                except Irregular:
                    pass
        try:
            raw = decode_json(UNTYPED, piece)
        except msgspec.ValidationError:  # numbers beyond float range
            import json

            raw = json.loads(utf8_replaced(piece))
        add = self.acc.add
        for event in raw:
            add(event)
        self._flush_rows()

    def _flush_rows(self) -> None:
        """Move rows the per-event path made into a column chunk (keeping file order)."""
        acc = self.acc
        if acc.ts_ns:
            self.chunks.append(list_columns(acc))
            for key in EVENT_COLUMNS:
                getattr(acc, key).clear()

    def _columns(self) -> dict[str, np.ndarray]:
        if not self.chunks:
            return {k: np.empty(0, dtype=t) for k, t in EVENT_COLUMNS.items()}
        out = {}
        for key in EVENT_COLUMNS:
            out[key] = np.concatenate([c[key] for c in self.chunks])
            for c in self.chunks:
                del c[key]
        self.chunks.clear()
        return out

    def _columns_of(self, events: list[Any]) -> None:
        """The column path: whole columns at a time; Irregular when a value needs the rules."""
        x = [e for e in events if type(e) is Complete]
        others = []
        unsupported: dict[str, int] = {}
        if len(x) != len(events):
            kinds = set(map(type, events))
            if not ONE_BY_ONE.isdisjoint(kinds):
                others = [e for e in events if type(e) in ONE_BY_ONE]
            for kind in kinds & _UNSUPPORTED.keys():
                phase = _UNSUPPORTED[kind]
                unsupported[f"unsupported phase {phase!r}"] = sum(type(e) is kind for e in events)
        n = len(x)
        if not n:
            self._others(others)
            self.acc.skipped.update(unsupported)
            return
        names = [e.name for e in x]
        unique_names = set(names)
        if None in unique_names:
            raise Irregular
        ts_ns = us_column([e.ts for e in x], n)
        dur_ns = us_column([e.dur for e in x], n)
        if dur_ns.min() < 0:
            raise Irregular
        pid = id_column([e.pid for e in x], n)
        tid = id_column([e.tid for e in x], n)
        cat, notes = self._cat_column([e.cat for e in x])
        args = [e.args for e in x]
        corr = int_column([a.correlation for a in args], n)
        ext = int_column([a.external_id for a in args], n)
        absent = np.flatnonzero(ext == ABSENT)
        if len(absent):
            ext[absent] = int_column([args[i].external_id_legacy for i in absent.tolist()],
                                     len(absent))
        device = np.full(n, -1, dtype=np.int64)
        stream = np.full(n, -1, dtype=np.int64)
        gpu = np.flatnonzero(np.isin(cat, GPU_CODES))
        if len(gpu):
            gargs = [args[i] for i in gpu.tolist()]
            m = len(gargs)
            dev = int_column([a.device for a in gargs], m)
            streams = [a.stream for a in gargs]
            if set(map(type, streams)) != {int}:
                streams = [v if type(v) is int else ABSENT for v in streams]
            strm = int_column(streams, m)
            dev = np.where((dev < INT32_MIN) | (dev > INT32_MAX), pid[gpu], dev)
            dev[(dev < INT32_MIN) | (dev > INT32_MAX)] = -1
            device[gpu] = dev
            stream[gpu] = np.where(strm == ABSENT, tid[gpu], strm)
        # commit only now: an Irregular above leaves no trace of this piece
        self._others(others)
        self.acc.skipped.update(unsupported)
        for note, count in notes.items():
            self.acc.normalized[note] += count
        self.chunks.append({
            "cat": cat,
            "name": self._name_column(names, unique_names, n),
            "ts_ns": ts_ns,
            "dur_ns": dur_ns,
            "pid": pid,
            "tid": tid,
            "device": device.astype(np.int32),
            "stream": stream,
            "correlation": corr,
            "external_id": ext,
        })

    def _name_column(self, names: list[str], unique: set[str], n: int) -> np.ndarray:
        """Intern ids of ``names``, new names numbered in order of first appearance."""
        intern = self.acc.names
        if not intern.keys() >= unique:
            for name in dict.fromkeys(names):  # new names numbered in file order
                if name not in intern:
                    intern[name] = len(intern)
        return np.fromiter(map(intern.__getitem__, names), dtype=np.int32, count=n)

    def _cat_column(self, cats: list[Any]) -> tuple[np.ndarray, dict[str, int]]:
        """Cat codes, and the notes to count for odd categories."""
        codes, notes_of = self.cat_codes, self.cat_notes
        unique = set(cats)
        for raw in unique - codes.keys():
            code, note = category_code(raw)
            codes[raw] = code
            if note is not None:
                notes_of[raw] = note
        notes: dict[str, int] = {}
        for raw in notes_of.keys() & unique:
            notes[notes_of[raw]] = notes.get(notes_of[raw], 0) + cats.count(raw)
        return np.fromiter(map(codes.__getitem__, cats), dtype=np.int8, count=len(cats)), notes

    def _others(self, events: list[Any]) -> None:
        """Metadata and instant events, one by one, with the per-event path's rules."""
        acc = self.acc
        for e in events:
            a = e.args
            if type(e) is Metadata:
                acc.add_metadata(e.name, e.pid, e.tid, None if a is None else a.label)
            elif e.name == "[memory]":
                if a is None:
                    acc.skipped["memory event without args"] += 1
                else:
                    acc.add_memory(e.ts, e.tid, a.nbytes, a.total_allocated, a.total_reserved,
                                   a.device_type, a.device_id)


ONE_BY_ONE = frozenset({Instant, InstantUpper, Metadata})


def us_column(values: Iterable[Any], n: int) -> np.ndarray:
    """µs floats to int64 ns with :func:`normalize.us_to_ns`'s rule; Irregular if it can't."""
    a = np.fromiter(values, dtype=np.float64, count=n)  # None -> NaN, caught below
    if n and not (np.abs(a).max() < EXACT_FLOAT):
        raise Irregular  # missing, or integers floats may have rounded
    whole = np.floor(a)
    return whole.astype(np.int64) * 1000 + np.rint((a - whole) * 1000).astype(np.int64)


def id_column(values: list[Any], n: int) -> np.ndarray:
    """pid/tid values (int, or strings mapped to stable negative ints)."""
    kinds = set(map(type, values))
    if kinds == {int}:
        return int_column(values, n)
    if kinds <= {int, str}:
        return int_column([v if type(v) is int else string_id(v) for v in values], n)
    raise Irregular


def int_column(values: Iterable[Any], n: int) -> np.ndarray:
    """Python ints (as msgspec typed them) to int64; Irregular for None or beyond 64 bits."""
    try:
        return np.fromiter(values, dtype=np.int64, count=n)
    except (OverflowError, TypeError):
        raise Irregular from None
