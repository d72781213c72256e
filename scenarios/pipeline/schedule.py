"""Pipeline schedules for stage layouts that torch's built-in schedules do not place.

torch's ``ScheduleGPipe`` and ``Schedule1F1B`` hold one stage per rank and
``ScheduleInterleaved1F1B`` puts stage s on rank s % world_size. The
``ends-on-rank0`` partition needs the first and the last stage on rank 0: a
loop-back (0, 1, ..., 0) or a V (0, 1, 1, 0). For those, this module orders the
forward and backward actions of every rank with a small list scheduler and runs
them on torch's own pipeline runtime (``_PipelineScheduleRuntime``, which adds the
sends and receives and executes the actions). The runtime is private in torch
2.14; this is the one place profkit depends on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torch.distributed.pipelining.schedules import (
    _Action,
    _ComputationType,
    _PipelineScheduleRuntime,
)

F = _ComputationType.FORWARD
B = _ComputationType.FULL_BACKWARD

POLICIES = ("gpipe", "1f1b", "interleaved-1f1b")


def list_schedule(stage_rank: Sequence[int], n_microbatches: int,
                  policy: str) -> dict[int, list[_Action | None]]:
    """Per-rank action order from a unit-time simulation of the pipeline.

    Every tick, each rank runs the most urgent of its actions whose inputs are
    ready. ``gpipe`` runs every forward before any backward; ``1f1b`` and
    ``interleaved-1f1b`` run a ready backward first, forwards depth-first (earliest
    micro-batch first), and keep at most as many micro-batches in flight as there
    are stages. Each rank's order is a valid execution, so the ranks cannot deadlock.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown schedule policy {policy!r}")
    n_stages = len(stage_rank)
    world = max(stage_rank) + 1
    pending = {r: [(kind, s, m) for s in range(n_stages) if stage_rank[s] == r
                   for kind in (F, B) for m in range(n_microbatches)] for r in range(world)}
    done: set[tuple[_ComputationType, int, int]] = set()
    order: dict[int, list[_Action | None]] = {r: [] for r in range(world)}
    first_stage_backwards = 0

    def ready(kind: _ComputationType, s: int, m: int) -> bool:
        if kind == F:
            if s == 0 and policy != "gpipe" and m - first_stage_backwards >= n_stages:
                return False
            return s == 0 or (F, s - 1, m) in done
        return (F, s, m) in done and (s == n_stages - 1 or (B, s + 1, m) in done)

    urgency: Callable[[tuple[_ComputationType, int, int]], tuple[int, int, int]]
    if policy == "gpipe":
        def urgency(a: tuple[_ComputationType, int, int]) -> tuple[int, int, int]:
            kind, s, m = a
            return (0, m, s) if kind == F else (1, m, -s)
    else:
        def urgency(a: tuple[_ComputationType, int, int]) -> tuple[int, int, int]:
            kind, s, m = a
            return (1, m, -s) if kind == F else (0, m, -s)

    while any(pending.values()):
        finished = []
        for r in range(world):
            candidates = [a for a in pending[r] if ready(*a)]
            if not candidates:
                continue
            action = min(candidates, key=urgency)
            pending[r].remove(action)
            finished.append(action)
            kind, s, m = action
            order[r].append(_Action(s, kind, m))
        if not finished:
            raise RuntimeError("pipeline list schedule is stuck")  # unreachable for valid layouts
        done.update(finished)
        first_stage_backwards += sum(1 for kind, s, _ in finished if kind == B and s == 0)
    return order


class ListSchedule(_PipelineScheduleRuntime):
    """torch's pipeline runtime driven by :func:`list_schedule` for any stage layout."""

    def __init__(self, stages: list, n_microbatches: int, loss_fn: Callable,
                 stage_rank: Sequence[int], policy: str) -> None:
        super().__init__(stages=stages, n_microbatches=n_microbatches, loss_fn=loss_fn)
        self.pipeline_order = list_schedule(stage_rank, n_microbatches, policy)
        self._prepare_schedule_with_comms(self.pipeline_order)
