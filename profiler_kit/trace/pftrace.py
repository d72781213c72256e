"""Perfetto-native traces (``.pftrace``) as the Chrome trace events they stand for.

PyTorch's ``cupti_monitor`` backend writes a recording either as Chrome JSON or as a
Perfetto ``Trace`` protobuf (gzip-compressed). The two carry the same recording in
different shapes; this module reads the protobuf with the schema the ``perfetto``
package ships and gives back the events the JSON export of the same recording holds:

- CPU slices (``TrackEvent`` begin/end pairs on a thread's track) become complete
  events, their debug annotations their ``args`` (those the table reads: ``External id``,
  ``Input Dims``, ...); instants and counter tracks become instant and counter events;
- GPU work (``GpuRenderStageEvent``: kernels, memcpy, memset, GPU annotations) becomes
  ``kernel``/``gpu_memcpy``/``gpu_memset``/``gpu_user_annotation`` events with device,
  stream, correlation, grid, block and registers as the JSON export writes them;
- GPU counters (``GpuCounterEvent``) become ``"C"`` events on ``GPU N Counters``;
- track descriptors become ``process_name``/``thread_name`` metadata.

Times are relative to the trace's clock snapshot, as ``baseTimeNanoseconds`` makes the
JSON export's. What the protobuf does not carry is absent: the JSON header
(``deviceProperties``, but for the compute capability the kernels' ``arch`` names;
``distributedInfo``), ``[memory]`` instants (PyTorch's encoder writes none; profkit's own
writer keeps them), and a kernel's static shared memory (the encoder writes the dynamic
part only).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from profiler_kit.errors import TraceError
from profiler_kit.trace.normalize import counter_device

PFTRACE_SUFFIXES = (".pftrace", ".pftrace.gz", ".perfetto-trace")
GZIP_MAGIC = b"\x1f\x8b"
# ComputeKernelLaunch argument ids as PyTorch's encoder numbers them (its _COMPUTE_ARGS);
# the perfetto package's schema does not yet name the interned argument names
# (the encoder writes only a kernel's dynamic shared memory)
LAUNCH_ARGS = {1: "registers per thread", 2: "shared memory"}
STAGE_CATEGORY = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset",
                  "Annotation": "gpu_user_annotation"}
# render-stage extra data as the JSON export names it in args (numbers as numbers)
EXTRA_ARGS = {"device id": "device", "context id": "context", "stream id": "stream",
              "correlation": "correlation", "priority": "priority", "queued": "queued",
              "channel": "channel", "channel_type": "channel_type", "graph id": "graph id",
              "graph node id": "graph node id", "bytes": "bytes", "value": "value",
              "memory kind": "memory kind"}
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
BOOTTIME = 6  # Perfetto's default clock, the one PyTorch's timestamps are on
ABSOLUTE_CLOCKS = (1, 2, 3, 4, 5, 6)  # the builtin clocks; others are incremental or custom
PLAIN_VALUES = frozenset({"bool_value", "uint_value", "double_value", "string_value"})


def _read_args() -> frozenset[str]:
    """The args the event table reads (its decoders' fields), and the sync's kind."""
    import msgspec

    from profiler_kit.trace.schema import Args, OtherArgs

    names = {f.encode_name for kind in (Args, OtherArgs) for f in msgspec.structs.fields(kind)}
    return frozenset(names | {"cuda_sync_kind"})


# a slice's other args (Kineto's "Ev Idx", "Record function id", ...) are left unread
READ_ARGS = _read_args()
INCREMENTAL_STATE_CLEARED = 1


def is_pftrace(path: Path) -> bool:
    """A Perfetto-native trace by its name."""
    return path.name.endswith(PFTRACE_SUFFIXES)


def schema() -> Any:
    """The generated ``perfetto_trace_pb2`` module, or a TraceError saying what to install."""
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError:
        raise TraceError("reading a .pftrace needs the perfetto package "
                         "(pip install perfetto)") from None
    return perfetto_trace_pb2


def read_pftrace(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the header a JSON export would have, its events) of one Perfetto-native trace."""
    pb = schema()
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror or e})") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise TraceError(f"{path}: corrupt gzip data ({e})") from None
    if not data:
        raise TraceError(f"{path}: empty file")
    trace = pb.Trace()
    try:
        trace.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        raise TraceError(f"{path}: not a Perfetto trace ({e})") from None
    try:
        return _Events(path).read(trace.packet)
    except (TypeError, ValueError, OverflowError) as e:  # a value of an unexpected kind
        raise TraceError(f"{path}: a Perfetto trace profkit cannot read ({e})") from None


