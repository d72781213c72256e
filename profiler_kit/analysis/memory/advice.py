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
"""

from __future__ import annotations

import msgspec

from profiler_kit.analysis.memory.snapshot import Fragmentation, Snapshot

UNUSABLE_SHARE = 0.25
IDLE_SHARE = 0.10
MiB = 1 << 20


class Advice(msgspec.Struct, frozen=True):
    remedy: str  # "expandable_segments" | "empty_cache" | "none"
    device: str
    evidence: str


def snapshot_advice(snapshot: Snapshot, frags: list[Fragmentation]) -> list[Advice]:
    out = []
    for f in frags:
        dev = f"cuda:{f.device}"
        if f.reserved_bytes <= 0:
            continue
        idle_share = f.free_bytes / f.reserved_bytes
        if f.unusable_share >= UNUSABLE_SHARE and idle_share >= IDLE_SHARE:
            out.append(Advice("expandable_segments", dev, (
                f"{f.free_bytes / MiB:.1f} MiB of {f.reserved_bytes / MiB:.1f} MiB reserved is "
                f"free ({idle_share:.0%}); {f.unusable_share:.0%} of it is in blocks smaller "
                f"than the largest live block ({f.largest_active_bytes / MiB:.1f} MiB), the "
                f"largest free block is {f.largest_free_bytes / MiB:.1f} MiB: set "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")))
        empty = [s for s in snapshot.segments if s.device == f.device
                 and not any(b.state != "inactive" for b in s.blocks)]
        empty_bytes = sum(s.total_size for s in empty)
        if empty and empty_bytes / f.reserved_bytes >= IDLE_SHARE:
            out.append(Advice("empty_cache", dev, (
                f"{len(empty)} segment(s) of {empty_bytes / MiB:.1f} MiB "
                f"({empty_bytes / f.reserved_bytes:.0%} of reserved) hold no live block: "
                "torch.cuda.empty_cache() after the phase that allocated them returns them")))
        if not any(a.device == dev for a in out):
            out.append(Advice("none", dev, (
                f"{f.free_bytes / MiB:.1f} MiB of {f.reserved_bytes / MiB:.1f} MiB reserved is "
                f"free ({idle_share:.0%}), {f.unusable_share:.0%} of it in blocks too small "
                "for the largest live block: nothing to gain")))
    return out


def trace_advice(device: str, allocated_at_peak: int, reserved_at_peak: int | None,
                 peak_reserved: int | None) -> Advice | None:
    """Reserved against allocated at the peak; None where the trace reports no reserve."""
    if reserved_at_peak is None or peak_reserved is None or reserved_at_peak <= 0:
        return None
    idle = reserved_at_peak - allocated_at_peak
    share = idle / reserved_at_peak
    evidence = (f"at the peak {allocated_at_peak / MiB:.1f} MiB allocated of "
                f"{reserved_at_peak / MiB:.1f} MiB reserved ({share:.0%} reserved but free); "
                f"the most reserved was {peak_reserved / MiB:.1f} MiB")
    if share >= IDLE_SHARE:
        return Advice("expandable_segments", device, evidence + (
            ": free reserve at the peak is fragmentation or cached blocks of other sizes; "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets segments grow instead "
            "(an allocator snapshot's segments tell which)"))
    return Advice("none", device, evidence + ": nothing to gain")
