"""Op- and kernel-level difference between traces: which names were added, removed or changed.

Each trace is first reduced to a :class:`NameProfile`: per CPU op name and per GPU
activity name, the count and exact total time over the profiled steps (CPU ops that
start inside a step, GPU activities launched inside one), plus which op launched which
kernels, and (traces recorded with ``record_shapes=True``) per op name and input
shapes and dtypes. Profiles are then diffed per step, so traces with different step
counts compare. Totals are exact integer sums; per-step values are those sums over the
steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.step_windows import activity_steps, row_steps, step_count
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.analysis.time.hotspots import name_totals
from profiler_kit.trace.table import INPUT_TYPE_SEP, Cat, EventTable

# A name whose count per step is unchanged is "changed" only when its time per step
# moved by more than this share of the baseline's (run-to-run noise stays "same").
CHANGED_SHARE = 0.10


class NameStat(msgspec.Struct, frozen=True):
    """One op or GPU activity name over the window: how often and for how long."""

    name: str
    category: str  # cpu_op / kernel / memcpy / memset
    klass: str = msgspec.field(name="class")
    count: int
    total_ns: int  # sum of durations
    self_ns: int  # CPU ops: minus the time of the ops nested in them; GPU: = total_ns


class LaunchStat(msgspec.Struct, frozen=True):
    """The GPU activities of one name launched by one op name (``op`` empty: not linked)."""

    op: str
    kernel: str
    category: str
    klass: str = msgspec.field(name="class")
    count: int
    total_ns: int


class ShapeStat(msgspec.Struct, frozen=True):
    """One op name with one set of recorded input shapes and dtypes (``input_dims`` and
    ``input_types``: the trace's ``Input Dims`` and ``Input type`` as compact JSON; both
    empty for the instances of the op that have none recorded, and for the ops that only
    make views or allocate, whose shapes the loader does not keep)."""

    name: str
    input_dims: str
    input_types: str
    klass: str = msgspec.field(name="class")
    count: int
    total_ns: int
    self_ns: int

    @property
    def category(self) -> str:
        return "cpu_op"


class NameProfile(msgspec.Struct, frozen=True):
    """What one trace ran, by name, over its steps (``window`` ``"steps"``) or the
    whole trace (``"trace"``, ``steps`` 1) when it has no ``ProfilerStep#`` spans."""

    window: str
    steps: int
    ops: tuple[NameStat, ...]  # largest total first
    kernels: tuple[NameStat, ...]
    launches: tuple[LaunchStat, ...]
    shapes_recorded: bool = False  # the trace has ``Input Dims`` on its ops
    op_shapes: tuple[ShapeStat, ...] = ()  # per (op, input shapes, dtypes); largest first


def name_profile(table: EventTable, tree: OpTree, gpu: GpuActivity, steps: Steps) -> NameProfile:
    """Count and total per op name and per GPU activity name inside the steps."""
    is_op = table.cat[tree.row] == Cat.CPU_OP
    op_nodes = np.flatnonzero(is_op)
    op_nodes = op_nodes[row_steps(table, tree.row[op_nodes], steps) >= 0]
    op_rows = tree.row[op_nodes]
    ops = name_totals(table.names, table.name[op_rows], table.dur_ns[op_rows],
                      tree.own_klass[op_nodes])
    self_sums = _sums(table.name[op_rows], tree.self_ns[op_nodes], len(table.names))
    self_by_name = {table.names[i]: int(self_sums[i]) for i in np.flatnonzero(self_sums).tolist()}

    inside = activity_steps(table, gpu, steps) >= 0
    rows = gpu.row[inside]
    cats = table.cat[rows].astype(np.int64)
    kernels = name_totals(table.names, table.name[rows], table.dur_ns[rows], gpu.klass[inside],
                          cats)
    op_node = gpu.op_node[inside]
    op_name = np.full(len(op_node), -1, dtype=np.int64)
    linked = op_node >= 0
    op_name[linked] = table.name[tree.row[op_node[linked]]]
    return NameProfile(
        window="steps" if steps.steps else "trace",
        steps=step_count(steps),
        ops=tuple(
            NameStat(n.name, "cpu_op", n.klass, n.count, n.total_ns, self_by_name.get(n.name, 0))
            for n in ops
        ),
        kernels=tuple(NameStat(n.name, n.category, n.klass, n.count, n.total_ns, n.total_ns)
                      for n in kernels),
        launches=_launches(table, op_name, table.name[rows], cats, gpu.klass[inside],
                           table.dur_ns[rows]),
        shapes_recorded=bool(table.inputs),
        op_shapes=_shape_stats(table, op_rows, tree.self_ns[op_nodes],
                               {n.name: n.klass for n in ops}),
    )