class _Events:
    """The packets of one trace walked in order, with the interned names of each sequence.

    Timestamps are kept as the trace's nanoseconds until every packet is read (the clock
    snapshot may come last), then made relative to it at once.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []  # their "ts": the trace's ns until the end
        self.base_ns: int | None = None
        self.interned: dict[int, dict[str, dict[int, Any]]] = {}
        self.defaults: dict[int, int] = {}  # sequence -> its default track
        self.descriptors: dict[tuple[int, int], Any] = {}  # (sequence, gpu) -> counters
        self.tracks: dict[int, tuple[Any, Any]] = {}  # uuid -> (pid, tid)
        self.marks: list[tuple[int, int, int, Any]] = []
        self.slices = 0
        self.values: dict[bytes, Any] = {}
        self.counter_tracks: dict[int, tuple[str, Any, float]] = {}  # uuid -> series, pid, x
        self.arch: dict[int, str] = {}  # gpu -> the architecture its kernels name
        self.process_labels: dict[int, tuple[int, str]] = {}  # uuid -> (pid, name)
        self.named_threads: set[tuple[int, int]] = set()

    def read(self, packets: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        marks = self.marks
        for p in packets:
            kind = p.WhichOneof("data")
            seq = p.trusted_packet_sequence_id
            if p.sequence_flags & INCREMENTAL_STATE_CLEARED:
                self.interned[seq] = {}
            if p.HasField("interned_data"):
                self._intern(seq, p.interned_data)
            if p.HasField("trace_packet_defaults"):
                self._defaults(seq, p.trace_packet_defaults)
            if p.HasField("timestamp_clock_id") and p.timestamp_clock_id not in ABSOLUTE_CLOCKS:
                self._unsupported(f"timestamps on clock {p.timestamp_clock_id}")
            if kind == "track_event":
                te = p.track_event
                if te.type == SLICE_END:  # half of all packets: kept short
                    marks.append((p.timestamp, len(marks), self._track_of(seq, te), None))
                else:
                    self._track_event(p.timestamp, seq, te)
            elif kind == "gpu_render_stage_event":
                self._render_stage(p.timestamp, seq, p.gpu_render_stage_event)
            elif kind == "gpu_counter_event":
                self._counters(p.timestamp, seq, p.gpu_counter_event)
            elif kind == "track_descriptor":
                self._track(p.track_descriptor)
            elif kind == "clock_snapshot" and self.base_ns is None:
                self.base_ns = _snapshot_ns(p)
        self._pair_slices()
        if not self.slices and not self.events:
            raise TraceError(f"{self.path}: a Perfetto trace with no slices or GPU events")
        base = self.base_ns or 0
        for e in self.events:
            if "ts" in e:
                e["ts"] = us(e["ts"] - base)
        header: dict[str, Any] = {"traceName": self.path.name}
        if self.base_ns is not None:
            header["baseTimeNanoseconds"] = self.base_ns
        devices = [props for gpu, arch in sorted(self.arch.items())
                   if (props := device_properties(gpu, arch)) is not None]
        if devices:
            header["deviceProperties"] = devices
        return header, self.events

    def _unsupported(self, what: str) -> None:
        raise TraceError(f"{self.path}: {what}: profkit reads the Perfetto traces PyTorch "
                         "and profkit write (absolute timestamps, tracks named on each "
                         "event)")

    def _intern(self, seq: int, d: Any) -> None:
        tables = self.interned.setdefault(seq, {})
        for field, entries in d.ListFields():
            table = tables.setdefault(field.name, {})
            for entry in entries:
                table[entry.iid] = entry

    def _defaults(self, seq: int, d: Any) -> None:
        if d.HasField("timestamp_clock_id") and d.timestamp_clock_id not in ABSOLUTE_CLOCKS:
            self._unsupported(f"timestamps on clock {d.timestamp_clock_id}")
        if d.HasField("track_event_defaults") and d.track_event_defaults.track_uuid:
            self.defaults[seq] = d.track_event_defaults.track_uuid

    def _name(self, seq: int, table: str, iid: int) -> str:
        entry = self.interned.get(seq, {}).get(table, {}).get(iid)
        return entry.name if entry is not None else ""

    def _track(self, t: Any) -> None:
        if t.HasField("thread"):
            pid, tid = t.thread.pid, t.thread.tid
            self.tracks[t.uuid] = (pid, tid)
            name = t.thread.thread_name
            if name == str(tid):  # unnamed: the encoder writes the id, the JSON "thread N"
                name = f"thread {tid}"
            if name and (pid, tid) not in self.named_threads:  # a thread's lanes: its first
                self.named_threads.add((pid, tid))
                self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                                    "args": {"name": name}})
        elif t.HasField("process"):
            pid = t.process.pid
            self.tracks[t.uuid] = (pid, 0)
            self.process_labels[t.uuid] = (pid, t.process.process_name)
            if t.process.process_name:
                self.events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                                    "args": {"name": t.process.process_name}})
        elif t.HasField("counter"):
            if t.counter.is_incremental:
                self._unsupported(f"incremental counter {t.name!r}")
            pid, label = self.process_labels.get(t.parent_uuid, (0, ""))
            # PyTorch's GPU counters are on a process named "GPU N Counters"
            owner = label if counter_device(label) >= 0 else pid
            self.counter_tracks[t.uuid] = (t.name or t.static_name, owner,
                                           float(t.counter.unit_multiplier or 1))

    def _counter_value(self, ts: int, te: Any) -> None:
        track = self.counter_tracks.get(te.track_uuid)
        if track is None:
            return
        value = te.double_counter_value if te.HasField("double_counter_value") \
            else te.counter_value
        self.events.append({"ph": "C", "name": track[0], "pid": track[1], "ts": ts,
                            "args": {"": value * track[2]}})

    def _track_event(self, ts: int, seq: int, te: Any) -> None:
        kind = te.type
        track = self._track_of(seq, te)
        if kind == COUNTER:
            self._counter_value(ts, te)
            return
        if kind not in (SLICE_BEGIN, INSTANT):
            return
        name = te.name or self._name(seq, "event_names", te.name_iid)
        iids = te.category_iids
        if len(iids) == 1 and not te.categories:
            cat = self._name(seq, "event_categories", iids[0])
        else:
            cat = ",".join(c for c in [*(self._name(seq, "event_categories", i)
                                          for i in iids), *te.categories] if c)
        args = {}
        values = self.values
        for a in te.debug_annotations:
            key = a.name or self._annotation_name(seq, a)
            if key not in READ_ARGS:  # only what the table reads is converted
                continue
            held = a.WhichOneof("value")
            if held == "int_value":
                args[key] = a.int_value
            elif held in PLAIN_VALUES:
                args[key] = getattr(a, held)
            else:  # shapes recur in every step: each distinct one is converted once
                raw = a.SerializeToString()
                value = values.get(raw)
                if value is None:
                    value = values[raw] = self._value(seq, a)
                args[key] = value
        if not cat and "cuda_sync_kind" in args:  # the encoder gives syncs no category
            cat = "cuda_sync"
        if kind == INSTANT:  # as JSON has it: [memory] events are these
            pid, tid = self.tracks.get(track, (0, track))
            self.events.append({"ph": "i", "s": "t", "cat": cat, "name": name, "pid": pid,
                                "tid": tid, "ts": ts, "args": args})
            return
        self.marks.append((ts, len(self.marks), track, (name, cat, args)))

    def _track_of(self, seq: int, te: Any) -> int:
        """The track an event is on: its own, else its sequence's default."""
        return te.track_uuid if te.HasField("track_uuid") else self.defaults.get(seq, 0)

    def _pair_slices(self) -> None:
        """Begins and ends paired per track in time order, as Perfetto pairs them
        (PyTorch's encoder writes one kind of slice at a time, all its begins, then all
        its ends). The slices are listed in the order they begin, so a parent precedes a
        child that begins with it, as in a JSON trace. Two limits of the format: at one
        timestamp it cannot tell a slice that ends from one that begins (packet order
        decides), and a slice that ends inside one it began before (a Python frame that
        opened a ProfilerStep) closes that one instead, as Perfetto shows it."""
        self.marks.sort()
        open_slices: dict[int, list[tuple[int, int, Any]]] = {}
        paired = []
        for order, (ts, _, track, begin) in enumerate(self.marks):
            stack = open_slices.setdefault(track, [])
            if begin is not None:
                stack.append((order, ts, begin))
            elif stack:
                first, start, begin = stack.pop()
                paired.append((first, track, start, ts, begin))
        paired.sort()
        for _, track, start, end, (name, cat, args) in paired:
            pid, tid = self.tracks.get(track, (0, track))
            self.slices += 1
            self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                                "ts": start, "dur": us(end - start), "args": args})
        self.marks = []

    def _annotation_name(self, seq: int, a: Any) -> str:
        return a.name or self._name(seq, "debug_annotation_names", a.name_iid)

    def _value(self, seq: int, a: Any) -> Any:
        """A debug annotation's value as JSON would hold it."""
        kind = a.WhichOneof("value")
        if kind is None:
            if len(a.array_values):
                return [self._value(seq, v) for v in a.array_values]
            if len(a.dict_entries):
                return {self._annotation_name(seq, v): self._value(seq, v)
                        for v in a.dict_entries}
            return []
        if kind == "string_value_iid":
            entry = self.interned.get(seq, {}).get("debug_annotation_string_values",
                                                   {}).get(a.string_value_iid)
            return entry.str.decode("utf-8", "replace") if entry is not None else ""
        if kind == "nested_value":
            return _nested(a.nested_value)
        value = getattr(a, kind)
        if kind == "legacy_json_value":
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value if isinstance(value, (int, float, str, bool)) else str(value)

    def _render_stage(self, ts: int, seq: int, e: Any) -> None:
        stage = self._name(seq, "gpu_specifications", e.stage_iid)
        cat = STAGE_CATEGORY.get(stage)
        if cat is None:  # graph event-record and host nodes: no counterpart in the table
            return
        args: dict[str, Any] = {}
        for x in e.extra_data:
            key = EXTRA_ARGS.get(x.name)
            if key is not None:
                args[key] = _number(x.value)
            elif x.name == "arch" and e.gpu_id not in self.arch:  # "sm_90" on real GPUs
                self.arch[e.gpu_id] = x.value
        device = args.get("device", e.gpu_id)
        stream = args.get("stream", 0)
        name = e.name or self._name(seq, "event_names", e.name_iid) or stage
        if cat == "kernel" and e.HasField("launch"):
            launch = e.launch
            g, b = launch.grid_size, launch.workgroup_size
            args["grid"] = [g.x, g.y, g.z]
            args["block"] = [b.x, b.y, b.z]
            for arg in launch.args:
                key = LAUNCH_ARGS.get(arg.name_iid)
                if key is not None:
                    args[key] = arg.uint_value
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": device,
                            "tid": stream, "ts": ts, "dur": us(e.duration), "args": args})

    def _counters(self, ts: int, seq: int, e: Any) -> None:
        """GPU counter samples, named by their descriptor: interned, or carried inline by
        the first event of a GPU (and kept for the next ones)."""
        entry = self.interned.get(seq, {}).get("gpu_counter_descriptors", {}).get(
            e.counter_descriptor_iid) if e.counter_descriptor_iid else None
        gpu = e.gpu_id if e.HasField("gpu_id") else (entry.gpu_id if entry is not None else 0)
        if entry is not None:
            descriptor = entry.counter_descriptor
        elif e.HasField("counter_descriptor"):
            descriptor = self.descriptors[(seq, gpu)] = e.counter_descriptor
        else:
            descriptor = self.descriptors.get((seq, gpu))
            if descriptor is None:
                return
        names = {s.counter_id: s.name for s in descriptor.specs}
        for c in e.counters:
            name = names.get(c.counter_id)
            if name is None:
                continue
            value = c.double_value if c.HasField("double_value") else c.int_value
            self.events.append({"ph": "C", "name": name, "pid": f"GPU {gpu} Counters",
                                "ts": ts, "args": {"": value}})


