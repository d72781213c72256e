"""Bytes allocated in a trace and not yet freed, after each ``[memory]`` event, walked by
address from the raw JSON: the independent count the CPU's allocated figures are held to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def in_trace_allocated(args: Iterable[dict[str, Any]]) -> list[int]:
    """After each event (``args`` of ``[memory]`` events in time order): a free of a block
    allocated before the trace is not in the walk, so it takes nothing off."""
    live: dict[int, int] = {}
    out = []
    total = 0
    for a in args:
        if a["Bytes"] > 0:
            total += a["Bytes"] - live.get(a["Addr"], 0)
            live[a["Addr"]] = a["Bytes"]
        else:
            total -= live.pop(a["Addr"], 0)
        out.append(total)
    return out
