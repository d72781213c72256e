"""The job view: the ranks of one job side by side, from their :class:`RankSummary`.

Reads summaries only (never traces), so it runs wherever the summaries are.

- **Jobs.** Summaries that agree on the job (world size, backend, process groups) and
  name distinct ranks are one job; where ranks repeat, each folder is a job, and a rank
  seen twice in one folder starts another group. Anything unexpected is a warning, and
  each group is analyzed on its own (see :func:`group_jobs`).
- **Collectives matched across ranks.** The same instance on every rank of its group
  is the call with the same sequence number there (the trace's ``Seq``, else the
  order of the group's calls). Per instance: each rank's arrival (its call's start),
  its **wait** (last arrival - own arrival) and **transfer** (own end - last arrival);
  the instance's transfer time (last end - last arrival) gives the algorithm and bus
  bandwidth (nccl-tests' formulas, :mod:`.bandwidth`).
- **Clocks.** The ranks of an instance end together, within its transfer: an instance
  cannot end on one rank before the last rank arrived, and a rank's end lies no
  further from another's than the shortest call of the instance (the last arrival's
  own transfer) takes. When the ends say otherwise (hosts whose clocks differ) in
  most instances, or agree on an offset longer than that, consistently (spread under
  a quarter of it), each rank's clock is shifted by the median difference of its ends
  from the lowest rank's over the instances common to all ranks, and the shift is
  reported. So an offset smaller than a straggler's lateness is not taken for
  lateness, and lateness (starts, not ends) never for an offset. Ranks whose traces name
  the lowest rank's host share its clock and are never shifted: on one busy host a rank
  that returns from its collectives a little late, consistently, looks like an offset.
- **Straggler.** The rank that arrived last in most instances (of those where anyone
  waited), and how long per step the others waited for it.
- **Exposed communication** (no computation beside it) split into the part spent
  waiting and the part transferring.
- **Pipelines.** Each send is paired with the recv on another rank that overlaps it and
  ends nearest to it, of the same size (a fused NCCL SendRecv call with another
  SendRecv call, both sides sending and receiving); per rank its busy time, bubble (step window
  without computation) and time in point-to-point calls; and the pipeline's bubble on
  one aligned timeline (per step, the first rank's start to the last rank's end, for
  every rank, minus their computation).
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import PurePath

import msgspec
import numpy as np

from profiler_kit.analysis.core import intervals
from profiler_kit.analysis.core.arrays import median
from profiler_kit.analysis.core.collective_kinds import P2P, RECV, SEND, SENDRECV
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.analysis.jobs.bandwidth import algbw_bytes_per_s, busbw_bytes_per_s
from profiler_kit.analysis.jobs.comm_context import OTHER
from profiler_kit.analysis.jobs.rank_summary import DEFAULT_GROUP, Call, RankStep, RankSummary

# an instance counts for the straggler verdict when someone waited this long for it
MIN_WAIT_NS = 10_000
STRAGGLER_SHARE = 0.5  # "last in most collectives": more than this share
# ... and the others wait for it at least this share of the median step (with steps)
STRAGGLER_MIN_STEP_SHARE = 0.01
# size buckets of the per-type summary: [low, high) in bytes
SIZE_BUCKETS = ((0, 64 << 10), (64 << 10, 1 << 20), (1 << 20, 16 << 20), (16 << 20, 256 << 20),
                (256 << 20, 1 << 62))


class Doing(msgspec.Struct, frozen=True):
    """What a late rank did while the others waited for it: time in one range, per step."""

    label: str  # the outermost range below ProfilerStep# ("": none, Python or untraced)
    ns: float  # per step
    gpu_ns: float  # of it, its GPU computing (else idle while its CPU was in ``label``)


class ContextTotals(msgspec.Struct, frozen=True):
    """Exposed communication of the calls of one context (comm_context), summed over ranks."""

    context: str
    calls: int  # matched instances
    exposed_wait_ns: int
    exposed_transfer_ns: int


class RankTotals(msgspec.Struct, frozen=True):
    """One rank over the matched instances of its job."""

    rank: int
    label: str
    instances: int
    wait_ns: int  # summed waits (own arrival to the last arrival)
    transfer_ns: int  # summed own end - last arrival
    wait_per_step_ns: float
    exposed_ns: int  # the rank's exposed communication (no computation beside it)
    exposed_wait_ns: int
    exposed_transfer_ns: int
    last_arrivals: int  # instances in which it arrived last (someone waited)
    caused_wait_per_step_ns: float  # the others' mean wait for it, per step
    host: str | None = None  # the host the trace was written on
    # while the others waited for it (the instances it arrived last in, from the first
    # rank's arrival to its own): the time, and what it did then, per step (of its
    # recorded lead-ins; the rest is before them)
    late_per_step_ns: float = 0.0
    late_doing: tuple[Doing, ...] = ()


class KindSummary(msgspec.Struct, frozen=True):
    """Matched instances of one collective type and size bucket."""

    kind: str
    size_low_bytes: int
    size_high_bytes: int
    count: int
    wait_ns: int  # per rank on average, summed over the instances
    transfer_ns: int  # per rank on average, summed over the instances
    median_algbw_bytes_per_s: float | None
    median_busbw_bytes_per_s: float | None


class Instance(msgspec.Struct, frozen=True, array_like=True):
    """One collective matched across the ranks of its group."""

    group: str
    seq: int
    kind: str
    size_bytes: int | None
    step: int | None
    first_arrival_ns: int
    last_arrival_ns: int
    last_rank: int
    end_ns: int  # the last rank's end
    max_wait_ns: int
    transfer_ns: int  # last end - last arrival
    busbw_bytes_per_s: float | None


class StepAcross(msgspec.Struct, frozen=True):
    """One step on every rank that has it."""

    number: int
    ranks: tuple[int, ...]
    dur_ns: tuple[int, ...]  # CPU side, in ``ranks`` order
    device_dur_ns: tuple[int | None, ...]
    slowest_rank: int
    skew_ns: int  # slowest - fastest (CPU side)
    device_skew_ns: int | None


class Straggler(msgspec.Struct, frozen=True):
    rank: int
    last_arrivals: int
    instances: int  # instances in which someone waited
    others_wait_per_step_ns: float  # the others' mean wait for it, per step
    host: str | None = None  # its host, when the job's ranks ran on more than one


class ClockShift(msgspec.Struct, frozen=True):
    rank: int
    shift_ns: int  # subtracted from the rank's times


class P2PTransfer(msgspec.Struct, frozen=True, array_like=True):
    """A send matched with its recv on another rank."""

    src: int
    dst: int
    size_bytes: int | None
    step: int | None  # the sender's step
    send_start_ns: int
    recv_start_ns: int
    end_ns: int  # the later end
    wait_ns: int  # the earlier side's wait for the other
    waiting_rank: int
    transfer_ns: int  # later end - later start
    busbw_bytes_per_s: float | None  # size / transfer (the bus factor of send/recv is 1)
    # two fused SendRecv calls (each rank sends and receives; src is the lower rank)
    fused: bool = False


class StageTotals(msgspec.Struct, frozen=True):
    """One rank (a pipeline stage, or several) over its steps."""

    rank: int
    steps: int
    window_ns: int  # summed step windows (device side where there is one)
    busy_ns: int  # computation in them
    bubble_ns: int  # window - busy: no computation
    bubble_share: float | None
    p2p_ns: int  # point-to-point calls in them (union)
    recv_wait_ns: int  # waiting in matched recvs for the sender
    send_wait_ns: int  # waiting in matched sends for the receiver


class PipelineView(msgspec.Struct, frozen=True):
    """Point-to-point traffic between the ranks, and where the pipeline sits idle."""

    transfers: tuple[P2PTransfer, ...]
    unmatched_calls: int  # sends, recvs and fused SendRecv calls without a partner
    median_busbw_bytes_per_s: float | None
    stages: tuple[StageTotals, ...]
    # the whole pipeline on one aligned timeline: per step, the window from the first
    # rank's start to the last rank's end, times the ranks, minus their computation
    window_ns: int
    bubble_ns: int
    bubble_share: float | None


class JobView(msgspec.Struct, frozen=True):
    """The ranks of one job, aligned."""

    name: str  # the folder of the traces
    world_size: int | None
    backend: str | None
    ranks: tuple[int, ...]
    labels: tuple[str, ...]
    missing_ranks: tuple[int, ...]
    steps: tuple[StepAcross, ...]
    step_count: int  # steps the per-step figures divide by
    instances: tuple[Instance, ...]
    unmatched_calls: int  # calls beyond the instances every rank of the group has
    mismatched: int  # instances whose ranks disagree on type or size
    kinds: tuple[KindSummary, ...]
    per_rank: tuple[RankTotals, ...]
    straggler: Straggler | None
    clock_shifts: tuple[ClockShift, ...]  # empty: the clocks agreed
    clock_reference: str | None  # the instance the clocks were aligned at
    warnings: tuple[Note, ...]
    pipeline: PipelineView | None = None  # when the ranks send and receive
    contexts: tuple[ContextTotals, ...] = ()  # exposed communication by what it is for
    # rules on the job (job_rules): waiting for a late rank, slow transfer, exposed
    # transfer; and the rules that could not be judged, and why
    recommendations: tuple[Recommendation, ...] = ()
    rule_notes: tuple[Note, ...] = ()


def group_jobs(summaries: Sequence[RankSummary]) -> tuple[list[list[RankSummary]], list[Note]]:
    """Summaries grouped into jobs, and the warnings.

    Traces that agree on the job (world size, backend, process groups) and name distinct
    ranks are one job, wherever they lie (one folder per host is common). Where a rank
    repeats (the configurations of a run folder, two runs side by side), each folder is a
    job of its own, and within a folder a rank seen again starts another group, with a
    warning. Traces of one folder that disagree on the job are separated, with a warning.
    """
    warnings: list[Note] = []
    ranked = [s for s in summaries if s.rank is not None]
    by_folder: dict[str, list[RankSummary]] = defaultdict(list)
    for s in ranked:
        by_folder[folder_of(s)].append(s)
    for folder, members in by_folder.items():
        kinds: dict[tuple, list[RankSummary]] = defaultdict(list)
        for s in members:
            kinds[_signature(s)].append(s)
        if len(kinds) > 1:
            # each group: its traces' labels and its world size
            warnings.append(note("different_jobs_in_folder", folder=folder, groups=tuple(
                (tuple(m.label for m in ms), sig[0]) for sig, ms in kinds.items())))
    by_signature: dict[tuple, list[RankSummary]] = defaultdict(list)
    for s in ranked:
        by_signature[_signature(s)].append(s)
    jobs: list[list[RankSummary]] = []
    for members in by_signature.values():
        if len({m.rank for m in members}) == len(members):
            jobs.append(sorted(members, key=lambda m: m.rank or 0))
            continue
        per_folder: dict[str, list[RankSummary]] = defaultdict(list)
        for m in members:
            per_folder[folder_of(m)].append(m)
        for folder, ms in per_folder.items():
            groups: list[list[RankSummary]] = []
            for s in sorted(ms, key=lambda m: m.label):
                for g in groups:
                    if all(o.rank != s.rank for o in g):
                        g.append(s)
                        break
                else:
                    groups.append([s])
            if len(groups) > 1:
                dup = sorted({s.rank for g in groups[1:] for s in g if s.rank is not None})
                warnings.append(note("ranks_in_several_traces", folder=folder,
                                     ranks=tuple(dup), groups=len(groups)))
            jobs.extend(sorted(g, key=lambda m: m.rank or 0) for g in groups)
    return jobs, warnings


def folder_of(s: RankSummary) -> str:
    return str(PurePath(s.path).parent)


def _job_name(members: Sequence[RankSummary]) -> str:
    """The folder of the job's traces (their common folder when they lie in several)."""
    folders = sorted({folder_of(m) for m in members})
    if len(folders) == 1:
        return folders[0]
    try:
        return os.path.commonpath(folders)
    except ValueError:  # relative and absolute paths mixed
        return ", ".join(folders)


