"""Small numpy helpers the analyses share."""

from __future__ import annotations

import numpy as np


def distinct(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of the 1-D array ``a``.

    Same as ``np.unique(a)``, which on its first call imports ``numpy.ma`` (about
    15 ms, a noticeable part of a small trace's whole analysis).
    """
    s = np.sort(a)
    keep = np.ones(len(s), dtype=bool)
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def member(a: np.ndarray, values) -> np.ndarray:
    """Whether each element of the integer array ``a`` is one of ``values`` (integers).

    Same as ``np.isin(a, values)``, which sorts through ``np.unique`` and so imports
    ``numpy.ma`` on its first call when ``values`` are many or spread out (timestamps,
    table rows).
    """
    v = np.sort(np.asarray(values, dtype=np.int64), axis=None)
    if not len(v) or not len(a):
        return np.zeros(len(a), dtype=bool)
    pos = np.minimum(np.searchsorted(v, a), len(v) - 1)
    return v[pos] == a


def percentile(a: np.ndarray, q: float) -> float:
    """``np.percentile(a, q)`` of the non-empty 1-D array ``a`` (linear interpolation).

    Same result (numpy's rounding-safe interpolation included); ``np.percentile``
    too imports ``numpy.ma`` on its first call.
    """
    return sorted_percentile(np.sort(a), q)


def median(a) -> float:
    """``np.median(a)`` of a 1-D array or list without NaNs (``nan`` when empty).

    Same result; ``np.median`` too imports ``numpy.ma`` on its first call on floats.
    """
    s = np.sort(np.asarray(a), axis=None)
    n = len(s)
    if n == 0:
        return float("nan")
    mid = n // 2
    return float(s[mid]) if n % 2 else (float(s[mid - 1]) + float(s[mid])) / 2


def sorted_percentile(s: np.ndarray, q: float) -> float:
    """:func:`percentile` of an already sorted array (several percentiles, one sort)."""
    pos = (len(s) - 1) * (q / 100)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    t = pos - lo
    low, high = float(s[lo]), float(s[hi])
    diff = high - low
    return high - diff * (1 - t) if t >= 0.5 else low + diff * t


def dense_ids(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of the 1-D array ``a`` and each element's index among them.

    Same as ``np.unique(a, return_inverse=True)`` (inverse flattened), without its sort
    when ``a`` holds integers in a range not much wider than ``a`` is long (interned
    names, thread and process ids, keys built from them): a table over the range finds
    both in linear time, where the sort of millions of events dominated a large trace's
    analysis.
    """
    if len(a) and a.dtype.kind in "iu":
        lo, hi = int(a.min()), int(a.max())
        span = hi - lo + 1
        if span <= 2 * len(a) + (1 << 16) and hi < 2**63:
            offset = a.astype(np.intp)
            if lo:
                offset -= lo
            present = np.zeros(span, dtype=bool)
            present[offset] = True
            found = np.flatnonzero(present)
            index = np.empty(span, dtype=np.intp)
            index[found] = np.arange(len(found), dtype=np.intp)
            return (found + lo).astype(a.dtype), index[offset]
    uniq, inverse = np.unique(a, return_inverse=True)
    return uniq, inverse.reshape(-1)
