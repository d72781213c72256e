"""Interval arithmetic on numpy arrays: unions and "covered by at least k sets".

Everything is integer nanoseconds, so busy times are exact. A union is one sort
plus a cumulative maximum; no per-interval Python work.
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals ``[start, end)`` into disjoint sorted segments."""
    if not len(starts):
        return _EMPTY, _EMPTY
    order = np.argsort(starts, kind="stable")
    s = starts[order].astype(np.int64, copy=False)
    e = np.maximum.accumulate(ends[order].astype(np.int64, copy=False))
    # A new segment begins where a start lies beyond every end before it.
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], e[last]


def length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of the intervals."""
    s, e = union(starts, ends)
    return int((e - s).sum())


def covered_at_least(
    segments: list[tuple[np.ndarray, np.ndarray]], k: int
) -> int:
    """Time covered by at least ``k`` of the given unions (each already disjoint)."""
    if len(segments) < k:
        return 0
    starts = np.concatenate([s for s, _ in segments]) if segments else _EMPTY
    ends = np.concatenate([e for _, e in segments]) if segments else _EMPTY
    if not len(starts):
        return 0
    times = np.concatenate([starts, ends])
    steps = np.concatenate([np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)])
    # Ends sort before starts at the same instant, so touching segments do not overlap.
    order = np.lexsort((steps, times))
    times, steps = times[order], steps[order]
    depth = np.cumsum(steps)
    spans = np.diff(times)
    return int(spans[depth[:-1] >= k].sum())


def intersection_length(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> int:
    """Length of the intersection of two unions."""
    return covered_at_least([a, b], 2)


def clip(u: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The part of the union ``u`` (disjoint, sorted) inside ``[lo, hi)``."""
    s, e = u
    if not len(s) or hi <= lo:
        return _EMPTY, _EMPTY
    first = int(np.searchsorted(e, lo, side="right"))
    last = int(np.searchsorted(s, hi, side="left"))
    if last <= first:
        return _EMPTY, _EMPTY
    cs = np.maximum(s[first:last], lo)
    ce = np.minimum(e[first:last], hi)
    keep = ce > cs
    return cs[keep], ce[keep]


def merge(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
          ) -> tuple[np.ndarray, np.ndarray]:
    """Union of two unions."""
    return union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def total(u: tuple[np.ndarray, np.ndarray]) -> int:
    """Length of a union."""
    return int((u[1] - u[0]).sum())


def exclusive_lengths(layers: list[tuple[np.ndarray, np.ndarray]], lo: int, hi: int
                      ) -> tuple[list[int], int]:
    """Time in ``[lo, hi)`` of each union not covered by the unions before it (a priority
    order, as the TensorBoard plugin's step breakdown), and the time none covers."""
    claimed = (_EMPTY, _EMPTY)
    out = []
    for layer in layers:
        part = clip(layer, lo, hi)
        out.append(total(part) - intersection_length(part, claimed))
        claimed = merge(claimed, part)
    return out, max(hi - lo - total(claimed), 0)
