"""An allocator snapshot, typed, and what it shows: fragmentation, live blocks by line of
code, out-of-memory events, peaks over the recorded actions.

``torch.cuda.memory._snapshot()`` is plain dicts, lists, str, int, float and None
(:mod:`profiler_kit.sources.allocator_snapshot` reads the pickle). Fields relied on
(PyTorch's ``_memory_viz`` format):

- ``segments[]``: ``device``, ``address``, ``total_size``, ``allocated_size``,
  ``stream``, ``segment_type``, ``blocks[]`` with ``size``, ``requested_size``
  (optional, falls back to ``size``), ``address``, ``state``
  (``active_allocated`` | ``active_pending_free`` | ``inactive``), ``frames[]``
  (optional) of ``{filename, line, name}``.
- ``device_traces[device][]``: ``action``, ``addr``, ``size``, ``stream``, ``frames``
  (optional), ``time_us`` (optional, newer versions). An ``oom`` event's ``size`` is
  the request and its ``device_free`` (when present) the free device memory.

Anything else in the snapshot is ignored.
"""

from __future__ import annotations

from typing import Any

import msgspec

from profiler_kit.analysis.memory.code_sites import is_library_file
from profiler_kit.errors import TraceError

_ACTIVE = ("active_allocated", "active_pending_free")


class Frame(msgspec.Struct, frozen=True):
    filename: str
    line: int
    name: str


class Block(msgspec.Struct, frozen=True):
    address: int
    size: int
    requested_size: int
    state: str
    frames: tuple[Frame, ...]


class Segment(msgspec.Struct, frozen=True):
    device: int
    address: int
    total_size: int
    allocated_size: int
    stream: int
    segment_type: str
    blocks: tuple[Block, ...]

    @property
    def free_blocks(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.state == "inactive")

    @property
    def largest_free_bytes(self) -> int:
        return max((b.size for b in self.free_blocks), default=0)


class TraceEvent(msgspec.Struct, frozen=True, gc=False):
    """One allocator action; its stack stays as read and becomes ``Frame``s on demand.

    A snapshot holds up to a million of these (``max_entries``) with a stack each: typed
    in C by ``msgspec.convert`` and with the stack kept as PyTorch's shared frame dicts,
    a 100 MB snapshot reads in seconds (benchmarks/snapshot_reading.py).
    """

    action: str
    addr: int = 0
    size: int = 0
    stream: int = 0
    raw_frames: Any = msgspec.field(default=(), name="frames")
    time_us: int | None = None
    device_free: int | None = None

    @property
    def frames(self) -> tuple[Frame, ...]:
        """The stack, innermost first; () when absent or not a list of frame dicts."""
        try:
            return _frames(self.raw_frames)
        except (KeyError, TypeError, ValueError):
            return ()


class Snapshot(msgspec.Struct, frozen=True):
    segments: tuple[Segment, ...]
    traces: dict[int, tuple[TraceEvent, ...]]
    has_frames: bool  # False when recorded without stacks: sites cannot be named


def parse_snapshot(data: object, where: str = "snapshot") -> Snapshot:
    """The typed snapshot from the unpickled dict; wrong shape raises one-line TraceError.

    Trace events keep their stacks as the raw lists of ``data`` (see ``TraceEvent``).
    """
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        raise TraceError(f"{where}: not an allocator snapshot (no 'segments' list)")
    stacks = _Stacks()
    try:
        segments = tuple(_segment(s, stacks) for s in data["segments"])
        raw_traces = data.get("device_traces") or []
        traces = {dev: _events(events or []) for dev, events in enumerate(raw_traces)}
    except (KeyError, TypeError, ValueError, AttributeError, msgspec.ValidationError) as exc:
        raise TraceError(f"{where}: malformed allocator snapshot ({exc!r})") from None
    has_frames = any(b.frames for s in segments for b in s.blocks) or any(
        e.raw_frames for events in traces.values() for e in events)
    return Snapshot(segments, traces, has_frames)


class _Stacks:
    """One ``Frame`` per distinct frame dict and one tuple per distinct stack.

    PyTorch's snapshot shares one dict per distinct frame between all stacks (so the pickle
    stays small); converting each reference anew would multiply the memory by the depth.
    The raw dicts are kept alive here, so their ids stay unique while reading.
    """

    def __init__(self) -> None:
        self._frames: dict[int, tuple[dict, Frame]] = {}
        self._stacks: dict[tuple[int, ...], tuple[Frame, ...]] = {}

    def frame(self, raw: dict) -> Frame:
        hit = self._frames.get(id(raw))
        if hit is None:
            hit = (raw, Frame(str(raw["filename"]), int(raw["line"]), str(raw["name"])))
            self._frames[id(raw)] = hit
        return hit[1]

    def stack(self, raw) -> tuple[Frame, ...]:
        if not raw:
            return ()
        key = tuple(map(id, raw))
        hit = self._stacks.get(key)
        if hit is None:
            hit = self._stacks[key] = tuple(self.frame(f) for f in raw)
        return hit