def view_job(members: Sequence[RankSummary], warnings: tuple[Note, ...] = ()) -> JobView:
    """The job view of the ranks ``members`` (one summary per rank), without its
    recommendations (:mod:`profiler_kit.analysis.job_analysis` adds them)."""
    members = sorted(members, key=lambda m: m.rank or 0)
    ranks = [m.rank for m in members]
    by_rank = {m.rank: m for m in members}
    world = max((m.world_size or 0 for m in members), default=0) or None
    notes = list(warnings)
    missing = sorted(set(range(world)) - set(ranks)) if world else []
    if missing:
        notes.append(note("ranks_without_trace", missing=tuple(missing), world=world,
                          ranks=tuple(ranks)))
    matched, unmatched, mismatched = _match(members)
    shifts, aligned = _clock_shifts(matched, ranks,  # type: ignore[arg-type]
                                    {m.rank: m.host for m in members})
    reference = None
    if aligned is not None:
        common, against = aligned
        # words, not a note: merged traces carry it (sources.merge), which cannot word one
        reference = (f"the median end of {common} collectives common to all ranks "
                     f"(against rank {against})")
        if shifts:
            notes.append(note("clocks_differ", collectives=common, against=against,
                              shifts=tuple((s.rank, s.shift_ns) for s in shifts)))
    shift = {s.rank: s.shift_ns for s in shifts}
    steps = _steps(members, shift)
    step_count = max(len(steps), 1)
    instances, waits, transfers, kinds_rows = [], defaultdict(int), defaultdict(int), []
    last_counts: Counter[int] = Counter()
    caused: dict[int, float] = defaultdict(float)
    pieces: dict[int, list[tuple[int, int, int]]] = defaultdict(list)  # rank -> (s, e, kind)
    by_context: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)  # (r, s, e, kind)
    context_calls: Counter[str] = Counter()
    n_inst = Counter()
    lead_ins = {m.rank: _lead_in_index(m) for m in members}
    late: dict[int, dict[str, list[float]]] = defaultdict(dict)  # rank -> label -> [ns, gpu]
    late_ns: Counter[int] = Counter()
    sizes = _group_sizes(members, world)
    for (group, seq), calls in matched:
        starts = {r: c.start_ns - shift.get(r, 0) for r, c in calls.items()}
        ends = {r: c.end_ns - shift.get(r, 0) for r, c in calls.items()}
        last_rank = max(starts, key=lambda r: (starts[r], -r))
        last = starts[last_rank]
        end = max(ends.values())
        first = calls[min(calls)]
        context = first.context or OTHER  # summaries written before contexts: other
        transfer = max(end - last, 0)
        size = first.size_bytes
        n = len(calls)
        wait_i = {r: last - s for r, s in starts.items()}
        max_wait = max(wait_i.values())
        for r in calls:
            waits[r] += wait_i[r]
            transfers[r] += max(ends[r] - last, 0)
            n_inst[r] += 1
            off = shift.get(r, 0)
            ex = calls[r].exposed
            for i in range(0, len(ex), 2):
                s, e = ex[i] - off, ex[i + 1] - off
                if s < last:
                    pieces[r].append((s, min(e, last), 0))
                    by_context[context].append((r, s, min(e, last), 0))  # type: ignore[arg-type]
                if e > last:
                    pieces[r].append((max(s, last), e, 1))
                    by_context[context].append((r, max(s, last), e, 1))  # type: ignore[arg-type]
        context_calls[context] += 1
        if max_wait >= MIN_WAIT_NS and n > 1:
            last_counts[last_rank] += 1
            others = [w for r, w in wait_i.items() if r != last_rank]
            caused[last_rank] += sum(others) / len(others)
            off = shift.get(last_rank, 0)
            late_ns[last_rank] += max_wait  # type: ignore[index]
            _add_lead_in(late[last_rank], lead_ins[last_rank], calls[last_rank],  # type: ignore[index]
                         min(starts.values()) + off, last + off)
        busbw = busbw_bytes_per_s(first.kind, size, transfer, sizes.get(group, n))
        alg = algbw_bytes_per_s(size, transfer)
        instances.append(Instance(group, seq, first.kind, size, first.step, min(starts.values()),
                                  last, last_rank, end, max_wait, transfer, busbw))
        kinds_rows.append((first.kind, size, sum(wait_i.values()) / n,
                           sum(max(ends[r] - last, 0) for r in calls) / n, alg, busbw))
    significant = sum(last_counts.values())
    straggler = None
    if significant:
        top, count = max(last_counts.items(), key=lambda kv: (kv[1], -kv[0]))
        per_step = caused[top] / step_count
        durs = [d for st in steps for d in st.dur_ns]
        enough = not durs or per_step >= STRAGGLER_MIN_STEP_SHARE * float(median(durs))
        if count > STRAGGLER_SHARE * significant and len(ranks) > 1 and enough:
            hosts = {m.host for m in members if m.host}
            straggler = Straggler(top, count, significant, per_step,
                                  by_rank[top].host if len(hosts) > 1 else None)
    per_rank = []
    for r in ranks:
        m = by_rank[r]
        ex_wait, ex_transfer = _exposed_split(pieces.get(r, []))
        per_rank.append(RankTotals(
            rank=r, label=m.label, instances=n_inst[r], wait_ns=waits[r],  # type: ignore[arg-type]
            transfer_ns=transfers[r], wait_per_step_ns=waits[r] / step_count,
            exposed_ns=m.exposed_ns, exposed_wait_ns=ex_wait, exposed_transfer_ns=ex_transfer,
            last_arrivals=last_counts[r], caused_wait_per_step_ns=caused[r] / step_count,  # type: ignore[index]
            host=m.host, late_per_step_ns=late_ns[r] / step_count,  # type: ignore[index]
            late_doing=_doing(late.get(r, {}), step_count)))  # type: ignore[arg-type]
    if mismatched:
        notes.append(note("collectives_mismatched", count=mismatched))
    return JobView(
        name=_job_name(members),
        world_size=world,
        backend=members[0].backend,
        ranks=tuple(ranks),  # type: ignore[arg-type]
        labels=tuple(m.label for m in members),
        missing_ranks=tuple(missing),
        steps=steps,
        step_count=len(steps),
        instances=tuple(instances),
        unmatched_calls=unmatched,
        mismatched=mismatched,
        kinds=_kind_summaries(kinds_rows),
        per_rank=tuple(per_rank),
        straggler=straggler,
        clock_shifts=tuple(shifts),
        clock_reference=reference,
        warnings=tuple(notes),
        pipeline=_pipeline(members, shift, steps),
        contexts=_context_totals(by_context, context_calls),
    )


