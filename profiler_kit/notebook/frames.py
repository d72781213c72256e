"""One trace's events and analyses as pandas DataFrames, for a notebook.

Each builder reads the event table and the values the analyses computed on the way (the
op tree, the GPU activities linked to their ops: a :class:`TraceContext`), so a table
is built from the same rows, links and classes as ``profkit analyze``'s figures. Times
are integer nanoseconds on the trace's clock (``*_ns``), sizes bytes; a missing value
is ``<NA>`` (pandas' nullable integers) or ``""``. The columns are documented in
``docs/python.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from profiler_kit.analysis.code.view import kernel_lines
from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.steps import cpu_steps, step_of_activities
from profiler_kit.trace.table import Cat

if TYPE_CHECKING:
    import pandas as pd

    from profiler_kit.analysis.registry import TraceContext

NEEDS_PANDAS = ("the notebook's tables need pandas: pip install 'profkit[notebook]'")
GPU_KINDS = {int(Cat.KERNEL): "kernel", int(Cat.MEMCPY): "memcpy", int(Cat.MEMSET): "memset"}


def pandas() -> Any:
    """pandas, or one line that says how to get it."""
    try:
        import pandas as pd
    except ImportError:
        from profiler_kit.errors import MissingDependency

        raise MissingDependency(NEEDS_PANDAS) from None
    return pd


def _names(ctx: TraceContext, rows: np.ndarray) -> np.ndarray:
    names = np.asarray(ctx.table.names, dtype=object)
    return names[ctx.table.name[rows]] if len(rows) else np.empty(0, dtype=object)


def _nullable(values: np.ndarray) -> Any:
    """Integers with -1 for "none" as a nullable integer column."""
    pd = pandas()
    values = np.asarray(values, dtype=np.int64)
    return pd.arrays.IntegerArray(np.where(values >= 0, values, 0), values < 0)


def _step_numbers(ctx: TraceContext, index: np.ndarray) -> Any:
    """The ``ProfilerStep`` number of each index into ``cpu_steps`` (-1: none)."""
    spans = cpu_steps(ctx.table)
    numbers = np.array([n for n, _, _ in spans] + [-1], dtype=np.int64)
    return _nullable(numbers[np.where(index >= 0, index, len(spans))])


def _cpu_step_index(ctx: TraceContext, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index into ``cpu_steps`` of the step whose CPU span holds each [start, end]."""
    spans = cpu_steps(ctx.table)
    out = np.full(len(starts), -1, dtype=np.int64)
    if not spans or not len(starts):
        return out
    s = np.array([x for _, x, _ in spans], dtype=np.int64)
    e = s + np.array([d for _, _, d in spans], dtype=np.int64)
    order = np.argsort(s, kind="stable")
    i = np.searchsorted(s[order], starts, side="right") - 1
    cand = order[np.maximum(i, 0)]
    ok = (i >= 0) & (ends <= e[cand])
    out[ok] = cand[ok]
    return out


