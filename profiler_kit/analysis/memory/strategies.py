"""Memory of several strategies side by side, and what fits from two batch sizes.

Side by side, each strategy is set against the first: the difference in activations at the
peak (in all bytes at the peak where no categories were recorded), and the line of code
whose live bytes at the peak grew most, the seeds' question "why does this one need more".
"""

from __future__ import annotations

import msgspec

from profiler_kit.analysis.memory.explained import StrategyMemory
from profiler_kit.analysis.memory.fit import BatchPoint, Fit, from_two_batches


class MemoryDelta(msgspec.Struct, frozen=True):
    label: str
    baseline: str
    what: str  # "activation" (from categories) | "peak" (trace peaks)
    delta_bytes: int
    site: str | None  # the site (or op) whose live bytes at the peak grew most
    site_delta_bytes: int


class MemoryReport(msgspec.Struct, frozen=True):
    schema: str
    strategies: tuple[StrategyMemory, ...]
    deltas: tuple[MemoryDelta, ...]
    fit: Fit | None  # from two batch sizes, when two sources have them


def _activation(s: StrategyMemory) -> int | None:
    if not s.categories:
        return None
    return max(s.categories, key=lambda c: c.total_bytes).by_category.get("activation", 0)


def _peak(s: StrategyMemory) -> int | None:
    if s.categories:
        return max(c.total_bytes for c in s.categories)
    if s.peaks:
        return max(p.peak_allocated_bytes for p in s.peaks)
    return None


def _live(s: StrategyMemory) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in s.peaks:
        for site in p.live_ops:
            key = " at ".join(x for x in (site.op, site.site) if x) or "unknown"
            out[key] = out.get(key, 0) + site.bytes
    return out


def delta(s: StrategyMemory, base: StrategyMemory) -> MemoryDelta | None:
    a, b = _activation(s), _activation(base)
    what = "activation"
    if a is None or b is None:
        a, b, what = _peak(s), _peak(base), "peak"
    if a is None or b is None:
        return None
    mine, theirs = _live(s), _live(base)
    grown = {k: mine.get(k, 0) - theirs.get(k, 0) for k in mine.keys() | theirs.keys()}
    sign = 1 if a >= b else -1
    site = max(sorted(grown), key=lambda k: grown[k] * sign, default=None)
    if site is not None and grown[site] * sign <= 0:
        site = None  # no line moved the same way
    return MemoryDelta(s.label, base.label, what, a - b, site,
                       grown[site] if site is not None else 0)


def combine(strategies: list[StrategyMemory], device_memory: int | None) -> MemoryReport:
    deltas = [d for s in strategies[1:] if (d := delta(s, strategies[0])) is not None]
    points = [BatchPoint(s.items_per_step, peak, _activation(s)) for s in strategies
              if s.items_per_step and (peak := _peak(s)) is not None]
    fit = None
    batches = {p.batch for p in points}
    if device_memory is None:
        device_memory = max((m for s in strategies if (m := s.device_memory_bytes)),
                            default=None)
    if len(points) == 2 and len(batches) == 2:
        fit = from_two_batches(points[0], points[1], device_memory)
    return MemoryReport("profkit.memory/1", tuple(strategies), tuple(deltas), fit)