def _group_sizes(members: Sequence[RankSummary], world: int | None) -> dict[str, int]:
    """Ranks per process group, where the traces say (the default group: the world): the
    bus factor counts every rank of the group, not only those with a trace here."""
    out = {g.name: len(g.ranks) for m in members for g in m.groups if g.ranks}
    if world and DEFAULT_GROUP not in out:
        out[DEFAULT_GROUP] = world
    return out


def _lead_in_index(m: RankSummary) -> dict[int, list]:
    """A rank's lead-in pieces by call (keyed by the call object's id)."""
    by_call: dict[int, list] = defaultdict(list)
    for p in m.activity:
        if 0 <= p.call < len(m.calls):
            by_call[id(m.calls[p.call])].append(p)
    labels = m.labels
    return {k: [(p.start_ns, p.end_ns, labels[p.label] if 0 <= p.label < len(labels) else "",
                 p.gpu_ns) for p in v] for k, v in by_call.items()}


def _add_lead_in(into: dict[str, list[float]], index: dict[int, list], call: Call,
                 lo: int, hi: int) -> None:
    """Add what the rank did in ``[lo, hi)`` (its clock) before ``call``, by range."""
    for s, e, label, gpu in index.get(id(call), ()):
        a, b = max(s, lo), min(e, hi)
        if b <= a:
            continue
        part = (b - a) / (e - s)
        acc = into.setdefault(label, [0.0, 0.0])
        acc[0] += b - a
        acc[1] += gpu * part


