"""Small event tables built by hand, for analysis tests that need exact, known timelines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from profiler_kit.trace.normalize import recorded_inputs
from profiler_kit.trace.table import Cat, EventTable, MemoryEvents, TraceMeta


@dataclass
class Ev:
    """One complete event; GPU events need ``device``/``stream``; -1 means "not given"."""

    cat: Cat
    name: str
    ts: int  # ns
    dur: int  # ns
    pid: int = 1
    tid: int = 1
    device: int = -1
    stream: int = -1
    correlation: int = -1
    external_id: int = -1
    input_dims: list[Any] | None = None  # args["Input Dims"] when recorded
    input_types: list[Any] | None = None  # args["Input type"]
    concrete: list[Any] | None = None  # args["Concrete Inputs"]
    strides: list[Any] | None = None  # args["Input Strides"]


@dataclass
class Alloc:
    ts: int
    nbytes: int
    total_allocated: int = -1
    total_reserved: int = -1
    device_type: int = 1
    device_id: int = 0
    tid: int = 1
    addr: int = -1


@dataclass
class Meta:
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    rank: int | None = None


def kernel(name: str, ts: int, dur: int, corr: int = -1, device: int = 0, stream: int = 7,
           ext: int = -1, cat: Cat = Cat.KERNEL) -> Ev:
    return Ev(cat, name, ts, dur, pid=device, tid=stream, device=device, stream=stream,
              correlation=corr, external_id=ext)


def launch(ts: int, corr: int, tid: int = 1, dur: int = 5, name: str = "cudaLaunchKernel") -> Ev:
    return Ev(Cat.RUNTIME, name, ts, dur, tid=tid, correlation=corr)


def op(name: str, ts: int, dur: int, tid: int = 1, ext: int = -1,
       cat: Cat = Cat.CPU_OP, dims: list[Any] | None = None) -> Ev:
    return Ev(cat, name, ts, dur, tid=tid, external_id=ext, input_dims=dims)


def make_table(events: list[Ev], allocs: list[Alloc] | None = None,
               device_properties: list[dict[str, Any]] | None = None,
               path: str = "synthetic.json") -> EventTable:
    """An EventTable with rows sorted by start, as the loader gives it."""
    events = sorted(events, key=lambda e: e.ts)
    names: list[str] = []
    index: dict[str, int] = {}
    for e in events:
        index.setdefault(e.name, len(index))
    names = list(index)
    col = lambda attr, dt: np.array([getattr(e, attr) for e in events], dtype=dt)  # noqa: E731
    allocs = allocs or []
    acol = lambda attr, dt: np.array([getattr(a, attr) for a in allocs], dtype=dt)  # noqa: E731
    return EventTable(
        meta=TraceMeta(path=path, device_properties=device_properties or [],
                       trace_name=path.split("/")[-1].split(".")[0]),
        names=names,
        cat=np.array([int(e.cat) for e in events], dtype=np.int8),
        name=np.array([index[e.name] for e in events], dtype=np.int32),
        ts_ns=col("ts", np.int64),
        dur_ns=col("dur", np.int64),
        pid=col("pid", np.int64),
        tid=col("tid", np.int64),
        device=col("device", np.int32),
        stream=col("stream", np.int64),
        correlation=col("correlation", np.int64),
        external_id=col("external_id", np.int64),
        memory=MemoryEvents(
            ts_ns=acol("ts", np.int64),
            device_type=acol("device_type", np.int8),
            device_id=acol("device_id", np.int32),
            bytes=acol("nbytes", np.int64),
            total_allocated_bytes=acol("total_allocated", np.int64),
            total_reserved_bytes=acol("total_reserved", np.int64),
            tid=acol("tid", np.int64),
            addr=acol("addr", np.int64),
        ),
        inputs={i: recorded_inputs(_shape_args(e)) for i, e in enumerate(events)
                if e.input_dims is not None},
    )


def _shape_args(e: Ev) -> dict[str, Any]:
    """The args ``record_shapes=True`` would have written for ``e``."""
    args: dict[str, Any] = {"Input Dims": e.input_dims}
    for key, value in (("Input type", e.input_types), ("Input Strides", e.strides),
                       ("Concrete Inputs", e.concrete)):
        if value is not None:
            args[key] = value
    return args