def _shape_stats(table: EventTable, op_rows: np.ndarray, self_ns: np.ndarray,
                 klass: dict[str, str]) -> tuple[ShapeStat, ...]:
    """Count and totals per (op name, recorded input shapes and dtypes): the raw inputs
    the loader kept, decoded once per distinct value."""
    if not table.inputs or not len(op_rows):
        return ()
    raw_ids: dict[object, int] = {}
    inputs = table.inputs
    recorded = np.flatnonzero(np.isin(op_rows, np.fromiter(inputs, dtype=np.int64,
                                                          count=len(inputs))))
    rows = op_rows[recorded]
    type_col = table.input_type
    interned = type_col[rows].tolist() if type_col is not None else [-1] * len(rows)
    ids = []
    for row, interned_types in zip(rows.tolist(), interned, strict=True):
        raw = inputs[row]
        key = (raw.dims, raw.types or interned_types)  # "Input type": raw, or interned
        k = raw_ids.get(key)
        if k is None:
            k = raw_ids[key] = len(raw_ids) + 1
        ids.append(k)
    shape_of = np.zeros(len(op_rows), dtype=np.int64)  # 0: nothing recorded (or kept)
    shape_of[recorded] = ids
    labels = [("", "")] * (len(raw_ids) + 1)
    encode = msgspec.json.encode
    for (dims, types), k in raw_ids.items():
        if isinstance(types, bytes):
            decoded = _json(types)
        else:
            decoded = table.names[types].split(INPUT_TYPE_SEP) if types >= 0 else None
        labels[k] = (encode(_json(dims)).decode(),
                     encode(decoded).decode() if decoded is not None else "")
    key = table.name[op_rows].astype(np.int64) * (len(raw_ids) + 1) + shape_of
    uniq, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.reshape(-1)
    count = np.bincount(inverse, minlength=len(uniq))
    total = _sums(inverse, table.dur_ns[op_rows], len(uniq))
    own = _sums(inverse, self_ns, len(uniq))
    merged: dict[tuple[str, str, str], list[int]] = {}  # equal JSON written differently
    for i in range(len(uniq)):
        name_id, k = divmod(int(uniq[i]), len(raw_ids) + 1)
        acc = merged.setdefault((table.names[name_id], *labels[k]), [0, 0, 0])
        acc[0] += int(count[i])
        acc[1] += int(total[i])
        acc[2] += int(own[i])
    stats = [ShapeStat(name, dims, types, klass.get(name, "other"), c, t, o)
             for (name, dims, types), (c, t, o) in merged.items()]
    stats.sort(key=lambda s: (-s.total_ns, s.name, s.input_dims, s.input_types))
    return tuple(stats)


def _json(raw: bytes) -> object:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return raw.decode(errors="replace")