def _doing(late: dict[str, list[float]], steps: int) -> tuple[Doing, ...]:
    return tuple(Doing(label, ns / steps, gpu / steps)
                 for label, (ns, gpu) in sorted(late.items(), key=lambda kv: -kv[1][0]))


def _context_totals(by_context: dict[str, list[tuple[int, int, int, int]]],
                    calls: Counter[str]) -> tuple[ContextTotals, ...]:
    """Exposed wait and transfer per context: per rank the union of its pieces (a wait
    that is also another call's transfer counts as transfer), summed over ranks."""
    out = []
    for context in calls:
        rows = by_context.get(context, [])
        wait = transfer = 0
        per_rank: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for r, s, e, kind in rows:
            per_rank[r].append((s, e, kind))
        for ps in per_rank.values():
            w, t = _exposed_split(ps)
            wait += w
            transfer += t
        out.append(ContextTotals(context, calls[context], wait, transfer))
    return tuple(sorted(out, key=lambda c: -(c.exposed_wait_ns + c.exposed_transfer_ns)))


def _pipeline(members: Sequence[RankSummary], shift: dict[int, int],
              steps: tuple[StepAcross, ...]) -> PipelineView | None:
    """Sends matched with recvs, per-stage busy/bubble/P2P time, the pipeline's bubble."""
    if not any(c.kind in P2P for m in members for c in m.calls):
        return None
    transfers, unmatched = _match_p2p(members, shift)
    recv_wait: Counter[int] = Counter()
    send_wait: Counter[int] = Counter()
    for t in transfers:  # in a fused pair both ranks receive: a wait is for data
        side = recv_wait if t.fused or t.waiting_rank != t.src else send_wait
        side[t.waiting_rank] += t.wait_ns
    stages = []
    for m in members:
        r = m.rank
        window = sum(_window(s)[1] - _window(s)[0] for s in m.steps)
        busy = sum(s.busy_ns for s in m.steps)
        stages.append(StageTotals(
            rank=r, steps=len(m.steps), window_ns=window, busy_ns=busy,  # type: ignore[arg-type]
            bubble_ns=window - busy, bubble_share=(window - busy) / window if window else None,
            p2p_ns=sum(s.p2p_ns for s in m.steps), recv_wait_ns=recv_wait[r],  # type: ignore[index]
            send_wait_ns=send_wait[r]))  # type: ignore[index]
    # the whole pipeline: steps every rank has, on the aligned clocks
    by_rank = {m.rank: {s.number: s for s in m.steps} for m in members}
    total_window = total_busy = 0
    for st in steps:
        if len(st.ranks) != len(members):
            continue
        spans = [_window(by_rank[r][st.number]) for r in st.ranks]
        offs = [shift.get(r, 0) for r in st.ranks]
        lo = min(a - o for (a, _), o in zip(spans, offs, strict=True))
        hi = max(b - o for (_, b), o in zip(spans, offs, strict=True))
        total_window += (hi - lo) * len(st.ranks)
        total_busy += sum(by_rank[r][st.number].busy_ns for r in st.ranks)
    bws = [t.busbw_bytes_per_s for t in transfers if t.busbw_bytes_per_s is not None]
    return PipelineView(
        transfers=tuple(transfers), unmatched_calls=unmatched,
        median_busbw_bytes_per_s=float(median(bws)) if bws else None,
        stages=tuple(stages), window_ns=total_window, bubble_ns=total_window - total_busy,
        bubble_share=(total_window - total_busy) / total_window if total_window else None)


