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
