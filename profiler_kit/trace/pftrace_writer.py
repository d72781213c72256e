"""Chrome trace events written as a Perfetto-native trace (``.pftrace``).

For ``profkit merge -o job.pftrace``: Perfetto opens a protobuf trace of a large job
faster than its JSON, and draws overlapping work on one row without guessing. The
events map onto Perfetto's ``TrackEvent`` model:

- a thread (pid, tid) is a track under its process, named by the trace's metadata;
  a complete event is a begin/end pair on it. Slices on one track must nest, so a slice
  that overlaps another without nesting in it (a GPU stream's kernels a few hundred ns
  apart on CUPTI's clock, a call straddling an op's end) goes to a second lane of the
  thread, and so on: nothing is cut or moved;
- an instant event is an instant on its thread; a counter event a value on a counter
  track of its process, one per series;
- flows (``s``/``t``/``f``) become the flow ids of the slices they start or end in.

The result is gzip-compressed, as PyTorch writes its own; :mod:`.pftrace` reads it back.
"""

from __future__ import annotations

import bisect
import gzip
import json
import zlib
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from profiler_kit.trace.normalize import counter_series, us_to_ns
from profiler_kit.trace.pftrace import schema

SEQUENCE = 1
BOOTTIME = 6  # the clock the timestamps are on (Perfetto's default)
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4


def to_pftrace(events: Iterable[Any], session: str = "", compress: bool = True) -> bytes:
    """The events as a Perfetto ``Trace`` (gzip-compressed unless ``compress`` is False);
    ``session``: a name the trace's config records in its first packet (where a reader
    that sniffs the first bytes finds it)."""
    pb = schema()
    writer = _Writer(pb)
    for e in events:
        if isinstance(e, dict):
            writer.add(e)
    data = writer.trace(session).SerializeToString()
    return gzip.compress(data, compresslevel=6, mtime=0) if compress else data


