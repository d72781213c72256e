"""Per-event normalization: the rules that turn one raw Chrome-trace event into table rows.

This is the lenient path and the reference for every faster path: any event, however
odd, is either turned into a row, ignored as bookkeeping (metadata, flows, plain
instants), or skipped and counted by reason. Nothing here raises on bad events.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from itertools import chain
from typing import Any

import msgspec
import numpy as np

from profiler_kit.trace.comms import CommEvent, args_from_dict, is_comm_name
from profiler_kit.trace.table import (
    CATEGORY_NAMES,
    GPU_CATS,
    INPUT_TYPE_SEP,
    Cat,
    MemoryEvents,
    RecordedInputs,
)

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# Phases that are bookkeeping rather than timed work: ignored, not counted.
FLOW_PHASES = frozenset({"s", "f", "t"})
INSTANT_PHASES = frozenset({"i", "I"})
# Categories Kineto writes that have no Cat of their own but are not odd.
KNOWN_OTHER_CATEGORIES = frozenset({"trace", "cpu_instant_event", "cuda_profiler_range"})
GPU_CAT_VALUES = frozenset(int(c) for c in GPU_CATS)
CPU_OP_VALUE = int(Cat.CPU_OP)
SYNC_VALUE = int(Cat.SYNC)
PYTHON_FUNCTION_VALUE = int(Cat.PYTHON_FUNCTION)
KERNEL_VALUE = int(Cat.KERNEL)
# Ops that only make views, allocate or read metadata: no data moves, so their recorded
# shapes are not kept (they are most of a trace's ops; keeping them would only cost time).
SHAPES_NOT_KEPT = frozenset({
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::as_strided", "aten::t",
    "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as", "aten::slice",
    "aten::select", "aten::narrow", "aten::unsqueeze", "aten::squeeze", "aten::flatten",
    "aten::unflatten", "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind",
    "aten::alias", "aten::detach", "detach", "aten::detach_", "aten::lift_fresh",
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::resize_",
    "aten::result_type", "aten::size", "aten::stride", "aten::dim", "aten::is_nonzero",
    "aten::item", "aten::_local_scalar_dense", "aten::set_", "aten::view_as",
    "aten::contiguous_format", "aten::unfold", "aten::diagonal", "aten::real", "aten::imag",
})
# The args ``record_shapes=True`` writes, in the order of RecordedInputs' fields.
INPUT_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
BEYOND_64_BITS = "beyond 64 bits"


def reason(problem: str, field: str) -> str:
    """The skip reason for ``field``'s ``problem``: "missing dur", "pid beyond 64 bits"."""
    return f"{field} {problem}" if problem == BEYOND_64_BITS else f"{problem} {field}"


def string_id(value: str) -> int:
    """A stable negative integer for a string pid/tid (the same in every file and chunk)."""
    return -1 - zlib.crc32(value.encode("utf-8", "surrogatepass"))


def us_to_ns(value: Any) -> int | str:
    """Microseconds (int or float) to integer nanoseconds, or the reason it cannot be.

    Integers are multiplied exactly. A float ``x`` becomes ``round(x * 1000)`` computed
    on its integer and fractional parts apart, so the float product's own rounding
    never moves the result (``4458676522690.655`` gives ``4458676522690655``).
    """
    if type(value) is int:
        ns = value * 1000
    elif type(value) is float:
        if not math.isfinite(value):
            return "non-finite"
        whole = math.floor(value)
        ns = whole * 1000 + round((value - whole) * 1000)
    elif value is None:
        return "missing"
    else:
        return "non-numeric"
    if ns < INT64_MIN or ns > INT64_MAX:
        return BEYOND_64_BITS
    return ns


def id_value(value: Any) -> int | str:
    """A pid/tid: integers as they are, strings mapped by :func:`string_id`."""
    if type(value) is int:
        if INT64_MIN <= value <= INT64_MAX:
            return value
        return BEYOND_64_BITS
    if type(value) is str:
        return string_id(value)
    if value is None:
        return "missing"
    return "non-integer"