def _window(step: RankStep) -> tuple[int, int]:
    """A step's window on its rank's clock: device side where there is one."""
    if step.device_start_ns is not None and step.device_dur_ns is not None:
        return step.device_start_ns, step.device_start_ns + step.device_dur_ns
    return step.start_ns, step.start_ns + step.dur_ns


def _match_p2p(members: Sequence[RankSummary], shift: dict[int, int]
               ) -> tuple[list[P2PTransfer], int]:
    """Sends paired with recvs on other ranks; the pairs, and the calls left over.

    Traces name no peer, so between two ranks the k-th send of one pairs with the k-th
    recv of the other (of the same size); among more ranks, each send pairs with the
    recv of the same size on another rank that ends nearest to it (the two sides of a
    transfer end together)."""
    sends, recvs, fused = [], [], []
    unmatched = 0
    for m in members:
        off = shift.get(m.rank, 0)  # type: ignore[arg-type]
        for c in m.calls:
            item = (c.end_ns - off, c.start_ns - off, m.rank, c)
            if c.kind == SEND:
                sends.append(item)
            elif c.kind == RECV:
                recvs.append(item)
            elif c.kind == SENDRECV:
                fused.append(item)
    fused_pairs, left = _pair_fused(fused, len({m.rank for m in members}) == 2)
    unmatched += left
    pairs: list[tuple[tuple, tuple]] = []
    ranks = {m.rank for m in members}
    if len(ranks) == 2:
        for a in ranks:
            out_a = sorted((s for s in sends if s[2] == a), key=lambda x: x[1])
            in_b = sorted((r for r in recvs if r[2] != a), key=lambda x: x[1])
            n = min(len(out_a), len(in_b))
            pairs += [(out_a[k], in_b[k]) for k in range(n)
                      if _same_size(out_a[k][3], in_b[k][3])]
        unmatched += len(sends) + len(recvs) - 2 * len(pairs)
    else:
        recvs.sort(key=lambda x: x[0])
        ends = [r[0] for r in recvs]
        used = [False] * len(recvs)
        for send in sorted(sends, key=lambda x: x[0]):
            best, best_d = -1, None
            i = bisect_left(ends, send[0])
            for direction in (-1, 1):
                j = i if direction == 1 else i - 1
                while 0 <= j < len(recvs):
                    d = abs(recvs[j][0] - send[0])
                    if best_d is not None and d > best_d:
                        break
                    if not used[j] and recvs[j][2] != send[2] and _same_size(send[3],
                                                                             recvs[j][3]):
                        best, best_d = j, d
                    j += direction
            if best < 0:
                unmatched += 1
                continue
            used[best] = True
            pairs.append((send, recvs[best]))
        unmatched += used.count(False)
    out = []
    for is_fused, matched in ((False, pairs), (True, fused_pairs)):
        for (s_end, s_start, src, call), (r_end, r_start, dst, rc) in matched:
            last = max(s_start, r_start)
            end = max(s_end, r_end)
            transfer = end - last
            size = call.size_bytes if call.size_bytes is not None else rc.size_bytes
            out.append(P2PTransfer(src, dst, size, call.step, s_start, r_start, end,
                                   abs(r_start - s_start), src if s_start < r_start else dst,
                                   transfer, busbw_bytes_per_s(SEND, size, transfer, 2),
                                   is_fused))
    out.sort(key=lambda t: min(t.send_start_ns, t.recv_start_ns))
    return out, unmatched


