"""Growth from step to step: what each ``ProfilerStep#k`` allocated and never gave back.

Per step: the bytes allocated in the step and still alive at its end, and those still
alive when the trace ends. A steady training step frees what it made (gradients one step
later, at ``zero_grad``), so bytes a line of code keeps from every step are a leak. The
first step is left out of the verdict (optimizer state is created once, lazily) and so is
the last (its gradients and outputs are freed after the trace ends): a leak is a site
that keeps bytes from every step in between, which needs at least three profiled steps.

One holder is not the user's code: with ``record_shapes`` on, PyTorch's profiler keeps
the tensors that pass through ``torch.func`` transforms (``vmap``, ``grad``, ``jvp``)
alive until it stops (pytorch/pytorch#116697; the same run with ``record_shapes=False``
keeps nothing). Where every step of the verdict ran a transform with shapes recorded, the
sites are reported as kept, with that caveat, and not called leaks.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.memory.lifetimes import NEVER, Lifetimes
from profiler_kit.analysis.memory.peak import by_site

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
    note: Note | None = None  # why no verdict could be given
    # set when the profiler itself may hold what the sites keep: the leaks are not a verdict
    held_by_profiler: Note | None = None


def _transform_in_every_step(steps: tuple[tuple[int, int, int], ...],
                             transform_starts_ns: np.ndarray) -> bool:
    at = np.searchsorted(transform_starts_ns, [s for _, s, _ in steps])
    return all(i < len(transform_starts_ns) and transform_starts_ns[i] < end
               for i, (_, _, end) in zip(at.tolist(), steps, strict=True))


def step_growth(life: Lifetimes, steps: tuple[tuple[int, int, int], ...],
                shapes_recorded: bool = False,
                transform_starts_ns: np.ndarray | None = None) -> Growth:
    """Growth per step of one device's allocations, and the sites that leak.

    ``shapes_recorded`` and ``transform_starts_ns`` (when torch.func transforms started)
    say whether the profiler may be the holder (see the module docstring).
    """
    if not life.has_addresses:
        return Growth(life.device, (), (), note("growth_no_addresses"))
    if not steps:
        return Growth(life.device, (), (), note("growth_no_steps"))
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
                      note("growth_too_few_steps", steps=len(steps), needed=MIN_STEPS))
    leaks = []
    for key in set.intersection(*(set(k) for k in per_step[1:-1])):
        kept = tuple(k[key].bytes if key in k else 0 for k in per_step)
        leaks.append(Leak(key[0], per_step[1][key].op, kept, sum(kept)))
    leaks.sort(key=lambda x: (-x.kept_bytes, x.site or "", x.op or ""))
    held = None
    if (leaks and shapes_recorded and transform_starts_ns is not None
            and _transform_in_every_step(steps[1:-1], transform_starts_ns)):
        held = note("growth_held_by_profiler")
    return Growth(life.device, tuple(rows), tuple(leaks), held_by_profiler=held)