def category_code(raw: Any) -> tuple[int, str | None]:
    """The Cat code of a raw ``cat`` value, and the note to count when it is odd."""
    if type(raw) is not str:
        return int(Cat.OTHER), "missing category"
    lower = raw.lower()
    cat = CATEGORY_NAMES.get(lower)
    if cat is not None:
        return int(cat), None
    if lower in KNOWN_OTHER_CATEGORIES:
        return int(Cat.OTHER), None
    return int(Cat.OTHER), f"unknown category: {raw[:60]}"


def optional_int(value: Any) -> int | None:
    """An optional integer field (correlation, device, ...): the int, or None when odd/absent."""
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:
        return value
    return None


class Accumulator:
    """Row-by-row builder of table columns, with the skip/normalize counters."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.cat: list[int] = []
        self.name: list[int] = []
        self.ts_ns: list[int] = []
        self.dur_ns: list[int] = []
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.device: list[int] = []
        self.stream: list[int] = []
        self.correlation: list[int] = []
        self.external_id: list[int] = []
        self.input_type: list[int] = []
        self.seq_nr: list[int] = []
        self.fwd_tid: list[int] = []
        self.call_from: list[int] = []
        self.mem: dict[str, list[int]] = {k: [] for k in MEMORY_COLUMNS}
        self.inputs: list[tuple[int, RecordedInputs]] = []  # (row in these lists, inputs)
        self.event_waits: list[tuple[int, tuple[int, int]]] = []  # (row, (stream, record))
        # kernel rows' launch args, raw: (row, *LAUNCH_KEYS values)
        self.launches: list[tuple[Any, ...]] = []
        self.skipped: Counter[str] = Counter()
        self.normalized: Counter[str] = Counter()
        self.process_names: dict[int, str] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.comms: list[CommEvent] = []
        self.counters: list[tuple[int, int, str, float]] = []  # (ts_ns, device, name, value)

    def intern(self, name: str) -> int:
        idx = self.names.get(name)
        if idx is None:
            idx = self.names[name] = len(self.names)
        return idx

    def add(self, event: Any) -> None:
        """Add one raw event (anything JSON can hold)."""
        if type(event) is not dict:
            self.skipped["event is not an object"] += 1
            return
        ph = event.get("ph")
        if ph == "X":
            self._add_complete(event)
        elif ph in INSTANT_PHASES:
            if event.get("name") == "[memory]":
                args = event.get("args")
                if type(args) is not dict:
                    self.skipped["memory event without args"] += 1
                    return
                self.add_memory(event.get("ts"), event.get("tid"), args.get("Bytes"),
                                args.get("Total Allocated"), args.get("Total Reserved"),
                                args.get("Device Type"), args.get("Device Id"),
                                args.get("Addr"))
        elif ph == "M":
            args = event.get("args")
            self.add_metadata(event.get("name"), event.get("pid"), event.get("tid"),
                              args.get("name") if type(args) is dict else None)
        elif ph == "C":
            self.add_counter(event.get("name"), event.get("pid"), event.get("ts"),
                             event.get("args"))
        elif ph in FLOW_PHASES:
            return
        elif type(ph) is str:
            self.skipped[f"unsupported phase {ph[:20]!r}"] += 1
        else:
            self.skipped["missing ph"] += 1

    def _add_complete(self, e: dict[str, Any]) -> None:
        name = e.get("name")
        if type(name) is not str:
            self.skipped["missing name"] += 1
            return
        ts = us_to_ns(e.get("ts"))
        if type(ts) is str:
            self.skipped[reason(ts, "ts")] += 1
            return
        dur = us_to_ns(e.get("dur"))
        if type(dur) is str:
            self.skipped[reason(dur, "dur")] += 1
            return
        if dur < 0:
            self.skipped["negative dur"] += 1
            return
        pid = id_value(e.get("pid"))
        if type(pid) is str:
            self.skipped[reason(pid, "pid")] += 1
            return
        tid = id_value(e.get("tid"))
        if type(tid) is str:
            self.skipped[reason(tid, "tid")] += 1
            return
        cat = self.category(e.get("cat"))
        args = e.get("args")
        if type(args) is not dict:
            if args is not None:
                self.normalized["args not an object"] += 1
            args = {}
        self.cat.append(cat)
        self.name.append(self.intern(name))
        self.ts_ns.append(ts)
        self.dur_ns.append(dur)
        self.pid.append(pid)
        self.tid.append(tid)
        if cat in GPU_CAT_VALUES:
            device = optional_int(args.get("device"))
            if device is None or not INT32_MIN <= device <= INT32_MAX:
                device = pid if INT32_MIN <= pid <= INT32_MAX else -1
            stream = optional_int(args.get("stream"))
            self.device.append(device)
            self.stream.append(tid if stream is None else stream)
        else:
            self.device.append(-1)
            self.stream.append(-1)
        corr = optional_int(args.get("correlation"))
        self.correlation.append(-1 if corr is None else corr)
        ext = args.get("External id")
        if ext is None:
            ext = args.get("external id")
        ext = optional_int(ext)
        self.external_id.append(-1 if ext is None else ext)
        self.input_type.append(self.intern_input_type(args.get("Input type")))
        seq = fwd = call = -1
        if cat == CPU_OP_VALUE:
            seq = optional_int(args.get("Sequence number"))
            fwd = optional_int(args.get("Fwd thread id"))
            seq = -1 if seq is None or seq < 0 else seq
            fwd = -1 if fwd is None or not 0 <= fwd <= INT32_MAX else fwd
        elif cat == PYTHON_FUNCTION_VALUE:
            where = args.get("CallFrom")
            call = self.intern(where) if type(where) is str and where else -1
        self.seq_nr.append(seq)
        self.fwd_tid.append(fwd)
        self.call_from.append(call)
        if "Collective name" in args or is_comm_name(name):
            self.comms.append(CommEvent(name, cat, ts, dur, pid, tid, self.device[-1],
                                        self.stream[-1], self.correlation[-1],
                                        self.external_id[-1], args_from_dict(args)))
        if cat == CPU_OP_VALUE and ("Input Dims" in args or "Input dims" in args) \
                and name not in SHAPES_NOT_KEPT:
            self.inputs.append((len(self.ts_ns) - 1, recorded_inputs(args)))
        elif cat == KERNEL_VALUE:
            self.launches.append((len(self.ts_ns) - 1, *map(args.get, LAUNCH_KEYS)))
        elif cat == SYNC_VALUE and "wait_on_stream" in args:
            wait = event_wait(args.get("wait_on_stream"),
                              args.get("wait_on_cuda_event_record_corr_id"))
            if wait is not None:
                self.event_waits.append((len(self.ts_ns) - 1, wait))

    def intern_input_type(self, value: Any) -> int:
        """The interned ``Input type`` list (-1 when absent or not a list)."""
        if type(value) is not list:
            return -1
        return self.intern(input_type_key(value))

    def category(self, raw: Any) -> int:
        """The Cat of a raw ``cat`` value; unknown ones are kept as OTHER and counted."""
        code, note = category_code(raw)
        if note is not None:
            self.normalized[note] += 1
        return code

    def add_memory(self, ts_us: Any, tid_raw: Any, bytes_raw: Any, alloc_raw: Any,
                   reserved_raw: Any, dev_type_raw: Any, dev_id_raw: Any,
                   addr_raw: Any = None) -> None:
        """One ``[memory]`` instant, from its raw field values."""
        nbytes = optional_int(bytes_raw)
        if nbytes is None:
            self.skipped["memory event without Bytes"] += 1
            return
        ts = us_to_ns(ts_us)
        if type(ts) is str:
            self.skipped[reason(ts, "ts")] += 1
            return
        tid = id_value(tid_raw)
        if type(tid) is str:
            tid = -1
        dev_type = optional_int(dev_type_raw)
        dev_id = optional_int(dev_id_raw)
        alloc = optional_int(alloc_raw)
        reserved = optional_int(reserved_raw)
        m = self.mem
        m["ts_ns"].append(ts)
        m["device_type"].append(0 if dev_type is None or not 0 <= dev_type < 128 else dev_type)
        m["device_id"].append(-1 if dev_id is None or not -(2**31) <= dev_id < 2**31 else dev_id)
        m["bytes"].append(nbytes)
        m["total_allocated_bytes"].append(-1 if alloc is None else alloc)
        m["total_reserved_bytes"].append(-1 if reserved is None else reserved)
        m["tid"].append(tid)
        addr = optional_int(addr_raw)
        m["addr"].append(-1 if addr is None or not 0 <= addr < 2**63 else addr)

    def add_counter(self, name: Any, pid_raw: Any, ts_us: Any, args: Any) -> None:
        """A counter event: each numeric value in its ``args`` one sample (the series
        named by the event, and by the key where it has several)."""
        if type(name) is not str or type(args) is not dict:
            self.skipped["counter without a name or values"] += 1
            return
        ts = us_to_ns(ts_us)
        if type(ts) is str:
            self.skipped[reason(ts, "ts")] += 1
            return
        device = counter_device(pid_raw)
        for key, value in args.items():
            try:
                number = float(value) if type(value) in (int, float) else math.nan
            except OverflowError:  # an int beyond any float
                number = math.nan
            if not math.isfinite(number):
                self.skipped["counter value not a number"] += 1
                continue
            self.counters.append((ts, device, counter_series(name, key, len(args)), number))

    def add_metadata(self, kind: Any, pid_raw: Any, tid_raw: Any, label: Any) -> None:
        """A ``process_name``/``thread_name`` metadata event; others are ignored."""
        if type(label) is not str:
            return
        pid = id_value(pid_raw)
        if type(pid) is str:
            return
        if kind == "process_name":
            self.process_names[pid] = label
        elif kind == "thread_name":
            tid = id_value(tid_raw)
            if type(tid) is int:
                self.thread_names[(pid, tid)] = label


def event_wait(stream: Any, record: Any) -> tuple[int, int] | None:
    """(stream, cudaEventRecord correlation) of a wait, None unless both are known (>= 0)."""
    s, r = optional_int(stream), optional_int(record)
    if s is None or r is None or s < 0 or r < 0:
        return None
    return s, r


def input_type_key(types: list[Any]) -> str:
    """One op's ``Input type`` list as the string the table interns."""
    return INPUT_TYPE_SEP.join(t if type(t) is str else "" for t in types)


