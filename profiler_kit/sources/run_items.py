"""How many items (images, samples) one step of a run's strategy processes, found for one
of its traces: its run.json (in the run folder above the trace) says so per strategy.
A figure per step becomes one per item with it (the GPU's energy per image)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from profiler_kit.util.artifacts import RUN_JSON

LEVELS = 4  # a trace lies at most this far below its run folder (run/point/strategy/rank)


def items_per_step(trace: Path) -> int | None:
    """The items per step of the strategy (per rank where it has several) that wrote
    ``trace``; None where no run.json above it names the trace (a trace of its own) or
    the strategy counts none (or its ranks do not share them evenly)."""
    trace = trace.resolve()
    for folder in list(trace.parents)[:LEVELS]:
        by_trace = _items_by_trace(folder)
        if by_trace is not None:
            return by_trace.get(str(trace))
    return None


@lru_cache(maxsize=64)
def _items_by_trace(folder: Path) -> dict[str, int] | None:
    """A run folder's traces (resolved paths) -> their strategy's items per step; None:
    ``folder`` is no run folder (or its run.json cannot be read)."""
    try:
        doc = json.loads((folder / RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    out: dict[str, int] = {}
    for s in doc.get("strategies", []) if isinstance(doc, dict) else []:
        items = s.get("items_per_step") if isinstance(s, dict) else None
        # a strategy of several processes counts the items of all its ranks: each rank's
        # trace is of its own share (its GPU's energy over its own items)
        ranks = max(len(s.get("per_rank_samples_ns") or ()), 1) if isinstance(s, dict) else 1
        if isinstance(items, int) and items > 0 and items % ranks == 0:
            for f in s.get("trace_files") or []:
                out[str((folder / f).resolve())] = items // ranks
    return out