def _snapshot_ns(p: Any) -> int:
    """The base a clock snapshot gives: its BOOTTIME clock (where the events' timestamps
    are), else the packet's own timestamp."""
    boottime = [c.timestamp for c in p.clock_snapshot.clocks if c.clock_id == BOOTTIME]
    return boottime[0] if boottime else p.timestamp


def _nested(v: Any) -> Any:
    """A ``NestedValue`` (an older encoding of arrays and dicts) as JSON would hold it."""
    if v.nested_type == 1:  # DICT
        return {k: _nested(x) for k, x in zip(v.dict_keys, v.dict_values, strict=False)}
    if v.nested_type == 2:  # ARRAY
        return [_nested(x) for x in v.array_values]
    for field in ("int_value", "double_value", "bool_value", "string_value"):
        if v.HasField(field):
            return getattr(v, field)
    return None


def device_properties(gpu: int, arch: str) -> dict[str, Any] | None:
    """What a GPU's architecture (``sm_90``, as PyTorch's encoder names it on each kernel)
    says of it in Kineto's ``deviceProperties`` terms: its compute capability, a warp of
    32 (CUPTI's GPUs are NVIDIA's); not its model, so no peaks."""
    digits = arch.removeprefix("sm_").rstrip("af")
    if not arch.startswith("sm_") or not digits.isdigit() or len(digits) < 2:
        return None
    return {"id": gpu, "computeMajor": int(digits[:-1]), "computeMinor": int(digits[-1]),
            "warpSize": 32}


def us(ns: int) -> int | float:
    """Nanoseconds as the µs a JSON trace holds: whole µs as an int, else the fraction
    added to the whole part (a float of the ns whole would round them above 2**53)."""
    whole, frac = divmod(ns, 1000)
    return whole if not frac else whole + frac / 1000


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text
