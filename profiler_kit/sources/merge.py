"""One Chrome/Perfetto trace of a whole job: every rank's events, on one aligned clock.

- **Processes.** Each (rank, original pid) becomes a pid of its own, named
  ``rank N (host)`` (the host from the trace's ``distributedInfo`` or ``host_name``)
  and sorted by rank, so a rank's CPU and GPU rows sit together; the ranks' own
  ``process_name``/``process_sort_index`` metadata is replaced, the rest kept.
- **Clocks.** Every timestamp of a rank moves by the job view's clock shift for it
  (:class:`~profiler_kit.analysis.jobs.job_view.ClockShift`: subtracted from the rank's times).
- **Flows.** Each matched collective gets one flow per rank that waited: from the call
  of the rank that arrived last to the waiting rank's call (``ph`` ``s``/``f``, ``bp``
  ``e``), so a viewer draws who held whom up. The ranks' own flow ids are renumbered
  so that ranks never share one.
- **Streaming.** Ranks are written one after another, each streamed through in pieces
  (:mod:`profiler_kit.trace.event_stream`), so memory stays at a few pieces however
  many ranks there are; only the matched calls' rows are remembered for the flows.

The document starts with ``"schema": "profkit.merged-trace/1"`` and ends with
``"profkitMerge"``: per rank its trace, host, pids, shift and event count.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence
from typing import IO, Any

import msgspec

from profiler_kit.analysis.jobs.job_view import JobView
from profiler_kit.analysis.jobs.rank_summary import RankSummary
from profiler_kit.trace.event_stream import stream_events
from profiler_kit.trace.normalize import counter_device, us_to_ns

SCHEMA = "profkit.merged-trace/1"
FLOW_CAT = "profkit.collective"
# above any renumbered id of the ranks' own flows; below 2**53, so viewers that read
# JSON numbers as doubles keep every id distinct
FLOW_ID_BASE = 1 << 50
PID_SORT_STRIDE = 1 << 10  # process_sort_index: rank * stride + the pid's order
_REPLACED_META = {"process_name", "process_sort_index"}
_ENC = msgspec.json.Encoder()


class RankMerge(msgspec.Struct, frozen=True):
    rank: int
    host: str | None
    path: str
    shift_ns: int  # subtracted from every timestamp of the rank
    pids: dict[str, int]  # original pid (as text) -> pid in the merged trace
    events: int


class MergeReport(msgspec.Struct, frozen=True):
    schema: str
    job: str
    ranks: tuple[RankMerge, ...]
    flows: int  # flow arrows added (pairs of s/f events)
    clock_reference: str | None


def merge_job(members: Sequence[RankSummary], job: JobView, out: IO[bytes],
              piece_bytes: int | None = None) -> MergeReport:
    """Write the merged trace of ``members`` (the summaries of ``job``'s ranks, whose
    ``path`` are their traces) to ``out``; TraceError when a trace cannot be read."""
    members = sorted(members, key=lambda m: m.rank or 0)
    n = len(members)
    shifts = {s.rank: s.shift_ns for s in job.clock_shifts}
    wanted = _flow_calls(members, job)
    found: dict[int, dict[tuple[int, int], tuple[Any, Any]]] = defaultdict(dict)
    out.write(b'{"schema": "' + SCHEMA.encode() + b'", "displayTimeUnit": "ms", '
              b'"traceEvents": [\n')
    first = [True]
    next_pid = [0]
    ranks = []

    def emit(events: list[Any]) -> None:
        if not events:
            return
        data = _ENC.encode(events)[1:-1]
        if first[0]:
            first[0] = False
        else:
            out.write(b",\n")
        out.write(data)

    for index, m in enumerate(members):
        rank = m.rank or 0
        shift = shifts.get(rank, 0)
        pids: dict[Any, int] = {}
        count = [0]
        want = wanted.get(rank, set())
        hits = found[rank]

        def new_pid(pid: Any, pids: dict[Any, int] = pids) -> int:
            p = pids[pid] = next_pid[0]
            next_pid[0] += 1
            return p

        def sink(events: list[Any], shift: int = shift, pids: dict[Any, int] = pids,
                 count: list[int] = count, want: set = want, hits: dict = hits,
                 index: int = index, new_pid: Any = new_pid, rank: int = rank) -> None:
            kept = []
            for e in events:
                if not isinstance(e, dict):
                    continue
                if e.get("ph") == "M" and e.get("name") in _REPLACED_META:
                    continue
                pid = e.get("pid")
                if e.get("ph") == "C" and counter_device(pid) >= 0:
                    e["pid"] = f"rank {rank} {pid}"  # stays a GPU's counters, of its rank
                    p = None
                else:
                    key = pid if isinstance(pid, (int, str)) else None
                    p = pids.get(key)
                    if p is None:
                        p = new_pid(key)
                    e["pid"] = p
                ts = e.get("ts")
                ns = us_to_ns(ts) if ts is not None else None
                if isinstance(ns, int):
                    if want and e.get("ph") == "X":
                        dur = us_to_ns(e.get("dur"))
                        if isinstance(dur, int) and (ns, ns + dur) in want:
                            hits.setdefault((ns, ns + dur), (p, e.get("tid")))
                    if shift:
                        e["ts"] = _us(ns - shift, ts)
                if e.get("ph") in ("s", "t", "f") and "id" in e:
                    e["id"] = _flow_id(e["id"], index, n)
                kept.append(e)
            count[0] += len(kept)
            emit(kept)

        kwargs = {} if piece_bytes is None else {"piece_bytes": piece_bytes}
        header = stream_events(m.path, sink, **kwargs)
        host = m.host or _str(header.get("host_name"))
        name = f"rank {rank} ({host})" if host else f"rank {rank}"
        emit([meta for order, p in enumerate(pids.values()) for meta in (
            {"ph": "M", "name": "process_name", "pid": p, "tid": 0, "args": {"name": name}},
            {"ph": "M", "name": "process_sort_index", "pid": p, "tid": 0,
             "args": {"sort_index": rank * PID_SORT_STRIDE + order}})])
        ranks.append(RankMerge(rank, host, m.path, shift,
                               {str(k): v for k, v in pids.items()}, count[0]))
    flows = _write_flows(members, job, shifts, found, emit)
    report = MergeReport(SCHEMA, job.name, tuple(ranks), flows, job.clock_reference)
    out.write(b'\n], "profkitMerge": ' + msgspec.json.encode(report) + b"}\n")
    return report


def merge_job_pftrace(members: Sequence[RankSummary], job: JobView, out: IO[bytes],
                      gzipped: bool = False) -> MergeReport:
    """``merge_job``'s events written to ``out`` as a Perfetto-native trace: merged in
    memory at once, then encoded (``gzipped``: ``out`` compresses what it is given)."""
    from profiler_kit.trace.pftrace_writer import to_pftrace

    merged = io.BytesIO()
    report = merge_job(members, job, merged)
    events = msgspec.json.decode(merged.getvalue())["traceEvents"]
    out.write(to_pftrace(events, SCHEMA, compress=not gzipped))
    return report


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _us(ns: int, original: Any) -> int | float:
    """``ns`` in microseconds: an int where the original was and it divides exactly."""
    if type(original) is int and ns % 1000 == 0:
        return ns // 1000
    return ns / 1000


def _flow_id(value: Any, index: int, n: int) -> Any:
    """A rank's own flow id, made distinct from every other rank's."""
    if type(value) is int and 0 <= value < FLOW_ID_BASE // max(n, 1):
        return value * n + index
    return f"rank{index}:{value}"


def _calls_by_key(m: RankSummary) -> dict[tuple[str, int], Any]:
    return {(c.group, c.seq): c for c in m.calls}


def _flow_calls(members: Sequence[RankSummary], job: JobView) -> dict[int, set[tuple[int, int]]]:
    """Per rank, the (start, end) of its calls that belong to matched instances."""
    wanted: dict[int, set[tuple[int, int]]] = defaultdict(set)
    keys = {(i.group, i.seq) for i in job.instances}
    for m in members:
        for key, c in _calls_by_key(m).items():
            if key in keys:
                wanted[m.rank or 0].add((c.start_ns, c.end_ns))
    return wanted


def _write_flows(members: Sequence[RankSummary], job: JobView, shifts: dict[int, int],
                 found: dict[int, dict[tuple[int, int], tuple[Any, Any]]], emit: Any) -> int:
    """One flow per waiting rank and instance, from the last arrival's call to its own;
    the number written."""
    calls = {m.rank or 0: _calls_by_key(m) for m in members}
    next_id = FLOW_ID_BASE
    written = 0
    batch: list[dict[str, Any]] = []
    for inst in job.instances:
        key = (inst.group, inst.seq)
        src_call = calls.get(inst.last_rank, {}).get(key)
        if src_call is None:
            continue
        src = found[inst.last_rank].get((src_call.start_ns, src_call.end_ns))
        if src is None:
            continue
        src_ts = src_call.start_ns - shifts.get(inst.last_rank, 0)
        name = f"{inst.kind} #{inst.seq}"
        for rank, per_rank in calls.items():
            c = per_rank.get(key)
            if rank == inst.last_rank or c is None:
                continue
            dst = found[rank].get((c.start_ns, c.end_ns))
            if dst is None:
                continue
            end = c.end_ns - shifts.get(rank, 0)
            batch.append({"ph": "s", "cat": FLOW_CAT, "name": name, "id": next_id,
                          "pid": src[0], "tid": src[1], "ts": src_ts / 1000})
            batch.append({"ph": "f", "bp": "e", "cat": FLOW_CAT, "name": name,
                          "id": next_id, "pid": dst[0], "tid": dst[1],
                          "ts": max(end - 1, c.start_ns - shifts.get(rank, 0)) / 1000})
            next_id += 1
            written += 1
        if len(batch) >= 10_000:
            emit(batch)
            batch = []
    emit(batch)
    return written