def _segment(s: dict, stacks: _Stacks) -> Segment:
    blocks = tuple(Block(int(b["address"]), int(b["size"]),
                         int(b.get("requested_size", b["size"])), str(b["state"]),
                         stacks.stack(b.get("frames"))) for b in s["blocks"])
    return Segment(int(s["device"]), int(s["address"]), int(s["total_size"]),
                   int(s["allocated_size"]), int(s.get("stream", 0)),
                   str(s.get("segment_type", "")), blocks)


def _events(raw: list) -> tuple[TraceEvent, ...]:
    return tuple(msgspec.convert(raw, list[TraceEvent]))


def _frames(raw) -> tuple[Frame, ...]:
    return tuple(Frame(str(f["filename"]), int(f["line"]), str(f["name"])) for f in raw or ())


class Fragmentation(msgspec.Struct, frozen=True):
    device: int
    reserved_bytes: int
    allocated_bytes: int  # bytes in active blocks (rounded sizes, as the allocator holds them)
    requested_bytes: int  # what callers asked for in active blocks
    free_bytes: int  # reserved - allocated
    largest_free_bytes: int  # the largest inactive block in any segment
    largest_active_bytes: int  # the largest live block: a proxy for the request sizes in use
    unusable_share: float  # share of free bytes in blocks smaller than largest_active_bytes


def fragmentation(snapshot: Snapshot) -> list[Fragmentation]:
    """Per device: reserved vs allocated, and how much free memory is too cut up to reuse.

    A free block smaller than the largest live request cannot serve a request of that size
    again; its bytes count as unusable (the allocator never merges across segments).
    """
    out = []
    for dev in sorted({s.device for s in snapshot.segments}):
        segs = [s for s in snapshot.segments if s.device == dev]
        active = [b for s in segs for b in s.blocks if b.state in _ACTIVE]
        free = [b for s in segs for b in s.free_blocks]
        reserved = sum(s.total_size for s in segs)
        allocated = sum(b.size for b in active)
        largest_active = max((b.size for b in active), default=0)
        free_bytes = reserved - allocated
        unusable = sum(b.size for b in free if b.size < largest_active)
        out.append(Fragmentation(
            dev, reserved, allocated, sum(b.requested_size for b in active), free_bytes,
            max((b.size for b in free), default=0), largest_active,
            unusable / free_bytes if free_bytes > 0 else 0.0))
    return out


class Site(msgspec.Struct, frozen=True):
    frame: Frame | None  # the first user frame; None when recorded without stacks
    bytes: int
    blocks: int


def user_frame(frames: tuple[Frame, ...]) -> Frame | None:
    """The innermost frame outside torch and installed libraries (library frames folded)."""
    for f in frames:
        if not is_library_file(f.filename):
            return f
    return frames[0] if frames else None


def live_sites(snapshot: Snapshot, top: int = 10) -> list[Site]:
    """Bytes live in the snapshot by allocation site, largest first."""
    by: dict[Frame | None, list[int]] = {}
    for s in snapshot.segments:
        for b in s.blocks:
            if b.state in _ACTIVE:
                acc = by.setdefault(user_frame(b.frames), [0, 0])
                acc[0] += b.size
                acc[1] += 1
    sites = [Site(f, n, k) for f, (n, k) in by.items()]
    sites.sort(key=lambda s: -s.bytes)
    return sites[:top]


class OomEvent(msgspec.Struct, frozen=True):
    device: int
    requested_bytes: int
    device_free_bytes: int | None
    reserved_bytes: int  # of the snapshot's segments on that device (state at dump time)
    largest_free_bytes: int  # likewise
    frame: Frame | None


def oom_events(snapshot: Snapshot) -> list[OomEvent]:
    """Every ``oom`` action in the device traces, with the segment state the snapshot holds."""
    frag = {f.device: f for f in fragmentation(snapshot)}
    out = []
    for dev, events in snapshot.traces.items():
        f = frag.get(dev)
        for e in events:
            if e.action == "oom":
                out.append(OomEvent(dev, e.size, e.device_free,
                                    f.reserved_bytes if f else 0,
                                    f.largest_free_bytes if f else 0, user_frame(e.frames)))
    return out


class HistoryPeak(msgspec.Struct, frozen=True):
    device: int
    peak_allocated_bytes: int  # what torch.cuda.max_memory_allocated says over the history
    actions: int  # allocs and completed frees replayed


def history_peaks(snapshot: Snapshot) -> list[HistoryPeak]:
    """Per device with a recorded history: the most bytes allocated at any moment of it.

    The bytes live before the first recorded action are what is live at the dump less the
    net of the history (``max_entries`` keeps only the newest actions, so the start is
    unknown otherwise); a block counts from ``alloc`` to ``free_completed``, at its
    rounded size, as the allocator's ``allocated_bytes`` statistic counts it.
    """
    live = {f.device: f.allocated_bytes for f in fragmentation(snapshot)}
    out = []
    for dev, events in sorted(snapshot.traces.items()):
        level = top = actions = 0
        for e in events:
            if e.action == "alloc":
                level += e.size
            elif e.action == "free_completed":
                level -= e.size
            else:
                continue
            actions += 1
            top = max(top, level)
        if actions:
            out.append(HistoryPeak(dev, live.get(dev, 0) - level + top, actions))
    return out
