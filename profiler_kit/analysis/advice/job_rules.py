"""Rules on the ranks of a job together: why its collectives take the time they take.

From one rank's trace a collective's time is waiting and transferring at once. Side by
side (the job view, :mod:`profiler_kit.analysis.jobs.job_view`) they separate, and each
cause gets its own rule:

- ``waiting_for_late_rank``: the ranks' exposed wait (for the last rank to arrive, with
  nothing else to run) per step, over the step time. It names the late rank and what it
  did while the others waited (the ranges of its lead-ins, and whether its GPU computed
  or idled meanwhile), and advice for that: a faster interconnect does not help.
- ``slow_transfer``: collectives of at least ``SLOW_MIN_BYTES`` (bandwidth-bound sizes)
  whose bus bandwidth is far below the link between the ranks: NVLink (or AMD's
  Infinity Fabric) per direction, from the GPU's name, when every rank of the job ran on
  one host. Elsewhere the link is not in the traces, and a note says the rule was not
  judged.
- ``exposed_transfer``: the exposed transfer per step over the step time, with the
  advice of what the exposed collectives are for
  (:mod:`profiler_kit.analysis.jobs.comm_context`: DDP's bucket advice only for DDP's
  gradient all-reduce).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from profiler_kit.analysis.core.arrays import median
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.recommendation import Evidence, Recommendation
from profiler_kit.analysis.jobs import comm_context
from profiler_kit.analysis.jobs.rank_summary import RankSummary

if TYPE_CHECKING:
    from profiler_kit.analysis.jobs.job_view import Doing, JobView

WAIT_SHARE = 0.05  # exposed wait per rank per step / step time
EXPOSED_TRANSFER_SHARE = 0.10  # exposed transfer per rank per step / step time
CONTEXT_SHARE = 0.2  # a context with this share of the exposed transfer gets its advice
SLOW_MIN_BYTES = 16 << 20  # messages this large are bandwidth-bound on any link
SLOW_LINK_SHARE = 0.25  # bus bandwidth / link bandwidth below this is slow
SLOW_MIN_STEP_SHARE = 0.05  # ... and their transfer per rank per step / step time
LATE_RANKS_SHOWN = 3
GPU_BOUND_SHARE = 0.5  # the late rank's GPU computed this share of its lateness: imbalance

# the link between GPUs of one host, per GPU and direction (bytes/s), from the GPU's name:
# (pattern, bytes per second, link); PCIe cards and NVL pairs are left out (a bridge or
# not: the trace does not say)
LINKS = (
    (re.compile(r"\b(?:GB|B)(?:100|200|300)\b", re.IGNORECASE), 900e9, "NVLink 5"),
    (re.compile(r"\b(?:GH|H)(?:100|200|800|20)\b(?!.*(?:PCIe|NVL))", re.IGNORECASE), 450e9,
     "NVLink 4"),
    (re.compile(r"\bA(?:100|800)\b(?!.*PCIe)", re.IGNORECASE), 300e9, "NVLink 3"),
    (re.compile(r"\bV100\b(?!.*PCIe)", re.IGNORECASE), 150e9, "NVLink 2"),
    (re.compile(r"\bMI3(?:00X|25X)\b", re.IGNORECASE), 448e9, "Infinity Fabric"),
)
_DATALOADER = re.compile(r"DataLoader|data_?load|load_batch|wait_for_batch", re.IGNORECASE)
_OPTIMIZER = re.compile(r"^Optimizer\.|optimizer", re.IGNORECASE)


def job_recommendations(job: JobView, members: Sequence[RankSummary]
                        ) -> tuple[tuple[Recommendation, ...], tuple[Note, ...]]:
    """The job rules that fire, and notes on those that could not be judged."""
    if not job.instances:
        return (), ()
    step = _step_ns(job, members)
    if step <= 0:
        return (), (note("job_rules_no_step_time"),)
    notes: list[Note] = []
    on_device = {m.rank for m in members if m.on_device}
    recs = _waiting(job, step, on_device) + _slow_transfer(job, members, step, notes) \
        + _exposed_transfer(job, step)
    return tuple(recs), tuple(notes)


def _step_ns(job: JobView, members: Sequence[RankSummary]) -> float:
    """The median step (device side where every rank has one), else the median trace."""
    if job.steps:
        device = [d for st in job.steps for d in st.device_dur_ns]
        if all(d is not None for d in device):
            return float(median(device))
        return float(median([d for st in job.steps for d in st.dur_ns]))
    return float(median([m.window_end_ns - m.window_start_ns for m in members]))


def _per(job: JobView) -> str:
    return "per step" if job.step_count else "over the trace"


def _waiting(job: JobView, step: float, on_device: set[int | None]) -> list[Recommendation]:
    n = max(job.step_count, 1)
    ranks = max(len(job.per_rank), 1)
    wait = sum(r.exposed_wait_ns for r in job.per_rank) / ranks / n
    share = wait / step
    if share < WAIT_SHARE:
        return []
    late = [r for r in sorted(job.per_rank, key=lambda r: -r.caused_wait_per_step_ns)
            if r.caused_wait_per_step_ns > 0][:LATE_RANKS_SHOWN]
    s = job.straggler
    first = next((r for r in job.per_rank if s is not None and r.rank == s.rank), None) \
        or (late[0] if late else None)
    ev = [Evidence(f"exposed wait per rank {_per(job)}", wait, "ns"),
          Evidence("step time (median)" if job.step_count else "trace time (median)", step,
                   "ns")]
    for r in late:
        ev.append(Evidence(f"rank {r.rank}{f' ({r.host})' if r.host else ''} arrived last in "
                           f"{r.last_arrivals} of {r.instances} collectives; the others' wait "
                           f"for it {_per(job)}", r.caused_wait_per_step_ns, "ns"))
    gpu = first is not None and first.rank in on_device
    if first is not None:
        for d in first.late_doing[:LATE_RANKS_SHOWN]:
            ev.append(Evidence(f"meanwhile rank {first.rank} was in", d.ns, "ns",
                               name=d.label or "Python or untraced code"))
            if gpu:
                ev.append(Evidence("of it, its GPU computing", d.gpu_ns, "ns"))
    lead = first.late_doing[0] if first is not None and first.late_doing else None
    return [Recommendation(
        rule="waiting_for_late_rank", scope="job", variant=_wait_variant(lead),
        figures={"straggler": None if s is None else (s.rank, s.last_arrivals, s.instances),
                 "rank": None if first is None else first.rank,
                 "range": None if lead is None else lead.label,
                 # only the host_work variant words it, where the lead-in has time
                 "gpu_share": None if lead is None or not gpu else
                 lead.gpu_ns / lead.ns if lead.gpu_ns > 0 and lead.ns > 0 else 0.0},
        measured=share, threshold=WAIT_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev))]


def _wait_variant(d: Doing | None) -> str:
    """What the late rank did while the others waited (its first lead-in; None: none
    recorded), which decides the advice."""
    if d is None:
        return "no_lead_ins"
    if d.gpu_ns >= GPU_BOUND_SHARE * d.ns:
        return "gpu_bound"
    if _DATALOADER.search(d.label or ""):
        return "loading_data"
    if _OPTIMIZER.search(d.label or ""):
        return "optimizer"
    return "host_work" if d.label else "untraced"


def link_of(members: Sequence[RankSummary], missing: int) -> tuple[float, str] | None:
    """The link between the job's GPUs, where the traces tell it: every rank here, all
    on one host, with a GPU whose interconnect is known."""
    hosts = {m.host for m in members}
    names = {m.device_name for m in members}
    if missing or len(hosts) != 1 or None in hosts or len(names) != 1 or None in names:
        return None
    name = next(iter(names))
    for pattern, bw, link in LINKS:
        if name and pattern.search(name):
            return bw, f"{link} ({name})"
    return None


def _slow_transfer(job: JobView, members: Sequence[RankSummary], step: float,
                   notes: list[Note]) -> list[Recommendation]:
    big = [k for k in job.kinds if k.size_low_bytes >= SLOW_MIN_BYTES
           and k.median_busbw_bytes_per_s is not None]
    if not big:
        return []
    link = link_of(members, len(job.missing_ranks))
    if link is None:
        notes.append(_no_link(job, members))
        return []
    bw, name = link
    n = max(job.step_count, 1)
    slow = [(k, k.median_busbw_bytes_per_s / bw) for k in big  # type: ignore[operator]
            if k.median_busbw_bytes_per_s / bw < SLOW_LINK_SHARE]  # type: ignore[operator]
    time = sum(k.transfer_ns for k, _ in slow) / n
    if not slow or time / step < SLOW_MIN_STEP_SHARE:
        return []
    worst, share = max(slow, key=lambda ks: ks[0].transfer_ns)
    link_name = name.split(" (")[0]
    ev = [Evidence("link (per direction)", bw, "bytes/s", name=name),
          Evidence(f"their transfer per rank {_per(job)}", time, "ns"),
          Evidence("step time (median)" if job.step_count else "trace time (median)", step,
                   "ns")]
    ev += [Evidence(f"{k.kind} {k.size_low_bytes >> 20} MiB and up: bus bandwidth "
                    f"({s:.0%} of the link)", k.median_busbw_bytes_per_s, "bytes/s")  # type: ignore[arg-type]
           for k, s in slow]
    return [Recommendation(
        rule="slow_transfer", scope="job", figures={"kind": worst.kind, "link": link_name},
        measured=share, threshold=SLOW_LINK_SHARE, fires_when="below", unit="fraction",
        evidence=tuple(ev))]


def _no_link(job: JobView, members: Sequence[RankSummary]) -> Note:
    """Why the slow-transfer rule has no link to measure against, the first that holds."""
    if job.missing_ranks:
        return note("slow_transfer_no_link", why="ranks_missing",
                    missing=len(job.missing_ranks))
    hosts = {m.host for m in members}
    if None in hosts:
        return note("slow_transfer_no_link", why="no_host_name")
    if len(hosts) > 1:
        return note("slow_transfer_no_link", why="several_hosts", hosts=len(hosts))
    names = {m.device_name for m in members}
    if None in names:
        return note("slow_transfer_no_link", why="no_gpu_name")
    return note("slow_transfer_no_link", why="unknown_gpu",
                gpus=tuple(sorted(str(x) for x in names)))


def _exposed_transfer(job: JobView, step: float) -> list[Recommendation]:
    n = max(job.step_count, 1)
    ranks = max(len(job.per_rank), 1)
    transfer = sum(r.exposed_transfer_ns for r in job.per_rank) / ranks / n
    share = transfer / step
    if share < EXPOSED_TRANSFER_SHARE:
        return []
    by = [c for c in job.contexts if c.exposed_transfer_ns > 0]
    total = sum(c.exposed_transfer_ns for c in by) or 1
    main = [c.context for c in by if c.exposed_transfer_ns >= CONTEXT_SHARE * total] \
        or [c.context for c in by[:1]] or [comm_context.OTHER]
    ev = [Evidence(f"exposed transfer per rank {_per(job)}", transfer, "ns"),
          Evidence("step time (median)" if job.step_count else "trace time (median)", step,
                   "ns")]
    ev += [Evidence(f"exposed transfer in {comm_context.LABELS[c.context]} per rank "
                    f"{_per(job)}", c.exposed_transfer_ns / ranks / n, "ns")
           for c in by]
    return [Recommendation(
        rule="exposed_transfer", scope="job", figures={"contexts": tuple(main)},
        measured=share, threshold=EXPOSED_TRANSFER_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev))]
