"""The real traces in tests/data, shared by the tests that check the analysis on them:
each trace's analysis (computed once per test session, whichever module asks first) and
the exact microseconds-to-nanoseconds conversion of the independent side."""

from __future__ import annotations

import functools
from decimal import Decimal
from pathlib import Path

from profiler_kit.analysis.trace_analysis import TraceAnalysis, analyze_table
from profiler_kit.trace.loader import load

DATA = Path(__file__).parent / "data"


@functools.cache
def analysis(name: str) -> TraceAnalysis:
    return analyze_table(load(DATA / name))


def ns(us) -> int:
    """Microseconds as written in the trace to integer nanoseconds, through the decimal text
    of the number (exact: Kineto writes at most three decimals)."""
    return int(Decimal(str(us)) * 1000)


def union_length(spans) -> int:
    """The length of the union of (start, end) spans, by a sweep: the independent side of
    every busy time."""
    total, end = 0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total