def _pair_fused(items: list[tuple], two_ranks: bool) -> tuple[list[tuple[tuple, tuple]], int]:
    """Fused SendRecv calls paired across ranks, the lower rank first, and those left.

    Each side both sends and receives, so a call pairs with a SendRecv call of the same
    size on another rank: between two ranks the k-th of each; among more, the one that
    ends nearest to it (both sides of an exchange end together)."""
    pairs: list[tuple[tuple, tuple]] = []
    if two_ranks:
        ranks = sorted({it[2] for it in items})
        if len(ranks) == 2:
            a, b = ([sorted((it for it in items if it[2] == r), key=lambda x: x[1])
                     for r in ranks])
            pairs = [(x, y) for x, y in zip(a, b, strict=False) if _same_size(x[3], y[3])]
        return pairs, len(items) - 2 * len(pairs)
    items = sorted(items, key=lambda x: x[0])
    used = [False] * len(items)
    for i, it in enumerate(items):
        if used[i]:
            continue
        best, best_d = -1, None
        for j in range(i + 1, len(items)):
            d = items[j][0] - it[0]
            if best_d is not None and d > best_d:
                break
            if not used[j] and items[j][2] != it[2] and _same_size(it[3], items[j][3]):
                best, best_d = j, d
        if best >= 0:
            used[i] = used[best] = True
            pairs.append(tuple(sorted((it, items[best]), key=lambda x: x[2])))  # type: ignore[arg-type]
    return pairs, used.count(False)


