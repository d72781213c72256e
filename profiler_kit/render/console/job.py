"""Rich console output of the job view (ranks aligned) and of one rank's communication.

Formats, never computes: every number comes from ``profiler_kit.analysis.jobs.job_view`` or
``profiler_kit.analysis.jobs.rank_summary``.
"""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from profiler_kit.analysis.core.recommendation import Evidence
from profiler_kit.analysis.jobs.job_view import JobView, PipelineView, Straggler
from profiler_kit.render.wording import rules, units
from profiler_kit.render.wording.notes import said
from profiler_kit.render.wording.units import link_bandwidth

_TABLE = {"box": box.SIMPLE_HEAD, "pad_edge": False, "title_justify": "left",
          "title_style": "bold", "caption_justify": "left"}
# per-rank step columns, in characters, that still fit an 80-column terminal; beyond,
# steps show the slowest and the fastest rank and the skew
STEP_COLUMNS_WIDTH = 40
MAX_RANK_ROWS = 16  # beyond this many ranks, the per-rank table shows the telling ones


def size_bucket(low: int, high: int) -> str:
    """A message size range, short: ``< 64K``, ``1M-16M``, ``>= 256M`` (binary units)."""
    def short(n: int) -> str:
        return units.nbytes(n).replace(" ", "").replace("iB", "")

    if low == 0:
        return f"< {short(high)}"
    if high >= 1 << 61:
        return f">= {short(low)}"
    return f"{short(low)}-{short(high)}"


def straggler_line(s: Straggler | None, step_count: int) -> Text:
    """The verdict, one line."""
    per = "per step" if step_count else "over the trace"
    if s is None:
        return Text("Straggler: none (no rank arrived last in most collectives)", style="green")
    t = Text("Straggler: ", style="bold")
    t.append(f"rank {s.rank}" + (f" ({s.host})" if s.host else ""), style="bold red")
    t.append(f" arrived last in {s.last_arrivals} of {s.instances} collectives where a rank "
             f"waited; the others wait {units.duration(s.others_wait_per_step_ns)} {per} for it")
    return t


def wait_transfer_line(j: JobView) -> Text:
    """Exposed communication split into waiting and transferring, summed over the ranks."""
    wait = sum(r.exposed_wait_ns for r in j.per_rank)
    transfer = sum(r.exposed_transfer_ns for r in j.per_rank)
    n = max(j.step_count, 1)
    per = "per step" if j.step_count else "over the trace"
    return Text(f"Exposed communication per rank {per}: "
                f"wait {units.duration(wait / n / len(j.per_rank))}, "
                f"transfer {units.duration(transfer / n / len(j.per_rank))}")


def job_view(j: JobView) -> Panel:
    parts: list = []
    head = Text(f"Job: {j.name}", style="bold")
    world = f"{len(j.ranks)} of {j.world_size} ranks" if j.world_size else f"{len(j.ranks)} ranks"
    head.append(f"  ({world}; {j.backend or 'backend unknown'}; {len(j.instances)} collectives "
                f"matched; {j.step_count} steps)", style="dim")
    parts.append(head)
    for w in said(j.warnings):
        parts.append(Text(f"warning: {w}", style="yellow"))
    if j.instances:
        parts.append(straggler_line(j.straggler, j.step_count))
        parts.append(wait_transfer_line(j))
    else:
        parts.append(Text("No collective matched across the ranks: no straggler verdict, no "
                          "wait/transfer split", style="dim"))
    if j.instances:
        parts.extend(_per_rank(j))
    if j.kinds:
        kinds = Table(title="Collectives by type and size (wait, transfer: per rank, summed; "
                            "bandwidth: median)", **_TABLE)
        for col in ("type", "size", "count", "wait", "transfer", "algbw", "busbw"):
            kinds.add_column(col, justify="left" if col in ("type", "size") else "right")
        for k in j.kinds:
            kinds.add_row(k.kind, size_bucket(k.size_low_bytes, k.size_high_bytes),
                          f"{k.count:,}", units.duration(k.wait_ns), units.duration(k.transfer_ns),
                          link_bandwidth(k.median_algbw_bytes_per_s),
                          link_bandwidth(k.median_busbw_bytes_per_s))
        kinds.caption = "algbw: bytes / transfer time; busbw: algbw scaled to compare with " \
                        "the link (nccl-tests)"
        parts.append(kinds)
    if j.steps:
        parts.append(_steps(j))
    if j.pipeline is not None:
        parts.extend(_pipeline(j.pipeline))
    parts.extend(_recommendations(j))
    return Panel(Group(*parts), box=box.ROUNDED, expand=True)


def _per_rank(j: JobView) -> list[Table]:
    """Per rank, in two tables narrow enough for 80 columns: who waits and who is waited
    for, then the time in the matched collectives."""
    shown = j.per_rank
    caption = None
    if len(shown) > MAX_RANK_ROWS:  # the ranks others wait for, then those that wait most
        shown = tuple(sorted(shown, key=lambda r: (-r.caused_wait_per_step_ns,
                                                   -r.wait_per_step_ns, r.rank))[:MAX_RANK_ROWS])
        caption = (f"the {MAX_RANK_ROWS} of {len(j.per_rank)} ranks the others wait for most, "
                   "then those that wait most; every rank in --json")
    many_hosts = len({r.host for r in j.per_rank if r.host}) > 1
    per = "/step" if j.step_count else ""
    waits = Table(title="Per rank: who waits, who is waited for", caption=caption, **_TABLE)
    for col in ("rank", "trace", "calls", f"waits{per}", "last", f"waited for{per}"):
        waits.add_column(col, justify="left" if col == "trace" else "right")
    times = Table(title="Per rank: time in the matched collectives (summed)", **_TABLE)
    for col in ("rank", "wait", "transfer", "exposed wait", "exposed transfer"):
        times.add_column(col, justify="right")
    for r in shown:
        rank = f"{r.rank} ({r.host})" if many_hosts and r.host else str(r.rank)
        waits.add_row(rank, Text(r.label, overflow="fold"), f"{r.instances:,}",
                      units.duration(r.wait_per_step_ns), f"{r.last_arrivals:,}",
                      units.duration(r.caused_wait_per_step_ns))
        times.add_row(rank, units.duration(r.wait_ns), units.duration(r.transfer_ns),
                      units.duration(r.exposed_wait_ns), units.duration(r.exposed_transfer_ns))
    legend = Text(f"calls: collectives matched; waits{per}: its wait for the last rank; last: "
                  f"collectives it arrived last in; waited for{per}: the others' mean wait for "
                  "it; exposed: with no computation beside it", style="dim")
    return [waits, times, legend]