def kernels(ctx: TraceContext) -> pd.DataFrame:
    """One row per GPU activity (kernel, memcpy, memset), in start order: ``name``,
    ``kind``, ``class`` (the hotspot class ``analyze`` sums it under), ``device``,
    ``stream``, ``start_ns``, ``dur_ns``, ``end_ns``, ``step`` (the ``ProfilerStep`` its
    launch call lies in), ``op`` (the CPU op that launched it, "" unlinked), ``launch_ns``
    (its runtime call's start), ``queued_ns`` (from that call's start to the activity's),
    ``line`` (the user's line the code view charges it to, ``file:line (function)``, ""
    where the trace has no Python frames for it), ``correlation`` and ``row`` (the event
    table's)."""
    pd = pandas()
    t, g = ctx.table, ctx.gpu
    rows = g.row
    launch = g.launch_row
    launch_ns = np.where(launch >= 0, t.ts_ns[np.maximum(launch, 0)], -1)
    start = t.ts_ns[rows]
    ops = np.full(len(rows), "", dtype=object)
    linked = g.op_row >= 0
    ops[linked] = _names(ctx, g.op_row[linked])
    classes = np.asarray(classify.CLASSES, dtype=object)
    return pd.DataFrame({
        "name": _names(ctx, rows),
        "kind": [GPU_KINDS.get(int(c), "other") for c in t.cat[rows]],
        "class": classes[g.klass] if len(rows) else np.empty(0, dtype=object),
        "device": t.device[rows].astype(np.int64),
        "stream": t.stream[rows],
        "start_ns": start,
        "dur_ns": t.dur_ns[rows],
        "end_ns": start + t.dur_ns[rows],
        "step": _step_numbers(ctx, step_of_activities(t, g, cpu_steps(t))),
        "op": ops,
        "launch_ns": _nullable(launch_ns),
        "queued_ns": _nullable(np.where(launch_ns >= 0, start - launch_ns, -1)),
        "line": [x or "" for x in kernel_lines(t, ctx.tree, g, ctx.provenance).tolist()],
        "correlation": _nullable(t.correlation[rows]),
        "row": rows,
    })


def ops(ctx: TraceContext) -> pd.DataFrame:
    """One row per CPU op (``cpu_op`` events), in start order: ``name``, ``class``,
    ``pid``, ``tid``, ``thread`` (its name, "" unnamed), ``start_ns``, ``dur_ns``,
    ``self_ns`` (less the ranges directly inside it), ``depth`` (ranges around it, 0 at a
    thread's top), ``parent`` (the name of the range around it, "" none), ``step``,
    ``input_dims`` and ``input_types`` (as recorded with ``record_shapes``, "" else) and
    ``row``."""
    pd = pandas()
    t, tree = ctx.table, ctx.tree
    is_op = t.cat[tree.row] == Cat.CPU_OP
    nodes = np.flatnonzero(is_op)
    rows = tree.row[nodes]
    depth = np.zeros(len(tree.row), dtype=np.int64)
    up = tree.parent.copy()
    while (inside := up >= 0).any():  # one pass per level of nesting
        depth[inside] += 1
        up[inside] = tree.parent[up[inside]]
    parent = tree.parent[nodes]
    parent_names = np.full(len(nodes), "", dtype=object)
    has_parent = parent >= 0
    parent_names[has_parent] = _names(ctx, tree.row[parent[has_parent]])
    classes = np.asarray(classify.CLASSES, dtype=object)
    order = np.argsort(rows, kind="stable")
    nodes, rows, parent_names = nodes[order], rows[order], parent_names[order]
    start, dur = t.ts_ns[rows], t.dur_ns[rows]

    def recorded(row: int, field: str) -> str:
        raw = t.inputs.get(int(row))
        if raw is None:
            return ""
        if field == "types" and not raw.types:
            found = t.input_type_of(int(row))
            return msgspec.json.encode(found).decode() if found is not None else ""
        return getattr(raw, field).decode()

    threads = [t.thread_names.get((int(p), int(i)), "") for p, i in zip(
        t.pid[rows], t.tid[rows], strict=True)]
    return pd.DataFrame({
        "name": _names(ctx, rows),
        "class": classes[tree.own_klass[nodes]] if len(nodes) else np.empty(0, dtype=object),
        "pid": t.pid[rows],
        "tid": t.tid[rows],
        "thread": threads,
        "start_ns": start,
        "dur_ns": dur,
        "self_ns": tree.self_ns[nodes],
        "depth": depth[nodes],
        "parent": parent_names,
        "step": _step_numbers(ctx, _cpu_step_index(ctx, start, start + dur)),
        "input_dims": [recorded(r, "dims") for r in rows],
        "input_types": [recorded(r, "types") for r in rows],
        "row": rows,
    })


