"""The GPU's copies (memcpy) by direction and memory kind, and the ops that asked for them.

A copy between the host and a GPU from or to *pageable* host memory is staged through a
pinned buffer by the driver, and one to pageable memory returns only when done: the host
waits, and the copy cannot overlap the GPU's work. Kineto names each memcpy with its
direction and the memory on either side (``Memcpy HtoD (Pageable -> Device)``), so the
trace says which copies those are, how long they took on the GPU, and which op launched
them (``aten::copy_`` from ``.to(device)``, ``aten::_local_scalar_dense`` from
``.item()``). Figures in ``window`` (see :mod:`profiler_kit.analysis.trace_analysis`).
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec
import numpy as np

from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.trace.table import Cat, EventTable

# "Memcpy HtoD (Pageable -> Device)"; ROCm writes "(Host -> Device)"
_NAME = re.compile(r"Memcpy (\w+) \((\w+) -> (\w+)\)")
PAGEABLE = "Pageable"  # in a copy's name (``Memcpy DtoH (Device -> Pageable)``)
TOP_OPS = 3  # the launching ops named per kind


class CopyKind(msgspec.Struct, frozen=True):
    """The copies of one direction between two kinds of memory."""

    direction: str  # "HtoD", "DtoH", "DtoD", "PtoP" (as Kineto names it; the name if odd)
    source: str  # "Pageable", "Pinned", "Device", "Host" (ROCm), "" where unnamed
    destination: str
    count: int
    total_ns: int  # their GPU time, summed
    max_ns: int
    ops: tuple[tuple[str, int], ...]  # the launching ops by count, most first (TOP_OPS)

    @property
    def pageable(self) -> bool:
        return PAGEABLE in (self.source, self.destination)


class Copies(msgspec.Struct, frozen=True):
    """Every memcpy in the window, by kind, most time first."""

    kinds: tuple[CopyKind, ...]
    steps: int  # the steps the window spans (0: the window is the whole trace)

    @property
    def pageable(self) -> tuple[CopyKind, ...]:
        return tuple(k for k in self.kinds if k.pageable)


def host_copies(table: EventTable, gpu: GpuActivity, in_steps: np.ndarray | None,
                steps: int) -> Copies | None:
    """The memcpy activities of ``gpu`` (those ``in_steps`` where given) by kind (None: the
    window holds none)."""
    sel = table.cat[gpu.row] == Cat.MEMCPY
    if in_steps is not None:
        sel &= in_steps
    if not sel.any():
        return None
    rows, op_rows = gpu.row[sel], gpu.op_row[sel]
    found: dict[tuple[str, str, str], list[int]] = {}
    for i, name in enumerate(table.names[n] for n in table.name[rows].tolist()):
        found.setdefault(_kind(name), []).append(i)
    kinds = []
    for (direction, source, destination), members in found.items():
        durs = table.dur_ns[rows[members]]
        ops = Counter(table.names[table.name[r]] for r in op_rows[members].tolist() if r >= 0)
        kinds.append(CopyKind(direction, source, destination, len(members), int(durs.sum()),
                              int(durs.max()), tuple(ops.most_common(TOP_OPS))))
    kinds.sort(key=lambda k: (-k.total_ns, k.direction, k.source, k.destination))
    return Copies(tuple(kinds), steps if in_steps is not None else 0)


def _kind(name: str) -> tuple[str, str, str]:
    m = _NAME.fullmatch(name)
    return (m.group(1), m.group(2), m.group(3)) if m else (name, "", "")
