"""The batch-size sweep: throughput per batch size, up to the largest that fits.

Sizes double from the run's batch size up to a cap (or are given); each is built fresh
under the recommended knobs and timed without the profiler. An out-of-memory is a result:
it is recorded and ends the sweep (a larger batch needs more), never the command. The
compile modes and CUDA graphs are left out of the sweep, because each new shape would
compile or capture again; the sweep says so.

Where the device reports each size's peak (CUDA), the sweep also checks the memory fit
``profkit memory`` would make: the line through the first two sizes' peaks predicts the
peak of every later size and the largest batch for the device's memory, and the sizes
that ran or ran out of memory say whether that held.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from profiler_kit import results
from profiler_kit.measure.passes import MeasureOptions, measure
from profiler_kit.scenario import RunConfig
from profiler_kit.scenarios.tune_workload import (
    BASELINE,
    COMPILE_MODES,
    STACK_SEPARATOR,
    TuneWorkload,
    is_out_of_memory,
    knobs_of,
)

OK, OUT_OF_MEMORY, FAILED, NOT_RUN = "ok", "out of memory", "failed", "not run"
PER_SHAPE = frozenset({*COMPILE_MODES, "cuda_graphs"})  # compile or capture per shape


@dataclasses.dataclass(frozen=True)
class BatchPoint:
    """One batch size's result."""

    batch_size: int
    status: str  # OK, OUT_OF_MEMORY, FAILED or NOT_RUN
    median_ns: int | None = None
    items_per_s: float | None = None
    peak_bytes: int | None = None  # the device's peak allocation (CUDA); None on the CPU
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class FitCheck:
    """The two-batch memory fit against the rest of the sweep."""

    fitted_on: tuple[int, int]  # the batch sizes the line goes through
    bytes_per_item: float
    fixed_bytes: int
    predicted_peak_bytes: dict[int, int]  # later sizes that ran: the line's peak
    measured_peak_bytes: dict[int, int]
    device_memory_bytes: int | None
    predicted_largest: int | None  # the largest batch for device_memory_bytes
    largest_ran: int
    first_out_of_memory: int | None
    holds: bool | None  # None: nothing past the two sizes to check it with
    why: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PEAK_TOLERANCE = 0.10  # a predicted peak within 10 % of the measured one holds


def check_fit(points: Sequence[BatchPoint], device_memory: int | None) -> FitCheck | None:
    """The fit from the first two sizes with a peak, checked on the others; None when
    fewer than two sizes report a peak (the CPU reports none)."""
    from profiler_kit.analysis.memory import fit as memory_fit

    ran = [p for p in points if p.status == OK and p.peak_bytes is not None]
    if len(ran) < 2:
        return None
    a, b = ran[0], ran[1]
    fit = memory_fit.from_two_batches(memory_fit.BatchPoint(a.batch_size, int(a.peak_bytes)),
                                      memory_fit.BatchPoint(b.batch_size, int(b.peak_bytes)),
                                      device_memory)
    if fit is None:
        return None
    later = ran[2:]
    predicted = {p.batch_size: round(fit.fixed_bytes + fit.bytes_per_item * p.batch_size)
                 for p in later}
    measured = {p.batch_size: int(p.peak_bytes) for p in later}  # type: ignore[arg-type]
    oom = next((p.batch_size for p in points if p.status == OUT_OF_MEMORY), None)
    largest_ran = max(p.batch_size for p in points if p.status == OK)
    wrong = [f"{n} items: predicted {predicted[n]:,} B, measured {measured[n]:,} B"
             for n in predicted
             if abs(predicted[n] - measured[n]) > PEAK_TOLERANCE * measured[n]]
    largest = fit.largest_batch
    if largest is not None and largest < largest_ran:
        wrong.append(f"{largest_ran} items ran, past the predicted largest batch {largest}")
    if largest is not None and oom is not None and largest >= oom:
        wrong.append(f"{oom} items ran out of memory, within the predicted largest batch "
                     f"{largest}")
    checked = bool(later) or (largest is not None and oom is not None)
    holds = None if not checked else not wrong
    why = ("; ".join(wrong) if wrong else
           "no size past the two to check it with" if holds is None else
           f"every later peak within {PEAK_TOLERANCE:.0%}"
           + (" and the out-of-memory size past the predicted largest batch"
              if oom is not None and largest is not None else ""))
    return FitCheck((a.batch_size, b.batch_size), fit.bytes_per_item, fit.fixed_bytes,
                    predicted, measured, device_memory, largest, largest_ran, oom, holds, why)


def doubling(start: int, cap: int) -> list[int]:
    """``start, 2 start, 4 start, ...`` up to ``cap`` (inclusive)."""
    sizes, b = [], max(1, start)
    while b <= cap:
        sizes.append(b)
        b *= 2
    return sizes or [max(1, start)]


def sweep_knobs(name: str) -> str:
    """The stack the sweep measures: ``name`` without compile modes or CUDA graphs."""
    kept = [k for k in knobs_of(name) if k not in PER_SHAPE]
    return STACK_SEPARATOR.join(kept) or BASELINE


def sweep(user: Any, name: str, sizes: Sequence[int], device: str, amp_dtype: str | None,
          options: MeasureOptions, folder: Path, seed: int = 0, deadline_s: float | None = None,
          on_point: Callable[[BatchPoint], None] | None = None) -> list[BatchPoint]:
    """Each size in turn until one runs out of memory or the deadline (seconds from now)
    passes (the first size always runs); the sizes not reached are NOT_RUN with the
    reason. Ctrl-C propagates; the points finished so far have gone to ``on_point``."""
    timing = dataclasses.replace(options, profile=False)
    start = time.monotonic()
    points: list[BatchPoint] = []
    for i, size in enumerate(sizes):
        if i and deadline_s is not None and time.monotonic() - start > deadline_s:
            points += [BatchPoint(b, NOT_RUN, detail=f"the sweep's {deadline_s:g} s were spent")
                       for b in sizes[i:]]
            break
        point = _one(user, name, size, device, amp_dtype, timing, folder, seed)
        points.append(point)
        if on_point:
            on_point(point)
        if point.status != OK:
            stop = "a larger batch needs more memory" if point.status == OUT_OF_MEMORY \
                else "the previous size failed"
            points += [BatchPoint(b, NOT_RUN, detail=stop) for b in sizes[i + 1:]]
            break
    return points


def _one(user: Any, name: str, size: int, device: str, amp_dtype: str | None,
         timing: MeasureOptions, folder: Path, seed: int) -> BatchPoint:
    config = RunConfig(params={"batch_size": size}, device=device, amp_dtype=amp_dtype,
                       seed=seed)
    workload = None
    try:
        workload = TuneWorkload(user, name, config)
        m = measure(workload, timing, folder / f"batch_{size}")
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the user's model at a size it may not take: one line
        _free(device)
        status = OUT_OF_MEMORY if is_out_of_memory(exc) else FAILED
        first = (str(exc).strip().splitlines() or [""])[0]
        return BatchPoint(size, status, detail=f"{type(exc).__name__}: {first}"[:300])
    finally:
        if workload is not None:
            workload.close()
    median = results.stats(m.samples_ns).median_ns
    peaks = [v.get("allocated_bytes") for v in m.peak_memory.values()]
    peaks = [p for p in peaks if p is not None]
    return BatchPoint(size, OK, int(median), results.throughput(m.items_per_step, median),
                      max(peaks) if peaks else None)


def _free(device: str) -> None:
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()
