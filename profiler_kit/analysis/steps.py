"""Step times from the profiler's ``ProfilerStep#N`` spans, or the whole window without them."""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.arrays import percentile
from profiler_kit.trace.table import Cat, EventTable

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_CPU_SIDE = (Cat.USER_ANNOTATION, Cat.CPU_OP, Cat.OTHER)


class Step(msgspec.Struct, frozen=True):
    number: int
    start_ns: int
    dur_ns: int


class Steps(msgspec.Struct, frozen=True):
    """``source`` is ``"ProfilerStep"`` when steps were found, else ``"window"``:
    then ``steps`` is empty and the statistics describe the whole trace window."""

    source: str
    steps: tuple[Step, ...]
    count: int
    median_ns: int
    min_ns: int
    max_ns: int
    mean_ns: float
    iqr_ns: float  # p75 - p25; 0 for fewer than two steps
    spread: float | None  # iqr / median: how noisy the steps are
    start_ns: int
    end_ns: int


def analyze_steps(table: EventTable) -> Steps:
    """Per-step times (median and spread) from the CPU-side ``ProfilerStep#`` spans."""
    step_names = {i: int(m.group(1)) for i, n in enumerate(table.names) if (m := _STEP.match(n))}
    found: dict[int, Step] = {}
    if step_names:
        ids = np.fromiter(step_names.keys(), dtype=np.int64)
        cpu = np.isin(table.cat, np.array([int(c) for c in _CPU_SIDE], dtype=table.cat.dtype))
        rows = np.flatnonzero(cpu & np.isin(table.name, ids))
        for r in rows.tolist():
            number = step_names[int(table.name[r])]
            dur = int(table.dur_ns[r])
            if number not in found or dur > found[number].dur_ns:
                found[number] = Step(number, int(table.ts_ns[r]), dur)
    steps = tuple(found[k] for k in sorted(found))
    if steps:
        durs = np.array([s.dur_ns for s in steps], dtype=np.int64)
        start = min(s.start_ns for s in steps)
        end = max(s.start_ns + s.dur_ns for s in steps)
        source = "ProfilerStep"
    else:
        if len(table):
            start = int(table.ts_ns.min())
            end = int((table.ts_ns + table.dur_ns).max())
        else:
            start = end = 0
        durs = np.array([end - start], dtype=np.int64)
        source = "window"
    p25, p75 = percentile(durs, 25), percentile(durs, 75)
    median = int(np.median(durs))
    iqr = float(p75 - p25)
    return Steps(
        source=source,
        steps=steps,
        count=len(steps),
        median_ns=median,
        min_ns=int(durs.min()),
        max_ns=int(durs.max()),
        mean_ns=float(durs.mean()),
        iqr_ns=iqr,
        spread=iqr / median if median > 0 else None,
        start_ns=start,
        end_ns=end,
    )