def _same_size(a: Call, b: Call) -> bool:
    return a.size_bytes is None or b.size_bytes is None or a.size_bytes == b.size_bytes


def _signature(s: RankSummary) -> tuple:
    groups = tuple(sorted((g.name, g.ranks or ()) for g in s.groups))
    return (s.world_size, s.backend, groups)


def _match(members: Sequence[RankSummary]
           ) -> tuple[list[tuple[tuple[str, int], dict[int, Call]]], int, int]:
    """Instances as {rank: call}, in order of the first rank's start; the calls left
    over; and how many instances disagree on type or size."""
    present = {m.rank for m in members}
    calls: dict[tuple[str, bool], dict[int, dict[int, Call]]] = defaultdict(dict)
    group_ranks: dict[str, set[int]] = {}
    for m in members:
        for g in m.groups:
            if g.ranks:
                group_ranks.setdefault(g.name, set(g.ranks))
        for c in m.calls:
            if c.kind in P2P:
                continue  # point-to-point calls are matched by the pipeline view
            calls[(c.group, False)].setdefault(m.rank, {})[c.seq] = c  # type: ignore[index]
    out = []
    unmatched = mismatched = 0
    for (group, _), per_rank in calls.items():
        expected = group_ranks.get(group, present) & present  # type: ignore[operator]
        seqs = None
        for r in expected:
            have = set(per_rank.get(r, {}))
            seqs = have if seqs is None else seqs & have
        seqs = seqs or set()
        total = sum(len(v) for v in per_rank.values())
        unmatched += total - len(seqs) * len(expected)
        if len(expected) < 2:
            continue
        for seq in sorted(seqs):
            inst = {r: per_rank[r][seq] for r in sorted(expected)}
            kinds = {c.kind for c in inst.values()}
            sizes = {c.size_bytes for c in inst.values()}
            if len(kinds) > 1 or len(sizes) > 1:
                mismatched += 1
            out.append(((group, seq), inst))
    out.sort(key=lambda kv: min(c.start_ns for c in kv[1].values()))
    return out, unmatched, mismatched