def steps(analysis: Any) -> pd.DataFrame:
    """One row per ``ProfilerStep``: ``step``, ``start_ns`` and ``dur_ns`` (its CPU-side
    span), ``device_start_ns`` and ``device_dur_ns`` (the device side, 0 on a CPU trace),
    ``gpu_activities`` launched in it; empty without steps."""
    pd = pandas()
    return pd.DataFrame([{"step": s.number, "start_ns": s.start_ns, "dur_ns": s.dur_ns,
                          "device_start_ns": s.device_start_ns,
                          "device_dur_ns": s.device_dur_ns,
                          "gpu_activities": s.gpu_activities} for s in analysis.steps.steps],
                        columns=["step", "start_ns", "dur_ns", "device_start_ns",
                                 "device_dur_ns", "gpu_activities"])


def launches(ctx: TraceContext) -> pd.DataFrame:
    """One row per runtime call that launched a GPU activity (``cudaLaunchKernel``,
    ``cudaMemcpyAsync``, ...): ``name``, ``tid``, ``start_ns``, ``dur_ns``, ``activity``
    (the kernel's name), ``activity_start_ns``, ``queued_ns`` (from the call's start to
    the activity's: how far ahead the host ran), ``device``, ``stream``, ``step``."""
    pd = pandas()
    t, g = ctx.table, ctx.gpu
    linked = np.flatnonzero(g.launch_row >= 0)
    calls, acts = g.launch_row[linked], g.row[linked]
    order = np.argsort(calls, kind="stable")
    calls, acts, linked = calls[order], acts[order], linked[order]
    start = t.ts_ns[calls]
    return pd.DataFrame({
        "name": _names(ctx, calls),
        "tid": t.tid[calls],
        "start_ns": start,
        "dur_ns": t.dur_ns[calls],
        "activity": _names(ctx, acts),
        "activity_start_ns": t.ts_ns[acts],
        "queued_ns": t.ts_ns[acts] - start,
        "device": t.device[acts].astype(np.int64),
        "stream": t.stream[acts],
        "step": _step_numbers(ctx, step_of_activities(t, g, cpu_steps(t))[linked]),
    })


def idle(analysis: Any) -> pd.DataFrame:
    """The GPU's idle time by cause, as ``profkit analyze`` attributes it: one row per
    (device, stream, cause): ``device``, ``stream`` (<NA>: the device as a whole),
    ``kind`` (the cause: ``launch``, ``sync``, ``dataloader``, ...), ``name`` (the span
    that caused it, "" none), ``idle_ns``."""
    pd = pandas()
    records = [{"device": c.device, "stream": c.stream, "kind": x.kind, "name": x.name,
                "idle_ns": x.ns}
               for c in (*analysis.idle.devices, *analysis.idle.streams) for x in c.causes]
    frame = pd.DataFrame(records, columns=["device", "stream", "kind", "name", "idle_ns"])
    frame["stream"] = frame["stream"].astype("Int64")
    return frame


def recommendations(analysis: Any) -> pd.DataFrame:
    """The rules that fired, as ``profkit analyze`` ranks them, then those held back under
    the minimum gain: ``rule``, ``scope``, ``title`` and ``advice`` (the words every format
    shows), ``measured``, ``threshold``, ``unit``, ``change`` (the what-if change that
    models the advice), ``predicted_gain_pct``, ``held_back``."""
    from profiler_kit.render.wording import rules

    pd = pandas()
    columns = ["rule", "scope", "title", "advice", "measured", "threshold", "unit", "change",
               "predicted_gain_pct", "held_back"]
    records = [{"rule": r.rule, "scope": r.scope, "title": rules.title(r),
                "advice": rules.advice(r), "measured": r.measured, "threshold": r.threshold,
                "unit": r.unit, "change": r.change, "predicted_gain_pct": r.predicted_gain_pct,
                "held_back": held}
               for held, recs in ((False, analysis.recommendations),
                                  (True, analysis.held_back)) for r in recs]
    return pd.DataFrame(records, columns=columns)