def _sums(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    return np.rint(np.bincount(groups.astype(np.int64), weights=values, minlength=n)).astype(
        np.int64)


def _launches(table: EventTable, op_name: np.ndarray, kernel_name: np.ndarray, cat: np.ndarray,
              klass: np.ndarray, dur: np.ndarray) -> tuple[LaunchStat, ...]:
    """Count and total per (launching op name, activity name, category)."""
    if not len(kernel_name):
        return ()
    n = len(table.names) + 1
    key = ((op_name.astype(np.int64) + 1) * n + kernel_name.astype(np.int64)) * 16 + cat
    uniq, inverse = dense_ids(key)
    inverse = inverse.reshape(-1)
    count = np.bincount(inverse, minlength=len(uniq))
    total = _sums(inverse, dur, len(uniq))
    first = np.full(len(uniq), len(inverse), dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(len(inverse)))
    labels = {int(Cat.KERNEL): "kernel", int(Cat.MEMCPY): "memcpy", int(Cat.MEMSET): "memset"}
    out = []
    for i in np.argsort(-total, kind="stable").tolist():
        k, c = divmod(int(uniq[i]), 16)
        op_id, kid = divmod(k, n)
        out.append(LaunchStat(
            op=table.names[op_id - 1] if op_id > 0 else "",
            kernel=table.names[kid],
            category=labels.get(c, "kernel"),
            klass=classify.CLASSES[int(klass[first[i]])],
            count=int(count[i]),
            total_ns=int(total[i]),
        ))
    return tuple(out)


class DiffRow(msgspec.Struct, frozen=True):
    """One name across the traces; tuples are indexed like the comparison's labels.

    ``status`` per trace: ``baseline``, ``added`` (not in the baseline), ``removed`` (not
    in this trace), ``changed`` (count per step differs, or time per step moved by more
    than :data:`CHANGED_SHARE`), ``same``, or ``absent`` (in neither).
    """

    name: str
    category: str
    klass: str = msgspec.field(name="class")
    counts: tuple[int, ...]
    totals_ns: tuple[int, ...]
    count_per_step: tuple[float, ...]
    ns_per_step: tuple[float, ...]
    delta_ns_per_step: tuple[float | None, ...]  # None at the baseline
    status: tuple[str, ...]
    self_ns_per_step: tuple[float, ...]  # CPU ops: without nested ops; GPU: = ns_per_step
    launched: tuple[DiffRow, ...] = ()  # for an op: the GPU activities it launched
    input_dims: str = ""  # rows by input shape: the op's recorded shapes, compact JSON
    input_types: str = ""  # and its dtypes ("" where the op had none recorded)

    @property
    def change_ns(self) -> float:
        """The largest absolute change per step against the baseline."""
        return max((abs(d) for d in self.delta_ns_per_step if d is not None), default=0.0)


class OpDiff(msgspec.Struct, frozen=True):
    """Every op and GPU activity name of the traces, largest change per step first."""

    labels: tuple[str, ...]
    baseline: int
    windows: tuple[str, ...]  # "steps" or "trace", per trace
    steps: tuple[int, ...]  # what each trace's totals are divided by
    ops: tuple[DiffRow, ...]
    kernels: tuple[DiffRow, ...]
    shapes_recorded: tuple[bool, ...] = ()  # per trace: it has input shapes
    # every (op, input shapes, dtypes) when every trace recorded shapes, else empty
    op_shapes: tuple[DiffRow, ...] = ()


def op_diff(labels: Sequence[str], profiles: Sequence[NameProfile], baseline: int) -> OpDiff:
    """Diff name profiles against the baseline's, per step."""
    steps = tuple(p.steps for p in profiles)
    ops = _diff_rows([{(s.name, s.category): s for s in p.ops} for p in profiles], steps,
                     baseline)
    kernels = _diff_rows([{(s.name, s.category): s for s in p.kernels} for p in profiles],
                         steps, baseline)
    launched = _launched_by_op(profiles, steps, baseline)
    ops = tuple(msgspec.structs.replace(r, launched=launched.get(r.name, ())) for r in ops)
    recorded = tuple(p.shapes_recorded for p in profiles)
    shapes: tuple[DiffRow, ...] = ()
    if all(recorded):
        shapes = _diff_rows([{(s.name, s.category, s.input_dims, s.input_types): s
                              for s in p.op_shapes} for p in profiles], steps, baseline)
    return OpDiff(
        labels=tuple(labels),
        baseline=baseline,
        windows=tuple(p.window for p in profiles),
        steps=steps,
        ops=ops,
        kernels=kernels,
        shapes_recorded=recorded,
        op_shapes=shapes,
    )


def _launched_by_op(profiles: Sequence[NameProfile], steps: tuple[int, ...],
                    baseline: int) -> dict[str, tuple[DiffRow, ...]]:
    per_op: dict[str, list[dict[tuple[str, str], LaunchStat]]] = {}
    for i, p in enumerate(profiles):
        for launch in p.launches:
            if not launch.op:
                continue
            tables = per_op.setdefault(launch.op, [{} for _ in profiles])
            tables[i][(launch.kernel, launch.category)] = launch
    return {op: _diff_rows(tables, steps, baseline) for op, tables in per_op.items()}


def _diff_rows(tables: Sequence[dict[tuple[str, ...], NameStat | LaunchStat | ShapeStat]],
               steps: tuple[int, ...], baseline: int) -> tuple[DiffRow, ...]:
    keys = sorted({k for t in tables for k in t})
    rows = []
    for key in keys:
        stats = [t.get(key) for t in tables]
        present = [s for s in stats if s is not None]
        counts = tuple(s.count if s is not None else 0 for s in stats)
        totals = tuple(s.total_ns if s is not None else 0 for s in stats)
        per_count = tuple(c / n for c, n in zip(counts, steps, strict=True))
        per_ns = tuple(t / n for t, n in zip(totals, steps, strict=True))
        base_count, base_ns = per_count[baseline], per_ns[baseline]
        deltas = tuple(None if i == baseline else v - base_ns for i, v in enumerate(per_ns))
        status = tuple(
            "baseline" if i == baseline
            else _status(base_count, base_ns, per_count[i], per_ns[i])
            for i in range(len(stats))
        )
        klass = max(present, key=lambda s: s.total_ns).klass
        own = tuple((getattr(s, "self_ns", s.total_ns) if s is not None else 0) / n
                    for s, n in zip(stats, steps, strict=True))
        rows.append(DiffRow(key[0], key[1], klass, counts, totals, per_count, per_ns, deltas,
                            status, own, (), *key[2:]))
    rows.sort(key=lambda r: (-r.change_ns, -max(r.ns_per_step), r.name, r.input_dims,
                             r.input_types))
    return tuple(rows)


def status_against(row: DiffRow, index: int, ref: int) -> str:
    """``row``'s status in trace ``index`` against trace ``ref`` rather than the baseline
    (``added``, ``removed``, ``changed``, ``same`` or ``absent``, as ``status``)."""
    return _status(row.count_per_step[ref], row.ns_per_step[ref], row.count_per_step[index],
                   row.ns_per_step[index])


def _status(base_count: float, base_ns: float, count: float, ns: float) -> str:
    if base_count == 0 and count == 0:
        return "absent"
    if base_count == 0:
        return "added"
    if count == 0:
        return "removed"
    if not np.isclose(count, base_count, rtol=1e-9, atol=0.0):
        return "changed"
    if abs(ns - base_ns) > CHANGED_SHARE * base_ns:
        return "changed"
    return "same"
