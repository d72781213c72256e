"""One ordered list of presenters, which every format walks: a presenter added to it shows
in the console, the Markdown, the JSON and the HTML report, in its place, with no edit to
any format; and each format's sections come in the list's order."""

from __future__ import annotations

import io
import json

import pytest
from real_traces import DATA, analysis
from rich.console import Console

from profiler_kit.render import sections
from profiler_kit.render.console.analysis import trace_view
from profiler_kit.render.html import report
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.json.analysis import dumps, trace_document
from profiler_kit.render.markdown.analysis import trace_section
from profiler_kit.render.sections import Body, Page, Presenter, View
from profiler_kit.render.sections.blocks import Lines

TRACE = "h100_bert_small.json.gz"


class Probe(Presenter):
    """A new analysis' presenter: the trace's event count in every format."""

    def console(self, a, view: View):
        return [Lines.of(f"probe: {a.events} events")]

    def markdown(self, a, view: View):
        return [f"probe: {a.events} events", ""]

    def json(self, a):
        return {"probe": a.events}

    def charts(self, page: Page):
        return [Chart(id="probe", section="Probe", title="Probe", caption="events",
                      data=[{"type": "bar", "y": [a.events for a in page.analyses]}])]

    def body(self, page: Page):
        return Body("probe-table", "Probe table", "<p>probe body</p>")


@pytest.fixture
def probed(monkeypatch):
    """The probe placed after the SM figures."""
    found = list(sections.PRESENTERS)
    at = next(i for i, p in enumerate(found) if type(p).__name__ == "SmOccupancyPresenter")
    monkeypatch.setattr(sections, "PRESENTERS", (*found[:at + 1], Probe(), *found[at + 1:]))


def _console(a) -> str:
    console = Console(width=140, file=io.StringIO())
    console.print(trace_view(a, width=140))
    return console.file.getvalue()


def test_a_new_presenter_shows_in_every_format_in_its_place(probed):
    a = analysis(TRACE)
    text = _console(a)
    assert text.index("SM efficiency 4.5 %") < text.index("probe: 2060 events") < \
        text.index("GPU idle causes")
    lines = trace_section(a)
    assert lines.index("probe: 2060 events") > next(
        i for i, x in enumerate(lines) if "SM efficiency" in x)
    keys = list(trace_document(a))
    assert keys[keys.index("sm_occupancy") + 1] == "probe"
    assert json.loads(dumps([a], None))["traces"][0]["probe"] == 2060
    page = report.render("t", [a])
    assert '"id":"probe"' in page and "<p>probe body</p>" in page
    heads = [line for line in page.splitlines() if line.startswith("<h2 ")]
    titles = [h.split(">", 1)[1].split("<", 1)[0] for h in heads]
    at = titles.index("Below the busy line")
    assert titles[at + 1:at + 3] == ["Probe table", "Probe"]  # its body, then its charts


def test_every_format_follows_the_one_order():
    """The JSON's keys are the presenters' keys in the presenters' order, and the console
    and Markdown show the sections in the same order as the JSON names them."""
    a = analysis(TRACE)
    expected = [k for p in sections.PRESENTERS for k in p.json(a)]
    assert list(trace_document(a)) == expected
    markers = [("Steps:", "steps"), ("GPU timeline", "timeline"), ("SM efficiency", "sm_occupancy"),
               ("idle gaps", "idle_gaps"), ("GPU time by class", "gpu_hotspots"),
               ("Top GPU kernels", "kernels"), ("CPU ops by self time", "cpu_hotspots"),
               ("Critical path", "critical_path"), ("Memory", "memory"),
               ("Recommendations", "recommendations")]
    assert [k for _, k in markers] == sorted((k for _, k in markers), key=expected.index)
    text, md = _console(a), "\n".join(trace_section(a))
    for shown in (text, md):
        at = [shown.index(m) for m, _ in markers]
        assert at == sorted(at), shown


def test_no_format_lists_sections_of_its_own():
    """The old lists are gone: the report orders its sections by the presenters, the JSON
    writes the keys they give."""
    import profiler_kit.render.json.analysis as json_format

    assert not hasattr(report, "SECTION_ORDER") and not hasattr(json_format, "FIELD_KEYS")


REAL = sorted(p.name for p in DATA.glob("*.json.gz") if "expected" not in p.name)


@pytest.mark.parametrize("name", REAL)
def test_no_section_leaves_two_blank_lines_in_a_row_in_the_markdown(name):
    """Each section ends with one blank line: a table's own and a section's would make
    two (the copies table did, with its pageable line)."""
    lines = trace_section(analysis(name))
    doubled = [i for i in range(1, len(lines)) if lines[i] == lines[i - 1] == ""]
    assert doubled == [], [lines[i - 3:i + 1] for i in doubled]