def _recommendations(j: JobView) -> list[Text]:
    """The job's rules that fired, with their evidence, and those not judged."""
    if not j.recommendations and not j.rule_notes:
        return []
    t = Text("Recommendations for the job\n" if j.recommendations else
             "Recommendations for the job: none fired.\n", style="bold")
    for i, r in enumerate(j.recommendations, 1):
        cmp = "<" if r.fires_when == "below" else "≥"
        t.append(f"{i}. {rules.title(r)}: {units.percent(r.measured)} {cmp} "
                 f"{units.percent(r.threshold)} ({r.rule})\n", style="yellow")
        t.append(f"   {rules.advice(r)} Evidence: {_evidence(r.evidence)}\n")
    for n in said(j.rule_notes):
        t.append(f"note: {n}\n", style="dim")
    return [t]


def _evidence(ev: tuple[Evidence, ...]) -> str:
    def value(e: Evidence) -> str:
        if e.unit == "ns":
            return units.duration(e.value)  # type: ignore[arg-type]
        if e.unit == "bytes/s":
            return link_bandwidth(e.value)  # type: ignore[arg-type]
        if e.unit == "fraction":
            return units.percent(e.value)  # type: ignore[arg-type]
        return f"{e.value:,}" if isinstance(e.value, int) else str(e.value)

    return "; ".join(f"{e.label}{' ' + e.name if e.name else ''} {value(e)}" for e in ev)


def _pipeline(p: PipelineView) -> list:
    out: list = []
    line = Text("Send/recv (pipeline stages): ", style="bold")
    line.append(f"{len(p.transfers):,} sends matched with their recvs"
                + (f" ({p.unmatched_calls:,} calls unmatched)" if p.unmatched_calls else "")
                + f"; median bandwidth {link_bandwidth(p.median_busbw_bytes_per_s)}")
    out.append(line)
    if p.bubble_share is not None:
        out.append(Text(f"Pipeline bubble (all ranks on one timeline, per step from the first "
                        f"rank's start to the last rank's end): {units.percent(p.bubble_share)} "
                        f"({units.duration(p.bubble_ns)} of {units.duration(p.window_ns)} "
                        "rank-time without computation)"))
    t = Table(title="Stages (per rank, over its steps)", **_TABLE)
    for col in ("rank", "steps", "busy", "bubble", "bubble %", "in send/recv", "recv wait",
                "send wait"):
        t.add_column(col, justify="right")
    for s in p.stages:
        stepped = s.steps > 0  # busy, bubble and send/recv time are measured over steps
        t.add_row(str(s.rank), str(s.steps),
                  *(units.duration(v) if stepped else "-" for v in (s.busy_ns, s.bubble_ns)),
                  units.percent(s.bubble_share),
                  units.duration(s.p2p_ns) if stepped else "-",
                  units.duration(s.recv_wait_ns), units.duration(s.send_wait_ns))
    out.append(t)
    return out


def _steps(j: JobView) -> Table:
    """Each step's time per rank where the columns fit 80 characters, else the slowest
    and the fastest rank's."""
    device = any(d is not None for s in j.steps for d in s.device_dur_ns)
    show = len(j.ranks) * ((17 if device else 9) + 2) <= STEP_COLUMNS_WIDTH
    t = Table(title="Steps across ranks (CPU side; device side in brackets)", **_TABLE)
    t.add_column("step", justify="right")
    if show:
        for r in j.ranks:
            t.add_column(f"rank {r}", justify="right")
    else:
        t.add_column("fastest", justify="right")
    t.add_column("slowest", justify="right")
    t.add_column("skew", justify="right")

    def cell(d: tuple[int, int | None] | None) -> str:
        if d is None:
            return "-"
        return units.duration(d[0]) + (f" ({units.duration(d[1])})" if d[1] is not None else "")

    for s in j.steps:
        by_rank = dict(zip(s.ranks, zip(s.dur_ns, s.device_dur_ns, strict=True), strict=True))
        cells = [str(s.number)]
        if show:
            cells += [cell(by_rank.get(r)) for r in j.ranks]
            cells.append(f"rank {s.slowest_rank}")
        else:
            fastest = s.ranks[min(range(len(s.ranks)), key=lambda i: s.dur_ns[i])]
            cells.append(f"rank {fastest}: {cell(by_rank[fastest])}")
            cells.append(f"rank {s.slowest_rank}: {cell(by_rank[s.slowest_rank])}")
        skew = units.duration(s.skew_ns)
        if s.device_skew_ns is not None:
            skew += f" ({units.duration(s.device_skew_ns)})"
        t.add_row(*cells, skew)
    return t