class _Writer:
    def __init__(self, pb: Any) -> None:
        self.pb = pb
        self.process_names: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.slices: dict[tuple[Any, Any], list[tuple[int, int, str, str, dict]]] = \
            defaultdict(list)
        self.instants: list[tuple[Any, Any, int, str, str, dict]] = []
        self.counters: list[tuple[Any, str, int, float]] = []
        self.flows: dict[tuple[Any, Any, int], list[tuple[str, int]]] = defaultdict(list)
        self.uuids: dict[Any, int] = {}
        self.flow_ids: dict[str, int] = {}  # a flow's id in the trace -> its number here
        self.shift = 0  # added to every timestamp written (see ``trace``)
        self.flow_of_slice: dict[tuple[Any, Any, int, int], list[tuple[str, int]]] = {}

    def add(self, e: dict[str, Any]) -> None:
        ph = e.get("ph")
        ts = us_to_ns(e.get("ts")) if "ts" in e else 0
        if type(ts) is not int:
            return
        pid, tid = _key(e.get("pid")), _key(e.get("tid"))
        name = str(e.get("name", ""))
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if ph == "X":
            dur = us_to_ns(e.get("dur", 0))
            if type(dur) is int and dur >= 0:
                self.slices[(pid, tid)].append((ts, ts + dur, name, str(e.get("cat", "")),
                                                args))
        elif ph in ("i", "I"):
            self.instants.append((pid, tid, ts, name, str(e.get("cat", "")), args))
        elif ph == "C":
            for key, value in args.items():
                if type(value) in (int, float):
                    self.counters.append((pid, counter_series(name, key, len(args)), ts,
                                          float(value)))
        elif ph == "M":
            label = args.get("name")
            if isinstance(label, str):
                if name == "process_name":
                    self.process_names[pid] = label
                elif name == "thread_name":
                    self.thread_names[(pid, tid)] = label
        elif ph in ("s", "t", "f") and "id" in e:
            flow = self.flow_ids.setdefault(str(e["id"]), len(self.flow_ids) + 1)
            self.flows[(pid, tid, ts)].append((ph, flow))

    def _uuid(self, key: Any) -> int:
        uuid = self.uuids.get(key)
        if uuid is None:
            uuid = self.uuids[key] = len(self.uuids) + 1
        return uuid

    def trace(self, session: str) -> Any:
        pb = self.pb
        trace = pb.Trace()
        packets = trace.packet
        if session:
            packets.add().trace_config.unique_session_name = session
        # Perfetto's timestamps are unsigned: a trace whose times go below 0 (a rank's
        # clock shifted back) is written shifted up, the clock snapshot saying by how much
        times = [start for rows in self.slices.values() for start, *_ in rows]
        times += [ts for _, _, ts, *_ in self.instants] + [ts for _, _, ts, _ in self.counters]
        self.shift = max(0, -min(times, default=0))
        first = packets.add()
        first.trusted_packet_sequence_id = SEQUENCE
        first.sequence_flags = 1  # incremental state cleared: a fresh sequence
        first.timestamp = self.shift
        first.clock_snapshot.clocks.add(clock_id=BOOTTIME, timestamp=self.shift)
        lanes = {key: _lanes(rows) for key, rows in self.slices.items()}
        self.flow_of_slice = self._bind_flows(lanes)
        threads = set(lanes) | {(pid, tid) for pid, tid, *_ in self.instants}
        processes = {pid for pid, _ in threads} | {pid for pid, *_ in self.counters}
        for pid in sorted(processes, key=str):
            d = packets.add().track_descriptor
            d.uuid = self._uuid(("p", pid))
            d.process.pid = _int(pid)
            d.process.process_name = self.process_names.get(pid, str(pid))
        for pid, tid in sorted(threads, key=str):
            name = self.thread_names.get((pid, tid), str(tid))
            for lane in range(max(len(lanes.get((pid, tid), [])), 1)):
                d = packets.add().track_descriptor
                d.uuid = self._uuid(("t", pid, tid, lane))
                d.parent_uuid = self._uuid(("p", pid))
                d.thread.pid = _int(pid)
                d.thread.tid = _int(tid)
                d.thread.thread_name = name if not lane else f"{name} ({lane + 1})"
        for pid, series in sorted({(pid, s) for pid, s, *_ in self.counters}, key=str):
            d = packets.add().track_descriptor
            d.uuid = self._uuid(("c", pid, series))
            d.parent_uuid = self._uuid(("p", pid))
            d.name = series
            d.counter.SetInParent()
        for (pid, tid), thread_lanes in lanes.items():
            for lane, rows in enumerate(thread_lanes):
                self._slices(packets, self._uuid(("t", pid, tid, lane)), (pid, tid, lane),
                             rows)
        for pid, tid, ts, name, cat, args in self.instants:
            self._event(packets, ts, self._uuid(("t", pid, tid, 0)), INSTANT, name, cat, args)
        for pid, series, ts, value in self.counters:
            p = packets.add()
            p.timestamp = ts + self.shift
            p.trusted_packet_sequence_id = SEQUENCE
            p.track_event.type = COUNTER
            p.track_event.track_uuid = self._uuid(("c", pid, series))
            p.track_event.double_counter_value = value
        return trace

    def _bind_flows(self, lanes: dict[tuple[Any, Any], list[list]]
                    ) -> dict[tuple[Any, Any, int, int], list[tuple[str, int]]]:
        """Each flow event on the slice of its thread it falls in (the innermost: the
        latest to begin that has not ended), as a viewer binds a JSON flow."""
        bound: dict[tuple[Any, Any, int, int], list[tuple[str, int]]] = defaultdict(list)
        for (pid, tid), thread_lanes in lanes.items():
            spans = sorted((row[0], row[1], lane, i) for lane, rows in enumerate(thread_lanes)
                           for i, row in enumerate(rows))
            starts = [s[0] for s in spans]
            for (fpid, ftid, ts), flows in self.flows.items():
                if (fpid, ftid) != (pid, tid):
                    continue
                k = bisect.bisect_right(starts, ts) - 1
                while k >= 0 and spans[k][1] < ts:
                    k -= 1
                if k >= 0:
                    bound[(pid, tid, spans[k][2], spans[k][3])].extend(flows)
        return bound

    def _slices(self, packets: Any, uuid: int, lane: tuple[Any, Any, int],
                rows: list[tuple[int, int, str, str, dict]]) -> None:
        """Begins and ends in time order (ends first at a tie, a slice's own end after
        its begin), each begin with the flows bound to it."""
        marks = []
        for i, (start, end, *_) in enumerate(rows):
            marks.append((start, 1, i))
            marks.append((end, 0 if end > start else 2, i))
        marks.sort()
        for ts, kind, i in marks:
            if kind == 1:
                _, _, name, cat, args = rows[i]
                te = self._event(packets, ts, uuid, BEGIN, name, cat, args)
                for ph, flow in self.flow_of_slice.get((*lane, i), ()):
                    (te.terminating_flow_ids if ph == "f" else te.flow_ids).append(flow)
            else:
                p = packets.add()
                p.timestamp = ts + self.shift
                p.trusted_packet_sequence_id = SEQUENCE
                p.track_event.type = END
                p.track_event.track_uuid = uuid

    def _event(self, packets: Any, ts: int, uuid: int, kind: int, name: str, cat: str,
               args: dict) -> Any:
        p = packets.add()
        p.timestamp = ts + self.shift
        p.trusted_packet_sequence_id = SEQUENCE
        te = p.track_event
        te.type = kind
        te.track_uuid = uuid
        te.name = name
        if cat:
            te.categories.append(cat)
        for key, value in args.items():
            _annotate(te.debug_annotations.add(), str(key), value)
        return te


def _lanes(rows: list[tuple[int, int, str, str, dict]]) -> list[list]:
    """The slices of one thread in lanes where each nests (by start, longest first): a
    slice joins the first lane whose open slices it nests in or follows."""
    lanes: list[tuple[list, list[int]]] = []  # (slices, the ends of the open ones)
    for row in sorted(rows, key=lambda r: (r[0], -r[1])):
        start, end = row[0], row[1]
        for slices, open_ends in lanes:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if not open_ends or end <= open_ends[-1]:
                slices.append(row)
                open_ends.append(end)
                break
        else:
            lanes.append(([row], [end]))
    return [slices for slices, _ in lanes]


def _annotate(a: Any, name: str, value: Any) -> None:
    a.name = name
    if isinstance(value, bool):
        a.bool_value = value
    elif isinstance(value, int) and -2**63 <= value < 2**63:
        a.int_value = value
    elif isinstance(value, float):
        a.double_value = value
    elif isinstance(value, str):
        a.string_value = value
    else:
        a.legacy_json_value = json.dumps(value)


def _key(value: Any) -> Any:
    return value if isinstance(value, (int, str)) else str(value)


def _int(value: Any) -> int:
    """A pid or tid as Perfetto's int32 fields hold it: itself where it fits, a name a
    stable number."""
    if isinstance(value, int):
        return value if -2**31 <= value < 2**31 else value & 0x7FFFFFFF
    return (zlib.crc32(str(value).encode()) & 0x3FFFFFFF) | 0x40000000
