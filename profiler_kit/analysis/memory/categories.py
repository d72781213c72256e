"""Bytes by category at the peak, from the ``<worker>.memory_categories.json`` a run keeps.

``profkit run --with-stack`` writes that file from PyTorch's own memory profiler (see
``profiler_kit.measure.memory_categories``); :mod:`profiler_kit.sources.memory_categories`
reads it back without torch, and this finds each device's peak in it.

The categories count tensors that existed before the profile started (weights, optimizer
state), which a CPU trace's own figures do not. PyTorch's timeline puts them all in its
first row and stamps it with the time of the first real event, so a first row sharing its
time with the second is the memory from before the profile.
"""

from __future__ import annotations

import msgspec

from profiler_kit.analysis.core.note import Note, note

# the part of the peak that does not grow with the batch
FIXED = ("parameter", "gradient", "optimizer_state")


class CategoryPeak(msgspec.Struct, frozen=True):
    device: str
    time_us: int
    total_bytes: int
    by_category: dict[str, int]
    before_profile: dict[str, int] = msgspec.field(default_factory=dict)  # by category

    @property
    def fixed_bytes(self) -> int:
        """Parameters, gradients and optimizer state."""
        return sum(self.by_category.get(c, 0) for c in FIXED)


class _Peak(msgspec.Struct):
    time_us: int
    total_bytes: int
    by_category: dict[str, int]


class _Device(msgspec.Struct):
    peak: _Peak
    times_us: list[int] = msgspec.field(default_factory=list)
    bytes: list[list[int]] = msgspec.field(default_factory=list)


class CategoriesDocument(msgspec.Struct):
    """The ``.memory_categories.json`` file a run keeps, as written."""

    format: int
    devices: dict[str, _Device]
    categories: list[str] = msgspec.field(default_factory=list)
    note: str | None = None  # the run's words, when its memory profiler failed


def _before_profile(d: _Device, names: list[str]) -> dict[str, int]:
    if len(d.times_us) < 2 or d.times_us[0] != d.times_us[1] or not d.bytes:
        return {}
    return {n: b for n, b in zip(names, d.bytes[0], strict=False) if b}


def category_peaks(doc: CategoriesDocument, path: str) -> tuple[list[CategoryPeak], Note | None]:
    """The peak per device, and a note on the file at ``path``: the one the run left when
    its memory profiler failed, or why a device was left out. A device whose total never
    moves saw no allocation or free in the profile (``profile_all_threads`` records none):
    its rows are only the tensors from before, and say nothing of the peak, so it is left
    out."""
    peaks, still = [], []
    for dev, d in sorted(doc.devices.items()):
        if len({sum(row) for row in d.bytes}) == 1:
            still.append(dev)
            continue
        peaks.append(CategoryPeak(dev, d.peak.time_us, d.peak.total_bytes,
                                  dict(d.peak.by_category), _before_profile(d, doc.categories)))
    if still:
        return peaks, note("categories_left_out", path=path, devices=tuple(still))
    if doc.note:
        return peaks, note("categories_run_note", path=path, text=doc.note)
    return peaks, None
