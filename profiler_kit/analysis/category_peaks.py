"""Bytes by category at the peak, from the ``<worker>.memory_categories.json`` a run keeps.

``profkit run --with-stack`` writes that file from PyTorch's own memory profiler (see
``profiler_kit.measure.memory_categories``); this reads it back without torch.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from profiler_kit.errors import TraceError

SUFFIX = ".memory_categories.json"
# the part of the peak that does not grow with the batch
FIXED = ("parameter", "gradient", "optimizer_state")


class CategoryPeak(msgspec.Struct, frozen=True):
    device: str
    time_us: int
    total_bytes: int
    by_category: dict[str, int]

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


class _Doc(msgspec.Struct):
    format: int
    devices: dict[str, _Device]
    note: str | None = None


def read_category_peaks(path: str | Path) -> tuple[list[CategoryPeak], str | None]:
    """The peak per device, and the note the run left when its memory profiler failed."""
    path = Path(path)
    try:
        doc = msgspec.json.decode(path.read_bytes(), type=_Doc)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceError(f"{path}: not a memory categories file ({exc})") from None
    peaks = [CategoryPeak(dev, d.peak.time_us, d.peak.total_bytes, dict(d.peak.by_category))
             for dev, d in sorted(doc.devices.items())]
    return peaks, doc.note
