"""Growth from step to step: what each ``ProfilerStep#k`` allocated and never gave back.

Per step: the bytes allocated in the step and still alive at its end, and those still
alive when the trace ends. A steady training step frees what it made (gradients one step
later, at ``zero_grad``), so bytes a line of code keeps from every step are a leak. The
first step is left out of the verdict (optimizer state is created once, lazily) and so is
the last (its gradients and outputs are freed after the trace ends): a leak is a site
that keeps bytes from every step in between, which needs at least three profiled steps.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.memory_lifetimes import NEVER, Lifetimes
from profiler_kit.analysis.memory_peak import by_site

MIN_STEPS = 3


class StepGrowth(msgspec.Struct, frozen=True):
    step: int  # the k of ProfilerStep#k
    allocated_bytes: int  # allocated in the step
    alive_at_step_end_bytes: int  # of those, still alive at the step's end
    kept_bytes: int  # of those, still alive at the trace's end


class Leak(msgspec.Struct, frozen=True):
    site: str | None  # "file:line (function)"; None when recorded without stacks
    op: str | None
    kept_bytes_per_step: tuple[int, ...]  # one per profiled step, in step order
    kept_bytes: int  # over all steps


class Growth(msgspec.Struct, frozen=True):
    device: str
    steps: tuple[StepGrowth, ...]
    leaks: tuple[Leak, ...]  # largest first
    note: str | None = None  # why no verdict could be given


def step_growth(life: Lifetimes, steps: tuple[tuple[int, int, int], ...]) -> Growth:
    """Growth per step of one device's allocations, and the sites that leak."""
    if not life.has_addresses:
        return Growth(life.device, (), (), "the trace's memory events have no addresses: "
                                            "frees cannot be matched to allocations")
    if not steps:
        return Growth(life.device, (), (), "no ProfilerStep#k ranges in the trace")
    rows, per_step = [], []
    for number, start, end in steps:
        made = np.flatnonzero((life.ts_ns >= start) & (life.ts_ns < end))
        kept = made[life.freed_ns[made] == NEVER]
        rows.append(StepGrowth(number, int(life.bytes[made].sum()),
                               int(life.bytes[made][life.freed_ns[made] > end].sum()),
                               int(life.bytes[kept].sum())))
        per_step.append({(s.site, None if s.site else s.op): s for s in by_site(life, kept)})
    if len(steps) < MIN_STEPS:
        return Growth(life.device, tuple(rows), (),
                      f"{len(steps)} profiled step(s): a leak needs at least {MIN_STEPS} "
                      "(the first and last are left out of the verdict)")
    leaks = []
    for key in set.intersection(*(set(k) for k in per_step[1:-1])):
        kept = tuple(k[key].bytes if key in k else 0 for k in per_step)
        leaks.append(Leak(key[0], per_step[1][key].op, kept, sum(kept)))
    leaks.sort(key=lambda x: (-x.kept_bytes, x.site or "", x.op or ""))
    return Growth(life.device, tuple(rows), tuple(leaks))
