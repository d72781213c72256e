"""Which events of a trace are communication calls, and what each one moved.

Recent NCCL kernels say it all in their args (``Collective name``, ``In msg nelems``,
``dtype``, ``Process Group Name``). Others say nothing, and the CPU spans open around
their launch are asked instead (kernel -> runtime launch by correlation id -> the
communication spans enclosing it, innermost first):

- older NCCL kernels (``ncclKernel_AllReduce_RING_LL_Sum_float``, ``ncclDevKernel_*``),
  and ``ncclKernel_SendRecv_*``, which NCCL also runs for all-reduces and all-to-alls:
  the type is the enclosing span's (``nccl:all_reduce``, ``c10d::alltoall_base_``);
- kernels of collectives called through custom ops (``symm_mem::multimem_all_reduce_``
  under ``vllm::all_reduce``, ``_c10d_functional::all_reduce``): any kernel whose own
  name says it communicates, or that such an op launches itself.

Sizes: ``In``/``Out msg nelems`` x ``dtype`` (kernel args, ``record_param_comms``) where
recorded, else the spans' ``Input Dims`` x ``Input type``: all tensors of a backend's
span (``nccl:all_reduce``, ``gloo:all_reduce``), the first tensor (the input) of a
custom op or ``record_param_comms``, none of a ``c10d::`` op (its output comes first).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import distinct, member
from profiler_kit.analysis.core.collective_kinds import OTHER, collective_kind
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.jobs.bandwidth import dtype_bytes
from profiler_kit.trace.comms import CommEvent
from profiler_kit.trace.table import Cat, EventTable

CPU_BACKENDS = ("gloo:", "mpi:", "ucc:")
_BACKEND_SPANS = ("nccl:", "rccl:", *CPU_BACKENDS)
_GPU_KERNELS = ("nccl", "rccl")
# args that say where a call belongs, taken from the innermost event that has them
GROUP_KEYS = ("Process Group Name", "Process Group Ranks", "Process Group Description",
              "Group size", "Seq")


class CallSource(msgspec.Struct, frozen=True):
    """One communication call as the trace describes it (before it becomes a ``Call``)."""

    name: str  # the kernel's or the backend span's own name
    start_ns: int
    dur_ns: int
    kind: str  # bandwidth.collective_kind
    in_bytes: int | None
    out_bytes: int | None
    dtype: str | None
    group: dict[str, Any]  # the GROUP_KEYS found, under their trace names
    row: int  # table row (-1 when not known)
    described_by: str  # the event whose name or args gave the type


def gpu_calls(table: EventTable, tree: OpTree, gpu: GpuActivity) -> list[CallSource]:
    """The communication kernels of a trace, in start order, each described."""
    is_kernel = table.cat[gpu.row] == Cat.KERNEL
    own = _kernel_args(table)
    comm = classify.CLASS_INDEX[classify.COMMUNICATION]
    other = classify.CLASS_INDEX[classify.OTHER]
    uniq = distinct(table.name[gpu.row[is_kernel]])
    by_name = np.zeros(len(table.names), dtype=bool)
    by_name[uniq] = [table.names[int(u)].lower().startswith(_GPU_KERNELS) for u in uniq]
    candidate = is_kernel & (by_name[table.name[gpu.row]] | (gpu.name_klass == comm))
    # kernels a collective op launches itself (not through an aten op inside it)
    launched = is_kernel & (gpu.op_row >= 0) & np.isin(gpu.name_klass, [comm, other])
    if launched.any():
        op_names = table.name[gpu.op_row[launched]]
        ids = distinct(op_names)
        ok = {int(i) for i in ids if _collective_op(table.names[int(i)])}
        idx = np.flatnonzero(launched)
        candidate[idx[np.isin(op_names, list(ok))]] = True
    if own:  # kernels a communication event of the trace names (by start, stream, id)
        maybe = np.flatnonzero(is_kernel & member(table.ts_ns[gpu.row], [k[0] for k in own]))
        rows = gpu.row[maybe]
        keys = zip(table.ts_ns[rows].tolist(), table.stream[rows].tolist(),
                   table.correlation[rows].tolist(), strict=True)
        candidate[maybe] = [k in own for k in keys]
    spans = _span_args(table)
    out = []
    for j in np.flatnonzero(candidate).tolist():
        row = int(gpu.row[j])
        key = (int(table.ts_ns[row]), int(table.stream[row]), int(table.correlation[row]))
        args = own.get(key, {})
        chain = _enclosing(table, tree, int(gpu.node[j]), spans)
        out.append(_describe(table.name_of(row), int(table.ts_ns[row]),
                             int(table.dur_ns[row]), row, args, chain))
    return out


def cpu_calls(table: EventTable) -> list[CallSource]:
    """The backend spans of a CPU-only trace (``gloo:all_reduce``, ``gloo:send``)."""
    return [_describe(c.name, c.ts_ns, c.dur_ns, -1, {}, [(c.name, c.args, "all")])
            for c in table.comms if c.cat != Cat.KERNEL and c.name.startswith(CPU_BACKENDS)]


def _describe(name: str, start: int, dur: int, row: int, args: dict[str, Any],
              chain: list[tuple[str, dict[str, Any], str]]) -> CallSource:
    """The call's type, sizes and group from its own args, then from ``chain``
    (the spans around it, innermost first: name, args, which tensors count)."""
    kind, by = OTHER, name
    if "Collective name" in args:
        kind = collective_kind(str(args["Collective name"]))
    else:
        for span, span_args, _ in chain:
            if "Collective name" in span_args:
                kind, by = collective_kind(str(span_args["Collective name"])), span
            elif (k := collective_kind(span)) != OTHER:
                kind, by = k, span
            if kind != OTHER:
                break
        else:
            kind = collective_kind(name)
    # the first event that gives both buffers, else the first that gives one
    in_b = out_b = dtype = None
    for source, rule in ((args, "all"), *((a, r) for _, a, r in chain)):
        i, o, d = _buffers(source, rule)
        if i is not None and o is not None:
            in_b, out_b, dtype = i, o, d
            break
        if in_b is None and out_b is None and (i is not None or o is not None):
            in_b, out_b, dtype = i, o, d
    group: dict[str, Any] = {}
    for source in (args, *(a for _, a, _ in chain)):
        for key in GROUP_KEYS:
            if key in source and key not in group:
                group[key] = source[key]
    return CallSource(name, start, dur, kind, in_b, out_b, dtype, group, row, by)


def _enclosing(table: EventTable, tree: OpTree, node: int,
               spans: dict[tuple[int, int, int, int, str], dict[str, Any]]
               ) -> list[tuple[str, dict[str, Any], str]]:
    """The communication spans around a launch (``node``: the innermost range open at
    it), innermost first, up to the first span that does not communicate."""
    out = []
    while node >= 0:
        row = int(tree.row[node])
        name = table.name_of(row)
        if classify.classify_op(name) != classify.COMMUNICATION:
            break
        key = (int(table.ts_ns[row]), int(table.dur_ns[row]), int(table.pid[row]),
               int(table.tid[row]), name)
        args = spans.get(key)
        if args is None:  # a custom op: its recorded inputs
            inputs = table.op_inputs(row) if table.cat[row] == Cat.CPU_OP else None
            args = {} if inputs is None else {"Input Dims": inputs.dims,
                                              "Input type": inputs.types}
        out.append((name, args, _rule(name)))
        node = int(tree.parent[node])
    return out


def _rule(name: str) -> str:
    """Which recorded tensors make a span's message: all, the first (the input), the
    output then the input (``c10d::_allgather_base_``, ``c10d::alltoall_base_``), none."""
    if name.startswith(_BACKEND_SPANS):
        return "all"
    if name.startswith("c10d::"):
        return "out_in" if name.endswith("_base_") else "none"
    return "first"


def _collective_op(name: str) -> bool:
    """A CPU op that is one collective (``vllm::all_reduce``, ``symm_mem::...``)."""
    return (classify.classify_op(name) == classify.COMMUNICATION
            and collective_kind(name) != OTHER)


def _kernel_args(table: EventTable) -> dict[tuple[int, int, int], dict[str, Any]]:
    """Args of the kernels the loader kept, by (start, stream, correlation)."""
    return {(c.ts_ns, c.stream, c.correlation): c.args for c in table.comms
            if c.cat == Cat.KERNEL}


def _span_args(table: EventTable) -> dict[tuple[int, int, int, int, str], dict[str, Any]]:
    return {_span_key(c): c.args for c in table.comms if c.cat != Cat.KERNEL}


def _span_key(c: CommEvent) -> tuple[int, int, int, int, str]:
    return (c.ts_ns, c.dur_ns, c.pid, c.tid, c.name)


def _buffers(args: dict[str, Any], rule: str) -> tuple[int | None, int | None, str | None]:
    """Input and output bytes and the dtype name, from whatever the args give."""
    dtype = args.get("dtype")
    width = dtype_bytes(dtype)
    n_in, n_out = _int(args.get("In msg nelems")), _int(args.get("Out msg nelems"))
    if width is not None and (n_in is not None or n_out is not None):
        return (None if n_in is None else n_in * width,
                None if n_out is None else n_out * width, str(dtype))
    dims, types = args.get("Input Dims"), args.get("Input type")
    if rule != "none" and isinstance(dims, list) and isinstance(types, list):
        tensors = [(math.prod(d) * w, str(t)) for d, t in zip(dims, types, strict=False)
                   if (w := dtype_bytes(t)) is not None and isinstance(d, list)
                   and all(isinstance(x, int) for x in d)]
        if rule == "out_in" and len(tensors) >= 2:
            return tensors[1][0], tensors[0][0], tensors[1][1]
        if rule == "first" and tensors:
            return tensors[0][0], None, tensors[0][1]
        if rule == "all" and tensors:
            return sum(b for b, _ in tensors), None, tensors[0][1]
    return None, None, dtype if isinstance(dtype, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