def recorded_inputs(args: dict[str, Any]) -> RecordedInputs:
    """The shape args of one op as JSON text (what the fast path slices out unchanged)."""
    encode = msgspec.json.encode
    if "Input Dims" not in args and "Input dims" in args:  # PyTorch 1.8's spelling
        args = {**args, "Input Dims": args["Input dims"]}
    return RecordedInputs(*(encode(args[k]) if k in args else b"" for k in INPUT_KEYS))


MEMORY_COLUMNS: dict[str, type] = {
    "ts_ns": np.int64,
    "device_type": np.int8,
    "device_id": np.int32,
    "bytes": np.int64,
    "total_allocated_bytes": np.int64,
    "total_reserved_bytes": np.int64,
    "tid": np.int64,
    "addr": np.int64,
}


def counter_series(name: str, key: str, values: int) -> str:
    """A counter event's series: its name, and the key of the value where it has several
    (``{"": 300}``, PyTorch's one unnamed value, is the event's name alone)."""
    return name if key in ("", name) or values == 1 else f"{name} ({key})"


def counter_device(pid: Any) -> int:
    """The GPU a counter is of: PyTorch's ``"GPU N Counters"`` process (``"rank R GPU N
    Counters"`` in a merged job); -1 for others."""
    if type(pid) is str:
        words = pid.split()[-3:]
        if len(words) == 3 and words[0] == "GPU" and words[2] == "Counters" \
                and words[1].isdigit():
            return int(words[1])
    return -1


