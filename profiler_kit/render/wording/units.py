"""Units, formatted in one place: results carry raw ns and bytes, only renderers call these."""

from __future__ import annotations

import math

_TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_BYTE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def significant(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, never in scientific notation:
    ``11634.2`` -> ``'11634'``, ``1.5`` -> ``'1.5'``, ``0.000123`` -> ``'0.000123'``."""
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude >= digits - 1:
        return f"{x:.0f}"
    text = f"{x:.{digits - 1 - magnitude}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if abs(float(text)) >= 10 ** digits:  # rounding carried into another digit
        return f"{float(text):.0f}"
    return text


def duration(ns: float | None, digits: int = 3) -> str:
    """``1234567`` -> ``'1.23 ms'``."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    for unit, scale in _TIME_UNITS:
        if abs(ns) >= scale or unit == "ns":
            return f"{significant(ns / scale, digits)} {unit}"
    raise AssertionError("unreachable")


def nbytes(n: float | None, digits: int = 3) -> str:
    """``3 * 2**20`` -> ``'3 MiB'`` (binary prefixes, labelled as such)."""
    if n is None:
        return "-"
    for unit, scale in _BYTE_UNITS:
        if abs(n) >= scale:
            return f"{significant(n / scale, digits)} {unit}"
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
    return f"{significant(per_s, digits)} {unit}/s"


_DECIMAL = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def decimal_rate(per_s: float | None, unit: str, digits: int = 3) -> str:
    """Rates with decimal prefixes, as datasheets print them: ``1.5e14, 'FLOP'`` ->
    ``'150 TFLOP/s'``, ``3.35e12, 'B'`` -> ``'3.35 TB/s'``."""
    if per_s is None or (isinstance(per_s, float) and math.isnan(per_s)):
        return "-"
    for prefix, scale in _DECIMAL:
        if abs(per_s) >= scale:
            return f"{significant(per_s / scale, digits)} {prefix}{unit}/s"
    return f"{significant(per_s, digits)} {unit}/s"


def count(n: float | None, unit: str, digits: int = 3) -> str:
    """A large count with a decimal prefix: ``1.4e11, 'FLOP'`` -> ``'140 GFLOP'``."""
    if n is None:
        return "-"
    for prefix, scale in _DECIMAL:
        if abs(n) >= scale:
            return f"{significant(n / scale, digits)} {prefix}{unit}"
    return f"{significant(n, digits)} {unit}"


def speedup(factor: float | None) -> str:
    """``1.5`` -> ``'1.50×'``."""
    if factor is None or (isinstance(factor, float) and math.isnan(factor)):
        return "-"
    return f"{factor:.2f}×"


def link_bandwidth(bytes_per_s: float | None) -> str:
    """Bytes per second with a decimal prefix (GB/s as nccl-tests prints, MB/s and kB/s
    below 1 GB/s, so a cell stays short)."""
    if bytes_per_s is None:
        return "-"
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= scale:
            return f"{significant(bytes_per_s / scale, 3)} {unit}"
    return f"{significant(bytes_per_s, 3)} B/s"
