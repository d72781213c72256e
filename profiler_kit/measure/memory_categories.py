"""Memory by category (parameters, gradients, activations, ...) over the profiled steps.

PyTorch's memory profiler (the machinery behind ``prof.export_memory_timeline``) labels
every tensor's bytes; it needs ``profile_memory``, ``record_shapes`` and ``with_stack``.
Its data lives only while a profiling cycle is held, so it is read in ``on_trace_ready``
and kept as small torch-free JSON beside the trace. A failure is a note, never a failed run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profiler_kit.util.artifacts import write_text_atomic
from profiler_kit.util.path_kinds import MEMORY_CATEGORIES_SUFFIX

SUFFIX = MEMORY_CATEGORIES_SUFFIX
FORMAT = 1


def wanted(record_shapes: bool, profile_memory: bool, with_stack: bool) -> bool:
    """The memory profiler categorizes tensors only with all three recording options on."""
    return record_shapes and profile_memory and with_stack


def handler(inner: Callable[[Any], None], strategy_dir: Path, worker_name: str,
            devices: list[str]) -> Callable[[Any], None]:
    """``inner`` (the trace writer), then the categories of this cycle for ``devices``.

    With several cycles (``profile_repeat``) the cycle with the highest peak is kept.
    """
    path = Path(strategy_dir) / f"{worker_name}{SUFFIX}"
    best: dict[str, int] = {}

    def on_ready(prof: Any) -> None:
        inner(prof)
        try:
            doc = timeline_doc(prof, devices)
        except Exception as exc:  # noqa: BLE001 - private torch API: keep the run
            doc = {"format": FORMAT, "devices": {}, "note": f"memory profiler failed: {exc}"}
        peak = max((d["peak"]["total_bytes"] for d in doc["devices"].values()), default=-1)
        if peak >= best.get("peak", -2):
            best["peak"] = peak
            write_text_atomic(path, json.dumps(doc, separators=(",", ":")))

    return on_ready


def timeline_doc(prof: Any, devices: list[str]) -> dict[str, Any]:
    """The torch-free document: per device, times (µs), bytes per category, and the peak."""
    from torch.profiler._memory_profiler import _CATEGORY_TO_INDEX, MemoryProfileTimeline

    names = ["unknown" if c is None else c.name.lower() for c in _CATEGORY_TO_INDEX]
    timeline = MemoryProfileTimeline(prof._memory_profile())
    out: dict[str, Any] = {}
    for device in devices:
        times, sizes = timeline._coalesce_timeline(device)
        if not times:
            continue
        # each row is [0, *per-category bytes] (export_memory_timeline's layout)
        rows = [row[1:] for row in sizes]
        totals = [sum(r) for r in rows]
        i = max(range(len(rows)), key=totals.__getitem__)
        out[device] = {
            "times_us": times, "bytes": rows,
            "peak": {"time_us": times[i], "total_bytes": totals[i],
                     "by_category": dict(zip(names, rows[i], strict=True))}}
    return {"format": FORMAT, "categories": names, "devices": out}
