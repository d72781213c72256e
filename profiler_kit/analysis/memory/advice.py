"""What would reduce fragmentation and idle reserve, each said with its evidence.

- ``expandable_segments``: free memory cut into blocks too small for the requests in use
  (a free block smaller than the largest live block cannot serve a request of that size,
  and the allocator never merges blocks across segments); expandable segments grow one
  segment in place instead. Said when at least ``UNUSABLE_SHARE`` of the free bytes is in
  such blocks and the free bytes are at least ``IDLE_SHARE`` of the reserve.
- ``empty_cache`` placement: whole segments holding no live block are reserve that no
  tensor uses; ``torch.cuda.empty_cache()`` after the phase that made them returns them to
  the device (for other processes, or before a phase of other sizes). Said when such
  segments are at least ``IDLE_SHARE`` of the reserve.
- From a trace alone (no segments): reserved at the peak against allocated at the peak.

The evidence is a note (a code and its figures): :mod:`profiler_kit.render.wording.job_notes`
words it with what to do.
"""

from __future__ import annotations

import msgspec

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.memory.snapshot import Fragmentation, Snapshot

UNUSABLE_SHARE = 0.25
IDLE_SHARE = 0.10


class Advice(msgspec.Struct, frozen=True):
    remedy: str  # "expandable_segments" | "empty_cache" | "none"
    device: str
    evidence: Note


def snapshot_advice(snapshot: Snapshot, frags: list[Fragmentation]) -> list[Advice]:
    out = []
    for f in frags:
        dev = f"cuda:{f.device}"
        if f.reserved_bytes <= 0:
            continue
        idle_share = f.free_bytes / f.reserved_bytes
        if f.unusable_share >= UNUSABLE_SHARE and idle_share >= IDLE_SHARE:
            out.append(Advice("expandable_segments", dev, note(
                "snapshot_free_blocks_too_small", free=f.free_bytes, reserved=f.reserved_bytes,
                unusable_share=f.unusable_share, largest_active=f.largest_active_bytes,
                largest_free=f.largest_free_bytes)))
        empty = [s for s in snapshot.segments if s.device == f.device
                 and not any(b.state != "inactive" for b in s.blocks)]
        empty_bytes = sum(s.total_size for s in empty)
        if empty and empty_bytes / f.reserved_bytes >= IDLE_SHARE:
            out.append(Advice("empty_cache", dev, note(
                "snapshot_empty_segments", segments=len(empty), empty=empty_bytes,
                reserved=f.reserved_bytes)))
        if not any(a.device == dev for a in out):
            out.append(Advice("none", dev, note(
                "snapshot_nothing_to_gain", free=f.free_bytes, reserved=f.reserved_bytes,
                unusable_share=f.unusable_share)))
    return out


def trace_advice(device: str, allocated_at_peak: int, reserved_at_peak: int | None,
                 peak_reserved: int | None) -> Advice | None:
    """Reserved against allocated at the peak; None where the trace reports no reserve."""
    if reserved_at_peak is None or peak_reserved is None or reserved_at_peak <= 0:
        return None
    idle = (reserved_at_peak - allocated_at_peak) / reserved_at_peak >= IDLE_SHARE
    return Advice("expandable_segments" if idle else "none", device,
                  note("trace_reserve_idle_at_peak" if idle else "trace_nothing_to_gain",
                       allocated=allocated_at_peak, reserved=reserved_at_peak,
                       peak_reserved=peak_reserved))
