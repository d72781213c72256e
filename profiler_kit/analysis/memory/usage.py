"""Memory: peak allocated/reserved per device from ``[memory]`` events; the top allocating ops.

What "allocated" counts differs between the CPU and a GPU: see
:mod:`profiler_kit.analysis.memory.allocated`.

An allocation belongs to the innermost CPU op running on its thread at that time.
A trace recorded without ``profile_memory`` has no memory events: ``recorded`` is
False and nothing else is claimed.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core.arrays import dense_ids
from profiler_kit.analysis.core.op_tree import OpTree, innermost_at, thread_keys_for_tid
from profiler_kit.analysis.memory.allocated import allocated_after_each, counts_before_trace
from profiler_kit.trace.table import EventTable

_DEVICE_TYPES = {0: "cpu", 1: "cuda"}


class DeviceMemory(msgspec.Struct, frozen=True):
    device: str  # "cpu", "cuda:0", ...
    device_id: int
    peak_allocated_bytes: int  # see profiler_kit.analysis.memory.allocated for what it counts
    peak_reserved_bytes: int | None  # None when the trace does not say
    allocations: int
    allocated_bytes: int  # sum of all allocation sizes
    capacity_bytes: int | None  # deviceProperties totalGlobalMem when known
    # False: only bytes allocated in the trace (the CPU); True: the allocator's whole total
    counts_before_trace: bool = True


class OpAllocation(msgspec.Struct, frozen=True):
    name: str
    allocations: int
    allocated_bytes: int


class Memory(msgspec.Struct, frozen=True):
    recorded: bool
    devices: tuple[DeviceMemory, ...]
    top_ops: tuple[OpAllocation, ...]


def device_label(device_type: int, device_id: int) -> str:
    kind = _DEVICE_TYPES.get(device_type, f"device{device_type}")
    return kind if kind == "cpu" else f"{kind}:{device_id}"


def capacity_of(table: EventTable, device_id: int) -> int | None:
    """``totalGlobalMem`` of a GPU from ``deviceProperties`` (by id; the only one if just one)."""
    props = table.meta.device_properties
    for p in props:
        if p.get("id") == device_id and isinstance(p.get("totalGlobalMem"), int):
            return int(p["totalGlobalMem"])
    if len(props) == 1 and isinstance(props[0].get("totalGlobalMem"), int):
        return int(props[0]["totalGlobalMem"])
    return None


def analyze_memory(table: EventTable, tree: OpTree, top: int = 10) -> Memory:
    """Peaks per device and the ops that allocated most bytes."""
    mem = table.memory
    if not len(mem):
        return Memory(recorded=False, devices=(), top_ops=())
    order = np.argsort(mem.ts_ns, kind="stable")
    dtype_, did = mem.device_type[order], mem.device_id[order]
    nbytes, alloc_total = mem.bytes[order], mem.total_allocated_bytes[order]
    reserved, addr = mem.total_reserved_bytes[order], mem.addr[order]
    devices = []
    by_device = np.lexsort((did, dtype_))
    dt_sorted, di_sorted = dtype_[by_device], did[by_device]
    first = np.ones(len(by_device), dtype=bool)
    first[1:] = (dt_sorted[1:] != dt_sorted[:-1]) | (di_sorted[1:] != di_sorted[:-1])
    for dt, di in zip(dt_sorted[first].tolist(), di_sorted[first].tolist(), strict=True):
        sel = (dtype_ == dt) & (did == di)
        totals = alloc_total[sel]
        peak = int(allocated_after_each(dt == 0, nbytes[sel], totals, addr[sel]).max())
        res = reserved[sel]
        positive = nbytes[sel] > 0
        devices.append(
            DeviceMemory(
                device=device_label(int(dt), int(di)),
                device_id=int(di),
                peak_allocated_bytes=peak,
                counts_before_trace=counts_before_trace(dt == 0, totals),
                # the CPU allocator reports 0 reserved: that says nothing
                peak_reserved_bytes=int(res.max()) if (res > 0).any() else None,
                allocations=int(positive.sum()),
                allocated_bytes=int(nbytes[sel][positive].sum()),
                capacity_bytes=capacity_of(table, int(di)) if dt != 0 else None,
            )
        )

    allocs = np.flatnonzero(mem.bytes > 0)
    top_ops: list[OpAllocation] = []
    if len(allocs) and len(tree):
        keys = thread_keys_for_tid(tree, mem.tid[allocs])
        node = innermost_at(tree, keys, mem.ts_ns[allocs])
        op = np.where(node >= 0, tree.op_node[np.maximum(node, 0)], -1)
        linked = op >= 0
        names = table.name[tree.row[op[linked]]]
        sizes = mem.bytes[allocs][linked]
        if len(names):
            uniq, inverse = dense_ids(names)
            inverse = inverse.reshape(-1)
            total = np.rint(np.bincount(inverse, weights=sizes)).astype(np.int64)
            count = np.bincount(inverse)
            for i in np.argsort(-total, kind="stable")[:top].tolist():
                top_ops.append(OpAllocation(table.names[int(uniq[i])], int(count[i]),
                                            int(total[i])))
    return Memory(recorded=True, devices=tuple(devices), top_ops=tuple(top_ops))
