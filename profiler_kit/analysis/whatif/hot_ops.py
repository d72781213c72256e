"""The ops a trace spends its time in, grouped so that each distinct op can be rebuilt from
its recorded shapes and timed once (:mod:`profiler_kit.measure.op_replay`).

An op here is a *top-level* op: the outermost ``aten::`` op of its calls
(``aten::conv2d``, not the ``aten::convolution`` it calls; in the backward, the
``aten::convolution_backward`` inside the autograd engine's ``evaluate_function``), or an
op of another kind with no ``aten::`` op beneath it (a custom op). Its time is its whole
span on the host and the GPU time of every kernel launched beneath it. Calls with the
same name, input shapes, dtypes, strides and scalar arguments form one group.

A *chain* (:func:`elementwise_chains`) is a run of elementwise top-level ops called one
after another on one thread, each on a tensor of the shape the one before it took: what
``torch.compile`` fuses into one kernel. Chains with the same ops and inputs form one.
Torch-free: the trace alone says all of this.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.trace.table import Cat, EventTable

HOT_SHARE = 0.9  # the groups that hold this share of the op time are the hot ones
TENSOR_TYPES = {"float": "float32", "double": "float64", "c10::Half": "float16",
                "c10::BFloat16": "bfloat16", "long int": "int64", "int": "int32",
                "bool": "bool", "unsigned char": "uint8", "signed char": "int8",
                "short int": "int16"}
SCALAR_TYPES = {"Scalar", "ScalarList", "int", "bool", "float", "double", "str",
                "Device", "ScalarType", "GenericList", "MemoryFormat", "Layout"}


class OpGroup(msgspec.Struct, frozen=True):
    """Calls of one op with the same recorded inputs. ``key`` names the group in files
    (stable across processes); ``reason`` is why it cannot be rebuilt ("" when it can)."""

    key: str
    name: str
    dims: list
    types: list
    strides: list
    concrete: list
    count: int
    host_ns: int  # the calls' whole spans on the host
    device_ns: int  # GPU time of the kernels launched beneath them
    reason: str = ""


class HotOps(msgspec.Struct, frozen=True):
    """The groups that hold ``HOT_SHARE`` of the trace's op time (by device time on a GPU
    trace, host time on a CPU one), hottest first (their calls' rows: :func:`group_rows`)."""

    groups: list[OpGroup]
    total_ns: int  # the op time of every top-level op
    by_device: bool

    def weight(self, g: OpGroup) -> int:
        return g.device_ns if self.by_device else g.host_ns


def top_level_ops(table: EventTable, tree: OpTree) -> np.ndarray:
    """Per tree node, the top-level op it runs under (itself where it is one; -1 where it
    is under none). A top-level op is the outermost ``aten::`` op on its path; an op of
    another kind counts only where no ``aten::`` op runs beneath it (a custom op), so the
    autograd engine's ``evaluate_function`` ranges give way to the backward ops inside."""
    n = len(tree)
    is_op = table.cat[tree.row] == Cat.CPU_OP
    aten_ids = [i for i, name in enumerate(table.names) if name.startswith("aten::")]
    is_aten = is_op & np.isin(table.name[tree.row], aten_ids)
    has_aten = is_aten.copy()
    parent = tree.parent.tolist()
    for i in range(n - 1, -1, -1):  # children come after their parents
        if has_aten[i] and parent[i] >= 0:
            has_aten[parent[i]] = True
    top = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        p = parent[i]
        up = int(top[p]) if p >= 0 else -1
        if up >= 0:
            top[i] = up
        elif is_aten[i] or (is_op[i] and not has_aten[i]):
            top[i] = i
    return top


def _key(table: EventTable, row: int) -> tuple[str, tuple]:
    """The group key of one call (see :func:`hot_ops`) and what it is made of."""
    inputs = table.op_inputs(row)
    name = table.name_of(row)
    parts = (name, inputs.dims, inputs.types, inputs.strides, inputs.concrete) \
        if inputs else (name, [], [], [], [])
    return _short_key(msgspec.json.encode(parts).decode()), parts


def group_rows(table: EventTable, tree: OpTree, top: np.ndarray | None = None
               ) -> dict[str, np.ndarray]:
    """Every top-level op's table rows, by group key (``top``: :func:`top_level_ops`, made
    here where not given)."""
    top = top_level_ops(table, tree) if top is None else top
    out: dict[str, list[int]] = {}
    for i in np.flatnonzero(top == np.arange(len(tree))).tolist():
        r = int(tree.row[i])
        out.setdefault(_key(table, r)[0], []).append(r)
    return {k: np.array(v, dtype=np.int64) for k, v in out.items()}


def hot_ops(table: EventTable, tree: OpTree, gpu: GpuActivity | None,
            share: float = HOT_SHARE) -> HotOps:
    top = top_level_ops(table, tree)
    nodes = np.flatnonzero(top == np.arange(len(tree)))
    device = np.zeros(len(tree), dtype=np.int64)
    if gpu is not None and len(gpu):
        owner = np.where(gpu.node >= 0, top[np.maximum(gpu.node, 0)], -1)
        linked = owner >= 0
        np.add.at(device, owner[linked], table.dur_ns[gpu.row[linked]])
    by_device = bool(device.sum() > 0)
    groups: dict[str, list] = {}
    for i in nodes.tolist():
        key, parts = _key(table, int(tree.row[i]))
        g = groups.setdefault(key, [parts, 0, 0, 0])
        g[1] += 1
        g[2] += int(tree.end_ns[i] - tree.start_ns[i])
        g[3] += int(device[i])
    made = [OpGroup(k, p[0], p[1], p[2], p[3], p[4], count, host, dev,
                    rebuild_reason(p[0], p[1], p[2]))
            for k, (p, count, host, dev) in groups.items()]
    weights = [g.device_ns if by_device else g.host_ns for g in made]
    order = sorted(range(len(made)), key=lambda i: -weights[i])
    total = sum(weights)
    hot, acc = [], 0
    for i in order:
        if acc >= share * total or not weights[i]:
            break
        hot.append(made[i])
        acc += weights[i]
    return HotOps(hot, total, by_device)


def _short_key(key: str) -> str:
    import hashlib

    return hashlib.sha1(key.encode()).hexdigest()[:12]


def rebuild_reason(name: str, dims: list, types: list) -> str:
    """Why an op cannot be rebuilt from what the trace recorded ("" when it can)."""
    if not name.startswith("aten::"):
        return "not an aten op (a custom op or a Python range): its inputs are not described"
    if not dims and not types:
        return "the trace recorded no inputs for it (record_shapes was off)"
    for d, t in zip(dims, types, strict=False):
        if t in TENSOR_TYPES or t == "" or t in SCALAR_TYPES:
            continue
        if t == "TensorList" or (isinstance(d, list) and d and isinstance(d[0], list)):
            continue
        return f"an input of type {t!r} it cannot make"
    return ""


MAX_CHAINS = 5  # the hottest chains are compiled and timed (a compile takes seconds)


class OpChain(msgspec.Struct, frozen=True):
    """Calls of one chain of elementwise ops (``members``, in call order; each on the
    result of the one before, as ``torch.compile`` would fuse them). ``key`` names it;
    ``count`` its calls; times as :class:`OpGroup`'s, summed over its members."""

    key: str
    members: list[OpGroup]
    count: int
    host_ns: int
    device_ns: int
    reason: str = ""


def _chain_link(table: EventTable, row: int) -> tuple[str, list] | None:
    """(group key, first input's shape) of a call that can be a link of a chain: an
    elementwise aten op whose first input is a recorded float tensor; else None."""
    name = table.name_of(row)
    if not name.startswith("aten::") or classify.classify_op(name) != classify.ELEMENTWISE:
        return None
    inputs = table.op_inputs(row)
    if inputs is None or not inputs.dims or not inputs.types:
        return None
    first, kind = inputs.dims[0], inputs.types[0]
    if not isinstance(first, list) or not first or TENSOR_TYPES.get(kind, "").startswith(
            ("int", "uint", "bool")) or kind not in TENSOR_TYPES:
        return None
    return _key(table, row)[0], first


def chain_instances(table: EventTable, tree: OpTree, top: np.ndarray | None = None
                    ) -> dict[str, list[np.ndarray]]:
    """Every chain's calls (each the table rows of its members, in order), by chain key:
    runs of two or more consecutive top-level elementwise ops of one thread whose first
    inputs have one shape."""
    top = top_level_ops(table, tree) if top is None else top
    nodes = np.flatnonzero(top == np.arange(len(tree)))
    out: dict[str, list[np.ndarray]] = {}
    run: list[tuple[int, str]] = []
    shape: list | None = None

    def close() -> None:
        if len(run) >= 2:
            key = _short_key("|".join(k for _, k in run))
            out.setdefault(key, []).append(np.array([r for r, _ in run], dtype=np.int64))

    thread = None
    for i in nodes.tolist():  # by thread, then start: the tree's order
        r = int(tree.row[i])
        link = _chain_link(table, r)
        same = link is not None and int(tree.thread[i]) == thread and link[1] == shape
        if not same:
            close()
            run = []
        if link is not None:
            run.append((r, link[0]))
            shape = link[1]
        thread = int(tree.thread[i])
    close()
    return out


def elementwise_chains(table: EventTable, tree: OpTree, gpu: GpuActivity | None,
                       most: int = MAX_CHAINS) -> list[OpChain]:
    """The ``most`` chains that hold the most op time (device time on a GPU trace), with
    their members' groups."""
    top = top_level_ops(table, tree)
    calls = chain_instances(table, tree, top)
    if not calls:
        return []
    node_of_row = {int(r): i for i, r in enumerate(tree.row.tolist())}
    device = np.zeros(len(tree), dtype=np.int64)
    if gpu is not None and len(gpu):
        owner = np.where(gpu.node >= 0, top[np.maximum(gpu.node, 0)], -1)
        linked = owner >= 0
        np.add.at(device, owner[linked], table.dur_ns[gpu.row[linked]])
    chains = []
    for key, instances in calls.items():
        members = []
        for r in instances[0].tolist():
            k, parts = _key(table, r)
            members.append(OpGroup(k, parts[0], parts[1], parts[2], parts[3], parts[4],
                                   len(instances), 0, 0, rebuild_reason(parts[0], parts[1],
                                                                        parts[2])))
        rows = np.concatenate(instances)
        nodes = [node_of_row[int(r)] for r in rows.tolist()]
        host = int((tree.end_ns[nodes] - tree.start_ns[nodes]).sum())
        why = next((f"{m.name}: {m.reason}" for m in members if m.reason), "")
        chains.append(OpChain(key, members, len(instances), host, int(device[nodes].sum()),
                              why))
    by_device = any(c.device_ns for c in chains)
    chains.sort(key=lambda c: -(c.device_ns if by_device else c.host_ns))
    return chains[:most]
