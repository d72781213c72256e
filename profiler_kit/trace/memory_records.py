"""What a memory analysis needs from a trace, including the fields the event table drops.

The event table keeps each ``[memory]`` event's size and totals, not its ``Addr``, and no
``CallFrom`` of ``python_function`` events. Matching a free to its allocation needs the
address, and naming the line that allocated needs the call site, so this reader decodes
just these events (``[memory]`` instants, ``cpu_op`` and ``python_function`` ranges, and
``ProfilerStep#k`` annotations) from the file in one pass.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from profiler_kit.errors import TraceError
from profiler_kit.trace.normalize import us_to_ns
from profiler_kit.trace.source import read_all

_STEP = re.compile(r"ProfilerStep#(\d+)$")


class _Args(msgspec.Struct, gc=False):
    nbytes: Any = msgspec.field(default=None, name="Bytes")
    addr: Any = msgspec.field(default=None, name="Addr")
    total_allocated: Any = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Any = msgspec.field(default=None, name="Total Reserved")
    device_type: Any = msgspec.field(default=None, name="Device Type")
    device_id: Any = msgspec.field(default=None, name="Device Id")
    call_from: Any = msgspec.field(default=None, name="CallFrom")
    input_dims: Any = msgspec.field(default=None, name="Input Dims")


class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: _Args | None = None


class _Doc(msgspec.Struct, gc=False):
    traceEvents: list[_Event] = msgspec.field(default_factory=list)  # noqa: N815 - JSON key
    deviceProperties: list[Any] = msgspec.field(default_factory=list)  # noqa: N815


class Ranges(msgspec.Struct, frozen=True):
    """Named time ranges on threads (ops or Python frames), in file order."""

    name: tuple[str, ...]
    tid: np.ndarray  # int64
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    call_from: tuple[str, ...] = ()  # Python frames: "file:line" of the call, "" if unknown

    def __len__(self) -> int:
        return len(self.name)


class Allocations(msgspec.Struct, frozen=True):
    """``[memory]`` events in time order: size > 0 allocates, < 0 frees ``addr``."""

    ts_ns: np.ndarray  # int64
    tid: np.ndarray  # int64
    bytes: np.ndarray  # int64, signed
    addr: np.ndarray  # int64, -1 when absent
    device: tuple[str, ...]  # "cpu", "cuda:0", ...
    total_allocated: np.ndarray  # int64 after the event, -1 when absent
    total_reserved: np.ndarray  # int64 after the event, -1 when absent

    def __len__(self) -> int:
        return len(self.ts_ns)


class MemoryRecords(msgspec.Struct, frozen=True):
    path: str
    allocations: Allocations
    ops: Ranges  # cpu_op
    frames: Ranges  # python_function
    steps: tuple[tuple[int, int, int], ...]  # (step number, start ns, end ns), by start
    device_memory: dict[str, int]  # "cuda:0" -> totalGlobalMem, where the trace says
    shapes_recorded: bool = False  # ops carry "Input Dims" (record_shapes=True)
    # starts of torch.func transforms (vmap, grad, jvp, ...): Python frames of torch/_functorch
    transform_starts_ns: np.ndarray = msgspec.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))


def _is_transform_frame(name: str) -> bool:
    return name.startswith("torch/_functorch/") or "/torch/_functorch/" in name


def _int(value: Any) -> int | None:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    return None


def _device(dev_type: Any, dev_id: Any) -> str:
    t, i = _int(dev_type), _int(dev_id)
    if not t:
        return "cpu"
    kind = "cuda" if t == 1 else f"device{t}"
    return f"{kind}:{i if i is not None and i >= 0 else 0}"


def _span(e: _Event) -> tuple[int, int] | None:
    start, dur = us_to_ns(e.ts), us_to_ns(e.dur)
    if type(start) is not int or type(dur) is not int:
        return None
    return start, start + max(dur, 0)


def _ranges(rows: list[tuple[str, int, int, int, str]], with_calls: bool) -> Ranges:
    return Ranges(tuple(r[0] for r in rows),
                  np.array([r[1] for r in rows], dtype=np.int64),
                  np.array([r[2] for r in rows], dtype=np.int64),
                  np.array([r[3] for r in rows], dtype=np.int64),
                  tuple(r[4] for r in rows) if with_calls else ())


def read_memory_records(path: str | Path) -> MemoryRecords:
    """The memory events, ops, Python frames and steps of the trace at ``path``."""
    path = Path(path)
    try:
        doc = msgspec.json.decode(read_all(path), type=_Doc)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceError(f"{path}: not a trace ({exc})") from None
    mem: list[tuple[int, int, int, int, str, int, int]] = []
    ops: list[tuple[str, int, int, int, str]] = []
    frames: list[tuple[str, int, int, int, str]] = []
    steps: list[tuple[int, int, int]] = []
    transforms: list[int] = []
    shapes_recorded = False
    for e in doc.traceEvents:
        tid = _int(e.tid)
        tid = -1 if tid is None else tid
        if e.name == "[memory]" and e.args is not None:
            a = e.args
            nbytes, ts = _int(a.nbytes), us_to_ns(e.ts)
            if nbytes is None or type(ts) is not int:
                continue
            addr, alloc, res = _int(a.addr), _int(a.total_allocated), _int(a.total_reserved)
            mem.append((ts, tid, nbytes, -1 if addr is None else addr,
                        _device(a.device_type, a.device_id),
                        -1 if alloc is None else alloc, -1 if res is None else res))
        elif e.ph == "X" and type(e.name) is str:
            span = _span(e)
            if span is None:
                continue
            if e.cat == "cpu_op":
                ops.append((e.name, tid, *span, ""))
                shapes_recorded = shapes_recorded or (
                    e.args is not None and e.args.input_dims is not None)
            elif e.cat == "python_function":
                call = e.args.call_from if e.args is not None else None
                frames.append((e.name, tid, *span, call if type(call) is str else ""))
                if _is_transform_frame(e.name):
                    transforms.append(span[0])
            elif (m := _STEP.match(e.name)) and e.cat == "user_annotation":
                steps.append((int(m.group(1)), *span))
    mem.sort(key=lambda r: r[0])
    allocations = Allocations(
        np.array([r[0] for r in mem], dtype=np.int64), np.array([r[1] for r in mem], np.int64),
        np.array([r[2] for r in mem], dtype=np.int64), np.array([r[3] for r in mem], np.int64),
        tuple(r[4] for r in mem), np.array([r[5] for r in mem], dtype=np.int64),
        np.array([r[6] for r in mem], dtype=np.int64))
    capacity = {f"cuda:{p['id']}": p["totalGlobalMem"] for p in doc.deviceProperties
                if type(p) is dict and type(p.get("id")) is int
                and type(p.get("totalGlobalMem")) is int}
    return MemoryRecords(str(path), allocations, _ranges(ops, False), _ranges(frames, True),
                         tuple(sorted(steps, key=lambda s: s[1])), capacity, shapes_recorded,
                         np.array(sorted(transforms), dtype=np.int64))