def memory(ctx: TraceContext) -> pd.DataFrame:
    """One row per allocation (``bytes`` > 0) or free (< 0) the profiler recorded
    (``profile_memory=True``): ``ts_ns``, ``device`` ("cpu", "cuda:0", ...), ``bytes``,
    ``allocated_bytes`` and ``reserved_bytes`` after it (<NA>: not recorded), ``tid``,
    ``addr``."""
    pd = pandas()
    m = ctx.table.memory
    devices = [("cpu" if int(kind) == 0 else f"cuda:{int(i)}") for kind, i in zip(
        m.device_type, m.device_id, strict=True)]
    return pd.DataFrame({
        "ts_ns": m.ts_ns, "device": devices, "bytes": m.bytes,
        "allocated_bytes": _nullable(m.total_allocated_bytes),
        "reserved_bytes": _nullable(m.total_reserved_bytes),
        "tid": m.tid, "addr": _nullable(m.addr),
    })


def modules(analysis: Any) -> pd.DataFrame:
    """One row per ``nn.Module`` instance the trace names (recorded ``with_modules`` or
    ``with_stack``), parents before children: ``module`` (its path, ``A/B/C``),
    ``depth``, ``calls``, ``host_ns``, ``self_host_ns``, ``device_ns`` (GPU time of its
    forward kernels), ``self_device_ns``, ``backward_device_ns``, ``op_ns`` (CPU op self
    time), ``backward_op_ns``; empty when the trace has none."""
    pd = pandas()
    code = analysis.code
    records: list[dict[str, Any]] = []

    def walk(nodes: Any, prefix: str, depth: int) -> None:
        for n in nodes:
            path = f"{prefix}/{n.name}" if prefix else n.name
            records.append({"module": path, "depth": depth, "calls": n.calls,
                            "host_ns": n.host_ns, "self_host_ns": n.self_host_ns,
                            "device_ns": n.device_ns, "self_device_ns": n.self_device_ns,
                            "backward_device_ns": n.backward_device_ns, "op_ns": n.op_ns,
                            "backward_op_ns": n.backward_op_ns})
            walk(n.children, path, depth + 1)

    if code is not None:
        walk(code.modules, "", 0)
    return pd.DataFrame(records, columns=[
        "module", "depth", "calls", "host_ns", "self_host_ns", "device_ns", "self_device_ns",
        "backward_device_ns", "op_ns", "backward_op_ns"])


def comms(ctx: TraceContext) -> pd.DataFrame:
    """One row per communication event (the collectives' CPU ops and their kernels):
    ``name``, ``on`` ("gpu" or "cpu"), ``device``, ``stream``, ``start_ns``, ``dur_ns``,
    and the arguments the profiler recorded (``Collective name``, ``In msg nelems``,
    ``Group size``, ``Process Group Name``, ... under their trace names)."""
    pd = pandas()
    records = [{"name": c.name, "on": "gpu" if c.device >= 0 else "cpu", "device": c.device,
                "stream": c.stream, "start_ns": c.ts_ns, "dur_ns": c.dur_ns, **c.args}
               for c in ctx.table.comms]
    return pd.DataFrame(records, columns=None if records else
                        ["name", "on", "device", "stream", "start_ns", "dur_ns"])


def counters(ctx: TraceContext) -> pd.DataFrame:
    """One row per counter sample (GPU counters a trace recorded: power, clocks, SM active
    %): ``ts_ns``, ``device`` (-1: not a GPU's), ``series`` (its name in the trace,
    ``"Power (W)"``) and ``value``; empty for a trace without counters."""
    pd = pandas()
    c = ctx.table.counters
    if c is None:
        return pd.DataFrame({"ts_ns": pd.Series(dtype="int64"),
                             "device": pd.Series(dtype="int32"),
                             "series": pd.Series(dtype="object"),
                             "value": pd.Series(dtype="float64")})
    return pd.DataFrame({"ts_ns": c.ts_ns, "device": c.device,
                         "series": [c.names[i] for i in c.series], "value": c.value})
