"""The job view: several ranks of one job aligned (:mod:`profiler_kit.analysis.jobs.job_view`).
Its straggler, who waits for whom, the collectives by type and size, the steps across
ranks, the pipeline's stages and the job's recommendations, as one set of blocks and
tables that the console and Markdown both show; the JSON is the job view as it is, the
report its charts (``render/html/job_charts``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profiler_kit.render.html import job_charts
from profiler_kit.render.html.markup import e
from profiler_kit.render.json.plain import plain, recommendations
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Body, Page, Presenter
from profiler_kit.render.sections.blocks import Block, Column, Grid, Lines, Styled
from profiler_kit.render.sections.recommendations import html_list, markdown_list
from profiler_kit.render.wording import rules, units
from profiler_kit.render.wording.notes import said
from profiler_kit.render.wording.units import link_bandwidth

if TYPE_CHECKING:
    from profiler_kit.analysis.core.recommendation import Evidence, Recommendation
    from profiler_kit.analysis.jobs.job_view import JobView, PipelineView, Straggler
    from profiler_kit.render.html.figures import Chart

# per-rank step columns, in characters, that still fit an 80-column terminal; beyond,
# steps show the slowest and the fastest rank and the skew
STEP_COLUMNS_WIDTH = 40
MAX_RANK_ROWS = 16  # beyond this many ranks, the per-rank table shows the telling ones
NO_MATCH = "No collective matched across the ranks: no straggler verdict, no wait/transfer split"


class AcrossRanks(Presenter):
    """The job view: its panel on the console, its section in Markdown (after the traces'),
    its object under the JSON's ``jobs``, its charts in the report's "Across ranks"."""
    order = 250

    def job_console(self, j: JobView) -> list[Block]:
        head = Lines((Styled(f"Job: {j.name}"), Styled(f"  ({_facts(j)})", "dim")), "bold")
        blocks: list[Block] = [head]
        blocks += [Lines.of(f"warning: {w}", "yellow") for w in said(j.warnings)]
        if j.instances:
            blocks += [straggler_line(j.straggler, j.step_count),
                       Lines.of(wait_transfer_line(j)), *_per_rank(j)]
        else:
            blocks.append(Lines.of(NO_MATCH, "dim"))
        blocks += _tables(j)
        if j.recommendations or j.rule_notes:
            blocks.append(_recommendations(j))
        return blocks

    def job_markdown(self, j: JobView) -> list[str]:
        """What the console's panel shows, its tables as Markdown tables."""
        out = [f"## Job: {j.name}", "", f"{_facts(j)}.", ""]
        out += [f"- **warning:** {w}" for w in said(j.warnings)] + ([""] if j.warnings else [])
        if j.instances:
            out += [_text(straggler_line(j.straggler, j.step_count)), "",
                    wait_transfer_line(j), ""]
            for block in _per_rank(j):
                out += _markdown(block)
        else:
            out += [NO_MATCH + ".", ""]
        for block in _tables(j):
            out += _markdown(block)
        if j.recommendations or j.rule_notes:
            out += markdown_list("Recommendations for the job",
                                 [_recommendation(r) for r in j.recommendations],
                                 said(j.rule_notes))
        return out

    def job_json(self, j: JobView) -> dict[str, Any]:
        """Every field of the job view, as it is, its notes and rules said."""
        return {**plain(j), "warnings": said(j.warnings), "rule_notes": said(j.rule_notes),
                "recommendations": recommendations(j.recommendations)}

    def charts(self, page: Page) -> list[Chart]:
        return job_charts.job_charts(page.jobs)

    def body(self, page: Page) -> Body | None:
        """Before the charts, what the console's panel says in words: each job's facts,
        warnings, straggler, exposed communication and recommendations."""
        parts = []
        for j in page.jobs:
            paras = [f'<p class="withheld">warning: {e(w)}</p>' for w in said(j.warnings)]
            if j.instances:
                paras += [f"<p><strong>{e(_text(straggler_line(j.straggler, j.step_count)))}"
                          f"</strong></p>", f"<p>{e(wait_transfer_line(j))}</p>"]
            else:
                paras.append(f'<p class="muted">{e(NO_MATCH)}.</p>')
            items = [(head, None, body) for head, body in map(_recommendation, j.recommendations)]
            parts.append(f"<h3>Job: {e(j.name)}</h3><p class=\"muted\">{e(_facts(j))}.</p>"
                         + "".join(paras) + "<h4>Recommendations for the job</h4>"
                         + html_list(items, said(j.rule_notes)))
        return Body(None, job_charts.ACROSS_RANKS, "\n".join(parts)) if parts else None


def _facts(j: JobView) -> str:
    world = f"{len(j.ranks)} of {j.world_size} ranks" if j.world_size else f"{len(j.ranks)} ranks"
    return (f"{world}; {j.backend or 'backend unknown'}; {len(j.instances)} collectives "
            f"matched; {j.step_count} steps")


def _text(lines: Lines) -> str:
    return "".join(p.text for p in lines.pieces)


def _markdown(block: Block) -> list[str]:
    """A block as Markdown: a line as a paragraph, a grid as a titled table (its
    caption under it)."""
    if isinstance(block, Lines):
        return [_text(block), ""]
    rows = [[c.text if isinstance(c, Styled) else c for c in row] for row in block.rows]
    return ([f"### {block.title}", ""] + table([c.header for c in block.columns], rows)
            + ([block.caption, ""] if block.caption else []))


def size_bucket(low: int, high: int) -> str:
    """A message size range, short: ``< 64K``, ``1M-16M``, ``>= 256M`` (binary units)."""
    def short(n: int) -> str:
        return units.nbytes(n).replace(" ", "").replace("iB", "")

    if low == 0:
        return f"< {short(high)}"
    if high >= 1 << 61:
        return f">= {short(low)}"
    return f"{short(low)}-{short(high)}"


def straggler_line(s: Straggler | None, step_count: int) -> Lines:
    """The verdict, one line."""
    per = "per step" if step_count else "over the trace"
    if s is None:
        return Lines.of("Straggler: none (no rank arrived last in most collectives)", "green")
    return Lines((Styled("Straggler: "),
                  Styled(f"rank {s.rank}" + (f" ({s.host})" if s.host else ""), "bold red"),
                  Styled(f" arrived last in {s.last_arrivals} of {s.instances} collectives "
                         f"where a rank waited; the others wait "
                         f"{units.duration(s.others_wait_per_step_ns)} {per} for it")), "bold")


def wait_transfer_line(j: JobView) -> str:
    """Exposed communication split into waiting and transferring, summed over the ranks."""
    wait = sum(r.exposed_wait_ns for r in j.per_rank)
    transfer = sum(r.exposed_transfer_ns for r in j.per_rank)
    n = max(j.step_count, 1)
    per = "per step" if j.step_count else "over the trace"
    return (f"Exposed communication per rank {per}: "
            f"wait {units.duration(wait / n / len(j.per_rank))}, "
            f"transfer {units.duration(transfer / n / len(j.per_rank))}")


def _per_rank(j: JobView) -> list[Block]:
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
    rank = [f"{r.rank} ({r.host})" if many_hosts and r.host else str(r.rank) for r in shown]
    waits = Grid(
        "Per rank: who waits, who is waited for",
        tuple(Column(col, justify="left" if col == "trace" else "right")
              for col in ("rank", "trace", "calls", f"waits{per}", "last", f"waited for{per}")),
        # a trace's name folds rather than lose its end
        tuple((name, Styled(r.label, overflow="fold"), f"{r.instances:,}",
               units.duration(r.wait_per_step_ns), f"{r.last_arrivals:,}",
               units.duration(r.caused_wait_per_step_ns))
              for name, r in zip(rank, shown, strict=True)),
        caption, caption_left=True)
    times = Grid(
        "Per rank: time in the matched collectives (summed)",
        tuple(Column(col, justify="right")
              for col in ("rank", "wait", "transfer", "exposed wait", "exposed transfer")),
        tuple((name, units.duration(r.wait_ns), units.duration(r.transfer_ns),
               units.duration(r.exposed_wait_ns), units.duration(r.exposed_transfer_ns))
              for name, r in zip(rank, shown, strict=True)))
    legend = Lines.of(f"calls: collectives matched; waits{per}: its wait for the last rank; "
                      f"last: collectives it arrived last in; waited for{per}: the others' "
                      "mean wait for it; exposed: with no computation beside it", "dim")
    return [waits, times, legend]


def _tables(j: JobView) -> list[Block]:
    """The collectives by type and size, the steps across ranks and the pipeline."""
    blocks: list[Block] = []
    if j.kinds:
        blocks.append(Grid(
            "Collectives by type and size (wait, transfer: per rank, summed; bandwidth: "
            "median)",
            tuple(Column(col, justify="left" if col in ("type", "size") else "right")
                  for col in ("type", "size", "count", "wait", "transfer", "algbw", "busbw")),
            tuple((k.kind, size_bucket(k.size_low_bytes, k.size_high_bytes), f"{k.count:,}",
                   units.duration(k.wait_ns), units.duration(k.transfer_ns),
                   link_bandwidth(k.median_algbw_bytes_per_s),
                   link_bandwidth(k.median_busbw_bytes_per_s)) for k in j.kinds),
            "algbw: bytes / transfer time; busbw: algbw scaled to compare with the link "
            "(nccl-tests)", caption_left=True))
    if j.steps:
        blocks.append(_steps(j))
    if j.pipeline is not None:
        blocks += _pipeline(j.pipeline)
    return blocks


def _recommendation(r: Recommendation) -> tuple[str, str]:
    """A job rule that fired: its head (what it measured against its threshold) and its
    advice with the evidence."""
    cmp = "<" if r.fires_when == "below" else "≥"
    return (f"{rules.title(r)}: {units.percent(r.measured)} {cmp} "
            f"{units.percent(r.threshold)} ({r.rule})",
            f"{rules.advice(r)} Evidence: {_evidence(r.evidence)}")


def _recommendations(j: JobView) -> Lines:
    """The job's rules that fired, with their evidence, and those not judged."""
    pieces = [Styled("Recommendations for the job\n" if j.recommendations else
                     "Recommendations for the job: none fired.\n")]
    for i, r in enumerate(j.recommendations, 1):
        head, body = _recommendation(r)
        pieces += [Styled(f"{i}. {head}\n", "yellow"), Styled(f"   {body}\n")]
    pieces += [Styled(f"note: {n}\n", "dim") for n in said(j.rule_notes)]
    return Lines(tuple(pieces), "bold")


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


def _pipeline(p: PipelineView) -> list[Block]:
    out: list[Block] = [Lines((
        Styled("Send/recv (pipeline stages): "),
        Styled(f"{len(p.transfers):,} sends matched with their recvs"
               + (f" ({p.unmatched_calls:,} calls unmatched)" if p.unmatched_calls else "")
               + f"; median bandwidth {link_bandwidth(p.median_busbw_bytes_per_s)}")), "bold")]
    if p.bubble_share is not None:
        out.append(Lines.of(
            f"Pipeline bubble (all ranks on one timeline, per step from the first rank's "
            f"start to the last rank's end): {units.percent(p.bubble_share)} "
            f"({units.duration(p.bubble_ns)} of {units.duration(p.window_ns)} rank-time "
            "without computation)"))
    rows = []
    for s in p.stages:
        stepped = s.steps > 0  # busy, bubble and send/recv time are measured over steps
        rows.append((str(s.rank), str(s.steps),
                     *(units.duration(v) if stepped else "-" for v in (s.busy_ns, s.bubble_ns)),
                     units.percent(s.bubble_share),
                     units.duration(s.p2p_ns) if stepped else "-",
                     units.duration(s.recv_wait_ns), units.duration(s.send_wait_ns)))
    out.append(Grid("Stages (per rank, over its steps)",
                    tuple(Column(col, justify="right")
                          for col in ("rank", "steps", "busy", "bubble", "bubble %",
                                      "in send/recv", "recv wait", "send wait")),
                    tuple(rows)))
    return out


def _steps(j: JobView) -> Grid:
    """Each step's time per rank where the columns fit 80 characters, else the slowest
    and the fastest rank's."""
    device = any(d is not None for s in j.steps for d in s.device_dur_ns)
    show = len(j.ranks) * ((17 if device else 9) + 2) <= STEP_COLUMNS_WIDTH
    heads = ["step", *([f"rank {r}" for r in j.ranks] if show else ["fastest"]),
             "slowest", "skew"]

    def cell(d: tuple[int, int | None] | None) -> str:
        if d is None:
            return "-"
        return units.duration(d[0]) + (f" ({units.duration(d[1])})" if d[1] is not None else "")

    rows = []
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
        rows.append((*cells, skew))
    return Grid("Steps across ranks (CPU side; device side in brackets)",
                tuple(Column(h, justify="right") for h in heads), tuple(rows))