def _clock_shifts(matched: list[tuple[tuple[str, int], dict[int, Call]]], ranks: list[int],
                  hosts: dict[int, str | None]
                  ) -> tuple[list[ClockShift], tuple[int, int] | None]:
    """Shifts that make the ranks' clocks agree, when they visibly do not (see the
    module docstring), and what they were aligned at (the collectives common to all
    ranks, and the rank the others are set against); none otherwise, and never for a
    rank on the lowest rank's host."""
    ref_host = hosts.get(min(ranks)) if ranks else None
    elsewhere = [r for r in ranks if not (ref_host and hosts.get(r) == ref_host)]
    if not matched or not elsewhere:
        return [], None
    impossible = 0
    for _, calls in matched:
        last = max(c.start_ns for c in calls.values())
        if min(c.end_ns for c in calls.values()) < last:
            impossible += 1
    everyone = set(ranks)
    common = [calls for _, calls in matched if set(calls) == everyone]
    if not common:
        return [], None
    ref = min(everyone)
    shortest = float(median([min(c.end_ns - c.start_ns for c in calls.values())
                                for calls in common]))
    medians = {}
    consistent = False
    for r in sorted((everyone - {ref}) & set(elsewhere)):
        diffs = np.array([calls[r].end_ns - calls[ref].end_ns for calls in common], dtype=float)
        d = float(median(diffs))
        medians[r] = int(round(d))
        spread = float(median(np.abs(diffs - d)))
        consistent |= len(common) >= 3 and abs(d) > shortest and spread * 4 < abs(d)
    if impossible * 10 < len(matched) and not consistent:  # a rare early end is noise
        return [], None
    shifts = [ClockShift(r, d) for r, d in medians.items() if d != 0]
    return shifts, (len(common), ref)


def _steps(members: Sequence[RankSummary], shift: dict[int, int]) -> tuple[StepAcross, ...]:
    numbers: dict[int, dict[int, tuple[int, int | None]]] = defaultdict(dict)
    for m in members:
        for s in m.steps:
            numbers[s.number][m.rank] = (s.dur_ns, s.device_dur_ns)  # type: ignore[index]
    out = []
    for number in sorted(numbers):
        per = numbers[number]
        ranks = tuple(sorted(per))
        durs = tuple(per[r][0] for r in ranks)
        dev = tuple(per[r][1] for r in ranks)
        slowest = ranks[int(np.argmax(durs))]
        known = [d for d in dev if d is not None]
        out.append(StepAcross(number, ranks, durs, dev, slowest, max(durs) - min(durs),
                              max(known) - min(known) if len(known) == len(dev) else None))
    return tuple(out)


def _exposed_split(pieces: list[tuple[int, int, int]]) -> tuple[int, int]:
    """Exposed wait and exposed transfer of one rank: the union of its exposed pieces
    during transfers, and of those during waits outside any transfer."""
    if not pieces:
        return 0, 0
    arr = np.array(pieces, dtype=np.int64)
    tr = arr[arr[:, 2] == 1]
    wa = arr[arr[:, 2] == 0]
    tr_u = intervals.union(tr[:, 0], tr[:, 1])
    wa_u = intervals.union(wa[:, 0], wa[:, 1])
    transfer = int((tr_u[1] - tr_u[0]).sum())
    wait_all = int((wa_u[1] - wa_u[0]).sum())
    return wait_all - intervals.intersection_length(wa_u, tr_u), transfer


def _kind_summaries(rows: list[tuple]) -> tuple[KindSummary, ...]:
    buckets: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    for row in rows:
        size = row[1] or 0
        b = next(i for i, (lo, hi) in enumerate(SIZE_BUCKETS) if lo <= size < hi)
        buckets[(row[0], b)].append(row)
    out = []
    for (kind, b), rs in sorted(buckets.items()):
        alg = [r[4] for r in rs if r[4] is not None]
        bus = [r[5] for r in rs if r[5] is not None]
        lo, hi = SIZE_BUCKETS[b]
        out.append(KindSummary(kind, lo, hi, len(rs), int(round(sum(r[2] for r in rs))),
                               int(round(sum(r[3] for r in rs))),
                               float(median(alg)) if alg else None,
                               float(median(bus)) if bus else None))
    return tuple(out)

