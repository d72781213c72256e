"""Event columns built from decoded events, a batch at a time.

Typed events (:mod:`profiler_kit.trace.schema`) become whole numpy columns with no
per-event Python; a batch with a value numpy cannot hold, or one the typed decode
rejected, goes through the per-event rules of :mod:`profiler_kit.trace.normalize`
instead. Both give the same rows, appended in file order as column chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from profiler_kit.trace.build import (
    EVENT_COLUMNS,
    build_table,
    list_columns,
    list_memory,
    meta_from_header,
)
from profiler_kit.trace.comms import CommEvent, args_from_raw, is_comm_name
from profiler_kit.trace.normalize import (
    CPU_OP_VALUE,
    GPU_CAT_VALUES,
    INT32_MAX,
    INT32_MIN,
    KERNEL_VALUE,
    PYTHON_FUNCTION_VALUE,
    SHAPES_NOT_KEPT,
    SYNC_VALUE,
    Accumulator,
    accumulated_launches,
    category_code,
    event_wait,
    input_type_key,
    join_launches,
    launch_columns,
    string_id,
)
from profiler_kit.trace.schema import (
    ABSENT,
    DOCUMENT,
    ONE_BY_ONE,
    PHASE_OF_UNSUPPORTED,
    UNTYPED,
    Args,
    Complete,
    CounterEvent,
    Metadata,
    decode_json,
)
from profiler_kit.trace.table import EventTable, RecordedInputs

BATCH_EVENTS = 16384  # columns are built this many events at a time (cache-friendly)
EXACT_FLOAT = 2.0**53  # floats below this hold every integer exactly
GPU_CODES = np.array(sorted(GPU_CAT_VALUES), dtype=np.int8)


class Irregular(Exception):
    """A batch the column path cannot take as it is; the per-event rules take it."""


class Part(msgspec.Struct):
    """What one worker decoded of a trace: the events between two boundaries."""

    chunks: list[dict[str, Any]]  # EVENT_COLUMNS arrays, and "inputs": (row in chunk, inputs)
    names: list[str]  # the part's interned names: its name column indexes this
    memory: dict[str, list[int]]
    skipped: dict[str, int]
    normalized: dict[str, int]
    process_names: dict[int, str]
    thread_names: dict[tuple[int, int], str]
    comms: list[CommEvent]
    counters: list[tuple[int, int, str, float]]
    suffix: bytes | None  # the bytes after the event list (the last part only)


class ColumnBuilder:
    """Rows of one trace, as column chunks in file order, and what the table needs
    besides (names, memory events, skipped and normalized counts)."""

    def __init__(self) -> None:
        self.acc = Accumulator()
        self.chunks: list[dict[str, Any]] = []
        self.cat_codes: dict[Any, int] = {}
        self.cat_notes: dict[Any, str] = {}
        self.input_type_ids: dict[bytes, int] = {}  # an "Input type" text's interned key

    def table(self, path: Path, header: Mapping[str, Any]) -> EventTable:
        """The table of everything added, with the metadata from the trace's top-level keys."""
        columns, inputs, waits, launches = self.columns()
        return build_table(meta_from_header(path, header), self.acc, columns,
                           list_memory(self.acc), inputs, waits, launches)

    def columns(self) -> tuple[dict[str, np.ndarray], dict[int, RecordedInputs],
                               dict[int, tuple[int, int]], dict[str, np.ndarray]]:
        """The chunks joined into whole columns, and the recorded inputs, event waits and
        kernel launches by row (file order); the chunks are consumed."""
        if not self.chunks:
            return ({k: np.empty(0, dtype=t) for k, t in EVENT_COLUMNS.items()}, {}, {},
                    join_launches([]))
        inputs: dict[int, RecordedInputs] = {}
        waits: dict[int, tuple[int, int]] = {}
        launches: list[tuple[int, dict[str, np.ndarray]]] = []
        offset = 0
        for c in self.chunks:
            for row, value in c.pop("inputs", ()):
                inputs[offset + row] = value
            for row, wait in c.pop("waits", ()):
                waits[offset + row] = wait
            launch = c.pop("launches", None)
            if launch is not None:
                launches.append((offset, launch))
            offset += len(c["ts_ns"])
        out = {}
        for key in EVENT_COLUMNS:
            out[key] = np.concatenate([c[key] for c in self.chunks])
            for c in self.chunks:
                del c[key]
        self.chunks.clear()
        return out, inputs, waits, join_launches(launches)

    def add_untyped(self, events: Iterable[Any]) -> None:
        """Plain decoded events, one by one with the per-event rules."""
        add = self.acc.add
        for event in events:
            add(event)
        acc = self.acc
        if acc.ts_ns:  # move the rows into a column chunk, keeping file order
            chunk: dict[str, Any] = list_columns(acc)
            if acc.inputs:
                chunk["inputs"] = acc.inputs
                acc.inputs = []
            if acc.event_waits:
                chunk["waits"] = acc.event_waits
                acc.event_waits = []
            if acc.launches:
                chunk["launches"] = accumulated_launches(acc.launches)
                acc.launches = []
            self.chunks.append(chunk)
            for key in EVENT_COLUMNS:
                getattr(acc, key).clear()

    def add_typed(self, events: list[Any]) -> None:
        """Typed events, whole columns at a time; Irregular (adding nothing) when a value
        needs the per-event rules."""
        x = [e for e in events if type(e) is Complete]
        others = []
        unsupported: dict[str, int] = {}
        if len(x) != len(events):
            kinds = set(map(type, events))
            if not ONE_BY_ONE.isdisjoint(kinds):
                others = [e for e in events if type(e) in ONE_BY_ONE]
            for kind in kinds & PHASE_OF_UNSUPPORTED.keys():
                phase = PHASE_OF_UNSUPPORTED[kind]
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
        input_type = self._input_type_column(args, n)
        seq_nr, fwd_tid, call_from = self._code_columns(args, cat, n)
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
        inputs = recorded_inputs(args, cat, names)
        waits = event_waits(args, cat)
        launches = kernel_launches(args, cat)
        # commit only now: an Irregular above leaves no trace of this batch
        self._others(others)
        self.acc.skipped.update(unsupported)
        for note, count in notes.items():
            self.acc.normalized[note] += count
        self._comms(names, args, unique_names, cat, ts_ns, dur_ns, pid, tid, device, stream,
                    corr, ext)
        chunk: dict[str, Any] = {
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
            "input_type": input_type,
            "seq_nr": seq_nr,
            "fwd_tid": fwd_tid,
            "call_from": call_from,
        }
        if inputs:
            chunk["inputs"] = inputs
        if waits:
            chunk["waits"] = waits
        if launches is not None:
            chunk["launches"] = launches
        self.chunks.append(chunk)

    def _code_columns(self, args: list[Args], cat: np.ndarray, n: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """autograd's sequence number and forward thread id of the cpu_op rows, and the
        interned ``CallFrom`` of the python_function rows (-1 where absent), as the
        per-event rules make them."""
        seq = np.full(n, -1, dtype=np.int64)
        fwd = np.full(n, -1, dtype=np.int32)
        call = np.full(n, -1, dtype=np.int32)
        ops = np.flatnonzero(cat == CPU_OP_VALUE)
        if len(ops):
            op_args = [args[i] for i in ops.tolist()]
            s = int_column([a.sequence_number for a in op_args], len(ops))
            f = int_column([a.fwd_thread_id for a in op_args], len(ops))
            seq[ops] = np.where(s < 0, -1, s)
            fwd[ops] = np.where((f < 0) | (f > INT32_MAX), -1, f)
        frames = np.flatnonzero(cat == PYTHON_FUNCTION_VALUE)
        if len(frames):
            intern = self.acc.intern
            call[frames] = [intern(w) if (w := args[i].call_from) else -1
                            for i in frames.tolist()]
        return seq, fwd, call

    def _input_type_column(self, args: list[Args], n: int) -> np.ndarray:
        """Interned ``Input type`` strings (-1 where absent), as the per-event rules make them."""
        out = np.full(n, -1, dtype=np.int32)
        present = [(i, r) for i, a in enumerate(args) if (r := a.input_type)]  # raw JSON
        if present:
            out[[i for i, _ in present]] = [self._input_type_id(bytes(r)) for _, r in present]
        return out

    def _input_type_id(self, text: bytes) -> int:
        """The interned key of one ``Input type`` JSON text (-1: not a list), each distinct
        text decoded once (ops repeat a few of them thousands of times)."""
        try:
            return self.input_type_ids[text]
        except KeyError:
            types = decode_json(UNTYPED, text)
            found = self.input_type_ids[text] = \
                self.acc.intern(input_type_key(types)) if type(types) is list else -1
            return found

    def part(self, suffix: bytes | None) -> Part:
        """Everything added, to be sent to the process that merges the parts."""
        acc = self.acc
        return Part(chunks=self.chunks, names=list(acc.names), memory=acc.mem,
                    skipped=dict(acc.skipped), normalized=dict(acc.normalized),
                    process_names=acc.process_names, thread_names=acc.thread_names,
                    comms=acc.comms, counters=acc.counters, suffix=suffix)

    def merge(self, parts: list[Part]) -> None:
        """Append the parts' rows after these, in order (their names renumbered)."""
        acc = self.acc
        intern = acc.names
        for part in parts:
            # evaluated before setdefault inserts: a new name gets the next id
            remap = np.fromiter((intern.setdefault(n, len(intern)) for n in part.names),
                                dtype=np.int32, count=len(part.names))
            for chunk in part.chunks:
                chunk["name"] = remap[chunk["name"]]
                types = chunk["input_type"]
                chunk["input_type"] = np.where(types >= 0, remap[np.maximum(types, 0)], -1)
                calls = chunk["call_from"]
                chunk["call_from"] = np.where(calls >= 0, remap[np.maximum(calls, 0)], -1)
                self.chunks.append(chunk)
            for key, values in part.memory.items():
                acc.mem[key].extend(values)
            acc.skipped.update(part.skipped)
            acc.normalized.update(part.normalized)
            acc.process_names.update(part.process_names)
            acc.thread_names.update(part.thread_names)
            acc.comms.extend(part.comms)
            acc.counters.extend(part.counters)

    def _comms(self, names: list[str], args: list[Args], unique_names: set[str],
               *columns: np.ndarray) -> None:
        """Copy the communication events of a batch (see :mod:`profiler_kit.trace.comms`)."""
        comm_names = {n for n in unique_names if is_comm_name(n)}
        rows = [i for i, a in enumerate(args) if a.collective]  # Raw: empty when absent
        if comm_names:
            rows = sorted({*rows, *[i for i, n in enumerate(names) if n in comm_names]})
        if not rows:
            return
        cat, ts_ns, dur_ns, pid, tid, device, stream, corr, ext = columns
        append = self.acc.comms.append
        for i in rows:
            append(CommEvent(names[i], int(cat[i]), int(ts_ns[i]), int(dur_ns[i]), int(pid[i]),
                             int(tid[i]), int(device[i]), int(stream[i]), int(corr[i]),
                             int(ext[i]), args_from_raw(args[i])))

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
        """Metadata, instant and counter events, one by one, with the per-event path's rules."""
        acc = self.acc
        for e in events:
            a = e.args
            if type(e) is Metadata:
                acc.add_metadata(e.name, e.pid, e.tid, None if a is None else a.label)
            elif type(e) is CounterEvent:
                acc.add_counter(e.name, e.pid, e.ts, a)
            elif e.name == "[memory]":
                if a is None:
                    acc.skipped["memory event without args"] += 1
                else:
                    acc.add_memory(e.ts, e.tid, a.nbytes, a.total_allocated, a.total_reserved,
                                   a.device_type, a.device_id, a.addr)


def recorded_inputs(args: list[Args], cat: np.ndarray,
                    names: list[str]) -> list[tuple[int, RecordedInputs]]:
    """(row, inputs) of the cpu_op rows with "Input Dims" (PyTorch 1.8 wrote "Input dims";
    both are read) but those in SHAPES_NOT_KEPT:
    their raw JSON text, copied (a piece's buffer is reused); nothing but one scan of the
    ops for traces without. "Input type" is left to the ``input_type`` column."""
    ops = np.flatnonzero(cat == CPU_OP_VALUE).tolist()
    return [(i, RecordedInputs(bytes(a.input_dims or a.input_dims_legacy), b"",
                               bytes(a.input_strides), bytes(a.concrete_inputs)))
            for i in ops if ((a := args[i]).input_dims or a.input_dims_legacy)
            and names[i] not in SHAPES_NOT_KEPT]


def event_waits(args: list[Args], cat: np.ndarray) -> list[tuple[int, tuple[int, int]]]:
    """(row, (stream, cudaEventRecord correlation)) of the cuda_sync rows that wait on an
    event; one scan of the sync rows (few) for every trace."""
    return [(i, w) for i in np.flatnonzero(cat == SYNC_VALUE).tolist()
            if (a := args[i]).wait_on_stream != ABSENT
            and (w := event_wait(a.wait_on_stream, a.wait_on_record)) is not None]


def kernel_launches(args: list[Args], cat: np.ndarray) -> dict[str, np.ndarray] | None:
    """The launch columns of the kernel rows (None: no kernel in the batch)."""
    rows = np.flatnonzero(cat == KERNEL_VALUE)
    if not len(rows):
        return None
    k = [args[i] for i in rows.tolist()]
    try:
        return launch_columns(rows, [a.blocks_per_sm for a in k], [a.warps_per_sm for a in k],
                              [a.occupancy_pct for a in k], [a.registers for a in k],
                              [a.shared_memory for a in k], [a.grid for a in k],
                              [a.block for a in k], typed=True)
    except (OverflowError, TypeError, ValueError):
        raise Irregular from None


def document_table(path: Path, data: bytes) -> EventTable | None:
    """The table of a whole trace decoded at once; None when it needs the piecewise way.

    Anything odd (a value of an unexpected type, a phase the structs do not know, broken
    JSON) goes the piecewise way, which handles it event by event or names the problem.
    """
    builder = ColumnBuilder()
    try:
        doc = decode_json(DOCUMENT, data)
        events = doc.events
        if events is None:
            return None
        for start in range(0, len(events), BATCH_EVENTS):
            builder.add_typed(events[start:start + BATCH_EVENTS])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, Irregular):
        return None
    return builder.table(path, doc.header())


def us_column(values: Iterable[Any], n: int) -> np.ndarray:
    """µs floats to int64 ns with :func:`normalize.us_to_ns`'s rule; Irregular if it can't."""
    a = np.fromiter(values, dtype=np.float64, count=n)  # None -> NaN, caught below
    if n and not (np.abs(a).max() < EXACT_FLOAT):
        raise Irregular  # missing, or integers floats may have rounded
    whole = np.floor(a)
    return whole.astype(np.int64) * 1000 + np.rint((a - whole) * 1000).astype(np.int64)


def id_column(values: list[Any], n: int) -> np.ndarray:
    """pid/tid values (int, or strings mapped to stable negative ints)."""
    if n:
        a = np.array(values)  # int64 when every value is an int that fits, else no int dtype
        if a.dtype == np.int64:
            return a
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
