"""Units, formatted in one place: results carry raw ns and bytes, only renderers call these."""

from __future__ import annotations

import math

_TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_BYTE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def duration(ns: float | None, digits: int = 3) -> str:
    """``1234567`` -> ``'1.23 ms'``."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    for unit, scale in _TIME_UNITS:
        if abs(ns) >= scale or unit == "ns":
            return f"{ns / scale:.{digits}g} {unit}"
    raise AssertionError("unreachable")


def nbytes(n: float | None, digits: int = 3) -> str:
    """``3 * 2**20`` -> ``'3 MiB'`` (binary prefixes, labelled as such)."""
    if n is None:
        return "-"
    for unit, scale in _BYTE_UNITS:
        if abs(n) >= scale:
            return f"{n / scale:.{digits}g} {unit}"
    return f"{int(n)} B"


def percent(fraction: float | None, digits: int = 1) -> str:
    """``0.1234`` -> ``'12.3 %'``."""
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return "-"
    return f"{100 * fraction:.{digits}f} %"


def signed_percent(fraction: float | None, digits: int = 1) -> str:
    """A change against a baseline: ``-0.25`` -> ``'-25.0 %'``, ``0.1`` -> ``'+10.0 %'``."""
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return "-"
    return f"{100 * fraction:+.{digits}f} %"


def rate(per_s: float | None, unit: str, digits: int = 4) -> str:
    """``1234.5, 'images'`` -> ``'1235 images/s'``."""
    if per_s is None or (isinstance(per_s, float) and math.isnan(per_s)):
        return "-"
    return f"{per_s:.{digits}g} {unit}/s"


def speedup(factor: float | None) -> str:
    """``1.5`` -> ``'1.50×'``."""
    if factor is None or (isinstance(factor, float) and math.isnan(factor)):
        return "-"
    return f"{factor:.2f}×"
