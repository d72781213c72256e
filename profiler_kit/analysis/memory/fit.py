"""What fits: memory per item of the batch, and the largest batch for a device's memory.

From two batch sizes of the same work, the peak's growth per item is the slope between
them and the rest (the intercept) is what does not grow: parameters, gradients, optimizer
state, buffers. From one batch size with memory categories, the activations, inputs,
temporaries and autograd detail at the peak are taken to grow in proportion to the batch
and everything else to stay. Either way it is an estimate, and says its assumptions.
"""

from __future__ import annotations

import msgspec

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.memory.categories import FIXED, CategoryPeak

PER_ITEM = ("activation", "input", "temporary", "autograd_detail")


class BatchPoint(msgspec.Struct, frozen=True):
    batch: int  # items per step
    peak_bytes: int
    activation_bytes: int | None = None  # the activation category at the peak, if recorded


class Fit(msgspec.Struct, frozen=True):
    bytes_per_item: float  # the peak's growth per item of the batch
    fixed_bytes: int  # the part of the peak that does not grow with the batch
    activation_bytes_per_item: float | None  # the activation category's growth alone
    device_memory_bytes: int | None
    largest_batch: int | None  # None without a device memory, or when nothing grows
    method: str  # "two batch sizes" | "categories"
    assumptions: tuple[Note, ...]


_COMMON = (note("fit_same_model"), note("fit_profiler_peak"))


def from_two_batches(a: BatchPoint, b: BatchPoint, device_memory: int | None) -> Fit | None:
    """The line through two (batch, peak) points; None when the batches are equal."""
    if a.batch == b.batch:
        return None
    lo, hi = sorted((a, b), key=lambda p: p.batch)
    per_item = (hi.peak_bytes - lo.peak_bytes) / (hi.batch - lo.batch)
    fixed = round(lo.peak_bytes - per_item * lo.batch)
    act = None
    if lo.activation_bytes is not None and hi.activation_bytes is not None:
        act = (hi.activation_bytes - lo.activation_bytes) / (hi.batch - lo.batch)
    return Fit(per_item, fixed, act, device_memory, _largest(per_item, fixed, device_memory),
               "two batch sizes",
               (note("fit_linear_in_batch", low=lo.batch, high=hi.batch), *_COMMON))


def from_categories(peak: CategoryPeak, batch: int, device_memory: int | None) -> Fit | None:
    """Activations, inputs, temporaries and autograd detail scale with the batch; None at 0."""
    if batch < 1:
        return None
    growing = sum(peak.by_category.get(c, 0) for c in PER_ITEM)
    per_item = growing / batch
    fixed = peak.total_bytes - growing
    act = peak.by_category.get("activation", 0) / batch
    return Fit(per_item, fixed, act, device_memory, _largest(per_item, fixed, device_memory),
               "categories",
               (note("fit_categories_scale", growing=PER_ITEM, batch=batch, fixed=FIXED),
                *_COMMON))


def _largest(per_item: float, fixed: int, device_memory: int | None) -> int | None:
    if device_memory is None or per_item <= 0 or device_memory < fixed:
        return None if device_memory is None or per_item <= 0 else 0
    return int((device_memory - fixed) // per_item)
