"""The comparison of traces reads through its presenters like a trace's analyses: the
console's blocks, the Markdown's lines and the JSON's keys come from the metrics table's
presenter and then the one of what changed (waterfalls, diffs, predictions, verdicts),
and a new presenter's comparison hooks show in every format."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from profiler_kit import api
from profiler_kit.render import sections
from profiler_kit.render.console.analysis import comparison_view
from profiler_kit.render.json.analysis import dumps
from profiler_kit.render.markdown.analysis import comparison_section
from profiler_kit.render.markdown.analysis import render as markdown
from profiler_kit.render.sections import Presenter, View
from profiler_kit.render.sections.blocks import Grid, Lines, Styled
from profiler_kit.render.sections.changes import WhatChanged
from profiler_kit.render.sections.comparison import ComparisonTable
from profiler_kit.render.wording.diff_views import verdict_lines

DATA = Path(__file__).parents[1] / "data"
TRACES = ("h100_bert_small", "mi300_bert_small", "v100_resnet50_train")


@pytest.fixture(scope="module")
def compared():
    analyses = api.analyze([str(DATA / f"{t}.json.gz") for t in TRACES], jobs=1)
    return analyses, api.compare(analyses)


def _console(c, width: int = 200) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(comparison_view(c, 5, width))
    return buf.getvalue()


def _text(cell) -> str:
    return cell.text if isinstance(cell, Styled) else cell


def test_console_and_markdown_come_from_the_presenters(compared):
    _, c = compared
    view = View(5, 200)
    filled = [p for p in sections.PRESENTERS
              if p.comparison_console(c, view) or p.comparison_markdown(c, view)]
    assert [type(p) for p in filled] == [ComparisonTable, WhatChanged]
    text, md = _console(c), comparison_section(c, 5)
    assert md == [line for p in filled for line in p.comparison_markdown(c, view)]
    flat = " ".join(text.split())
    grids = [b for p in filled for b in p.comparison_console(c, view) if isinstance(b, Grid)]
    assert grids and all(_text(g.title) in text for g in grids)
    for g in grids:  # every cell the console draws, in the order the blocks give them
        for row in g.rows:
            assert " ".join(" ".join(_text(x).split()) for x in row) in flat
    (verdict,) = [b for b in filled[1].comparison_console(c, view) if isinstance(b, Lines)]
    lines = verdict_lines(c)
    assert lines and "".join(p.text for p in verdict.pieces) == (
        "Verdict\n" + "".join(f"{x}\n" for x in lines))
    assert text.rstrip().endswith(lines[-1].split()[-1])  # the verdict last, on the console
    assert md[md.index("## Verdict") + 2:][:len(lines)] == [f"- {x}" for x in lines]
    metrics = md.index("## Comparison")
    assert metrics == 0 and md.index("## Verdict") > metrics



def test_the_waterfalls_say_the_same_in_the_console_and_the_markdown(compared):
    """Each term's row, the overlap's negative time included, as the console draws it."""
    _, c = compared
    view = View(5, 200)
    md = comparison_section(c, 5)
    waterfalls = [g for g in WhatChanged().comparison_console(c, view)
                  if isinstance(g, Grid) and _text(g.title).startswith("Step time, ")]
    assert len(waterfalls) == 2
    terms = [term.name for w in c.steps.waterfalls if w is not None for term in w.terms]
    assert "overlap" in terms
    for g in waterfalls:
        at = md.index(f"### {_text(g.title)}")
        rows = md[at + 4:at + 4 + len(g.rows)]
        for console_row, md_row in zip(g.rows, rows, strict=True):
            cells = [_text(x) for x in console_row[:4]]
            if cells[0] == "step":
                cells[0] = "**step**"
            assert md_row == "| " + " | ".join(cells) + " |"



def test_the_markdown_has_the_ops_by_shape_where_the_console_does(compared):
    """``--by-shape``: the ops by input shape that changed most, each row's figures as the
    console's table gives them, or the console's line naming the traces without shapes;
    without it, neither."""
    from profiler_kit.render.sections.changes import shape_table

    _, c = compared  # v100_resnet50_train recorded no shapes
    (line,) = [x for x in comparison_section(c, 3, by_shape=True)
               if x.startswith("CPU ops by input shape: ")]
    assert line + "\n" == "".join(p.text for p in shape_table(c, 3).pieces)
    assert "v100_resnet50_train" in line and not any(
        x.startswith("CPU ops by input shape") for x in comparison_section(c, 3))
    c = api.compare(api.analyze([str(DATA / f"{t}.json.gz") for t in TRACES[:2]], jobs=1))
    assert c.ops is not None and len(c.ops.op_shapes) >= 3
    title = "### CPU ops by input shape that changed most, per step"
    assert title not in comparison_section(c, 3)
    md = comparison_section(c, 3, by_shape=True)
    at = md.index(title)
    rows = [line.strip("|").split(" | ") for line in md[at + 4:at + 7]]
    grid = shape_table(c, 3)
    assert isinstance(grid, Grid) and len(grid.rows) == 3
    for md_row, console_row, r in zip(rows, grid.rows, c.ops.op_shapes[:3], strict=True):
        assert md_row[0].strip().startswith(f"`{r.name}`")
        assert [x.strip() for x in md_row[1:]] == [_text(x) for x in console_row[1:]]


class Probe(Presenter):
    """Something new about the comparison: in every format's comparison."""

    order = 276

    def comparison_console(self, c, view):
        return [Lines.of(f"probe: {len(c.labels)} traces")]

    def comparison_markdown(self, c, view):
        return [f"probe: {len(c.labels)} traces", ""]

    def comparison_json(self, c):
        return {"probe": len(c.labels)}


def test_every_format_walks_the_presenters_for_the_comparison(compared, monkeypatch):
    analyses, c = compared
    monkeypatch.setattr(sections, "PRESENTERS", (*sections.PRESENTERS, Probe()))
    text = _console(c)
    assert text.index("Verdict") < text.index("probe: 3 traces")
    md = markdown(analyses, c)
    assert md.index("## Comparison") < md.index("\nprobe: 3 traces\n") < md.index("## h100")
    doc = json.loads(dumps(analyses, c))["comparison"]
    assert list(doc) == ["labels", "windows", "baseline", "metrics", "ops", "steps",
                         "verdicts", "unpaired", "predictions", "probe"]
    assert doc["probe"] == 3