def memory_events(columns: dict[str, np.ndarray]) -> MemoryEvents:
    """MemoryEvents sorted by time (stable, so same-time events keep file order)."""
    order = np.argsort(columns["ts_ns"], kind="stable")
    return MemoryEvents(**{k: np.ascontiguousarray(v[order]) for k, v in columns.items()})


# The launch args Kineto writes on each kernel (CUPTI's figures), in the order of
# ``launch_columns``' arguments; see KernelLaunches.
LAUNCH_KEYS = ("blocks per SM", "warps per SM", "est. achieved occupancy %",
               "registers per thread", "shared memory", "grid", "block")
LAUNCH_COLUMNS: dict[str, type] = {
    "row": np.int64, "blocks_per_sm": np.float64, "warps_per_sm": np.float64,
    "occupancy_pct": np.float64, "registers": np.int64, "shared_memory_bytes": np.int64,
    "grid_blocks": np.int64, "block_threads": np.int64,
}


def _float_or_nan(value: Any) -> float:
    if type(value) is int or type(value) is float:
        f = float(value)
        return f if math.isfinite(f) else math.nan
    return math.nan


def _int_or_absent(value: Any) -> int:
    v = optional_int(value)
    return -1 if v is None or v < 0 else v


def dims_product(dims: list[Any]) -> np.ndarray:
    """Per entry, the product of a ``grid``/``block`` list of integers (-1 where absent,
    not a list of non-negative integers, or beyond 64 bits)."""
    n = len(dims)
    out = np.full(n, -1, dtype=np.int64)
    if not n:
        return out
    if all(type(d) is list and len(d) == 3 for d in dims):
        try:
            a = np.fromiter(chain.from_iterable(dims), dtype=np.int64, count=3 * n)
        except (OverflowError, TypeError, ValueError):
            a = None
        if a is not None:
            a = a.reshape(n, 3)
            ok = (a >= 0).all(axis=1) & (a.astype(np.float64).prod(axis=1) < 2.0**62)
            out[ok] = a[ok].prod(axis=1)
            return out
    for i, d in enumerate(dims):
        if type(d) is list and all(type(v) is int and 0 <= v <= INT64_MAX for v in d):
            p = math.prod(d)
            if p <= INT64_MAX:
                out[i] = p
    return out


