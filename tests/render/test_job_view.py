"""The job view (several ranks of one job aligned) reads through its presenter like a
trace's analyses: the console's panel and the Markdown's section are the same blocks,
and the Markdown of a real job says the straggler and the per-rank figures the job view
computed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from profiler_kit import api
from profiler_kit.render import sections
from profiler_kit.render.console.analysis import job_view
from profiler_kit.render.json.analysis import dumps
from profiler_kit.render.markdown.analysis import job_section
from profiler_kit.render.markdown.analysis import render as markdown
from profiler_kit.render.sections import Presenter
from profiler_kit.render.sections.blocks import Grid, Lines, Styled
from profiler_kit.render.sections.job import AcrossRanks
from profiler_kit.render.wording import rules, units
from profiler_kit.render.wording.notes import said

DATA = Path(__file__).parents[1] / "data"
JOBS = ("two_ranks", "gloo_straggler")


@pytest.fixture(scope="module", params=JOBS)
def job(request):
    (j,) = api.job_view([DATA / request.param])
    return j


def _console(j) -> str:
    buf = io.StringIO()
    Console(file=buf, width=120, color_system=None).print(job_view(j))
    return buf.getvalue()


def _table(md: list[str], title: str) -> list[list[str]]:
    """The rows of the Markdown table under ``### title`` (its header first)."""
    at = md.index(f"### {title}") + 2
    rows = []
    for line in md[at:]:
        if not line.startswith("|"):
            break
        if not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def test_markdown_shows_the_straggler_and_each_rank_as_computed(job):
    md = job_section(job)
    assert md[0] == f"## Job: {job.name}"
    s = job.straggler
    assert s is not None  # both jobs have one: rank 1 arrives late
    line = next(x for x in md if x.startswith("Straggler: "))
    assert line == (f"Straggler: rank {s.rank} arrived last in {s.last_arrivals} of "
                    f"{s.instances} collectives where a rank waited; the others wait "
                    f"{units.duration(s.others_wait_per_step_ns)} per step for it")
    n, ranks = job.step_count, len(job.per_rank)
    wait = sum(r.exposed_wait_ns for r in job.per_rank) / n / ranks
    transfer = sum(r.exposed_transfer_ns for r in job.per_rank) / n / ranks
    assert (f"Exposed communication per rank per step: wait {units.duration(wait)}, "
            f"transfer {units.duration(transfer)}") in md
    head, *rows = _table(md, "Per rank: who waits, who is waited for")
    assert head == ["rank", "trace", "calls", "waits/step", "last", "waited for/step"]
    assert rows == [[str(r.rank), r.label, f"{r.instances:,}",
                     units.duration(r.wait_per_step_ns), f"{r.last_arrivals:,}",
                     units.duration(r.caused_wait_per_step_ns)] for r in job.per_rank]
    late = {r.rank: r for r in job.per_rank}[s.rank]
    assert late.last_arrivals == s.last_arrivals
    _, *times = _table(md, "Per rank: time in the matched collectives (summed)")
    assert times == [[str(r.rank), *(units.duration(v) for v in (
        r.wait_ns, r.transfer_ns, r.exposed_wait_ns, r.exposed_transfer_ns))]
        for r in job.per_rank]
    _, *steps = _table(md, "Steps across ranks (CPU side; device side in brackets)")
    assert [int(row[0]) for row in steps] == [x.number for x in job.steps]
    for w in said(job.warnings):
        assert f"- **warning:** {w}" in md
    assert "### Recommendations for the job" in md
    for r in job.recommendations:
        assert any(x.startswith(f"- **{rules.title(r)}: ") for x in md)
    for n_ in said(job.rule_notes):
        assert f"- _note: {n_}_" in md


def test_analyze_markdown_has_the_job_after_the_traces(tmp_path, capsys):
    from profiler_kit.cli import main

    out = tmp_path / "out.md"
    assert main(["analyze", str(DATA / "gloo_straggler"), "--markdown", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    (job,) = api.job_view([DATA / "gloo_straggler"])
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads[-3:] == ["## rank0", "## rank1", f"## Job: {job.name}"]  # after the traces
    assert "Straggler: rank 1 arrived last in 3 of 3" in text


def test_console_and_markdown_show_the_same_blocks(job):
    """Every line and every table cell the console's panel draws is in the Markdown,
    from the one presenter."""
    filled = [p for p in sections.PRESENTERS if p.job_console(job) or p.job_markdown(job)]
    assert [type(p) for p in filled] == [AcrossRanks]
    blocks = filled[0].job_console(job)
    text, md = _console(job), "\n".join(job_section(job))
    flat = " ".join(text.replace("│", " ").split())
    for b in blocks:
        if isinstance(b, Lines):
            words = "".join(p.text for p in b.pieces).strip()
            assert " ".join(words.split()) in flat
            if not words.startswith(("Job: ", "Recommendations for the job")):
                assert words.removeprefix("warning: ") in md
        else:
            assert isinstance(b, Grid)
            assert f"### {b.title}" in md
            for row in b.rows:
                cells = [c.text if isinstance(c, Styled) else c for c in row]
                assert "| " + " | ".join(cells) + " |" in md
                assert all(c in text for c in cells)


class Probe(Presenter):
    """A presenter of something new about a job: in every format's job section."""

    order = 251

    def job_console(self, j):
        return [Lines.of(f"probe: {len(j.per_rank)} ranks")]

    def job_markdown(self, j):
        return [f"probe: {len(j.per_rank)} ranks", ""]

    def job_json(self, j):
        return {"probe": len(j.per_rank)}


def test_every_format_walks_the_presenters_for_a_job(job, monkeypatch):
    monkeypatch.setattr(sections, "PRESENTERS", (*sections.PRESENTERS, Probe()))
    text = _console(job)
    assert text.index("Straggler:") < text.index("probe: 2 ranks")
    md = markdown([], jobs=[job])
    assert md.index("## Job:") < md.index("\nprobe: 2 ranks\n")
    (doc,) = json.loads(dumps([], None, [job]))["jobs"]
    assert doc["probe"] == 2 and list(doc)[-1] == "probe" and doc["name"] == job.name



def test_the_report_says_in_words_what_the_console_says_of_the_job(job):
    """Before the job's charts: its facts, warnings, straggler, exposed communication and
    recommendations, the sentences the console's panel prints."""
    import html
    import re

    from profiler_kit.render.html import report
    from profiler_kit.render.html.job_charts import ACROSS_RANKS
    from profiler_kit.render.sections.job import straggler_line, wait_transfer_line

    page = report.render("job", [], jobs=[job])
    section = page[page.index(f">{ACROSS_RANKS}</h2>"):]
    words = section[:section.index('<section class="chart">')]
    straggler = "".join(p.text for p in straggler_line(job.straggler, job.step_count).pieces)
    console = ["".join(p.text for p in b.pieces) for b in AcrossRanks().job_console(job)
               if isinstance(b, Lines)]
    for line in (straggler, wait_transfer_line(job), *(f"warning: {w}" for w in
                                                        said(job.warnings))):
        assert line in console
        assert html.escape(line) in words
    heads = [html.unescape(h) for h in re.findall(r'<div class="head">(.*?)</div>', words)]
    assert heads == [f"{rules.title(r)}: {units.percent(r.measured)} ≥ "
                     f"{units.percent(r.threshold)} ({r.rule})" for r in job.recommendations]
    assert heads  # both jobs fire a rule