def launch_columns(rows: Any, blocks_per_sm: Any, warps_per_sm: Any, occupancy: Any,
                   registers: Any, shared_memory: Any, grid: list[Any],
                   block: list[Any], typed: bool = False) -> dict[str, np.ndarray]:
    """The KernelLaunches columns (row in the chunk) from each kernel's launch args.

    ``typed``: the numbers are already floats (NaN when absent) and ints (the ABSENT
    sentinel when absent), as the typed decode gives them; else raw JSON values."""
    n = len(grid)
    if typed:
        floats = [np.fromiter(v, dtype=np.float64, count=n)
                  for v in (blocks_per_sm, warps_per_sm, occupancy)]
        floats = [np.where(np.isfinite(f), f, np.nan) for f in floats]
        ints = [np.fromiter(v, dtype=np.int64, count=n) for v in (registers, shared_memory)]
    else:
        floats = [np.array([_float_or_nan(x) for x in v], dtype=np.float64)
                  for v in (blocks_per_sm, warps_per_sm, occupancy)]
        ints = [np.array([_int_or_absent(x) for x in v], dtype=np.int64)
                for v in (registers, shared_memory)]
    ints = [np.where(i < 0, -1, i) for i in ints]
    return {"row": np.asarray(rows, dtype=np.int64), "blocks_per_sm": floats[0],
            "warps_per_sm": floats[1], "occupancy_pct": floats[2], "registers": ints[0],
            "shared_memory_bytes": ints[1], "grid_blocks": dims_product(grid),
            "block_threads": dims_product(block)}


def accumulated_launches(launches: list[tuple[Any, ...]]) -> dict[str, np.ndarray] | None:
    """The Accumulator's raw launch args as KernelLaunches columns (None: no kernel)."""
    if not launches:
        return None
    rows, bps, wps, occ, regs, smem, grid, block = (list(c) for c in zip(*launches, strict=True))
    return launch_columns(rows, bps, wps, occ, regs, smem, _int_lists(grid), _int_lists(block))


def _int_lists(values: list[Any]) -> list[Any]:
    """Lists of integers as they are, anything else None (as the typed decode takes them)."""
    return [v if type(v) is list and all(type(x) is int for x in v) else None for v in values]


def join_launches(parts: list[tuple[int, dict[str, np.ndarray]]]) -> dict[str, np.ndarray]:
    """Launch columns of several chunks as one, each chunk's rows moved by its offset."""
    out = {k: np.concatenate([c[k] for _, c in parts]) if parts else np.empty(0, dtype=t)
           for k, t in LAUNCH_COLUMNS.items()}
    if parts:
        out["row"] = np.concatenate([c["row"] + offset for offset, c in parts])
    return out
