"""``compare`` of many traces stays readable: a summary with one row per trace, then the
full table per group of traces (a folder's traces together, the baseline in each), each
within the console's width, and the same in Markdown; few traces keep the one table."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from rich.console import Console

from profiler_kit import api
from profiler_kit.render.console.analysis import comparison_view
from profiler_kit.render.markdown import analysis as analysis_markdown
from profiler_kit.render.sections.comparison import (
    MAX_COLUMNS,
    columns_that_fit,
    comparison_tables,
)
from profiler_kit.render.wording.trace_words import trace_groups

TRACE = Path(__file__).parents[1] / "data" / "a100_triton_kernel.json.gz"


def test_fifty_traces_get_a_summary_and_tables_per_group(tmp_path: Path) -> None:
    for folder in "abcde":
        (tmp_path / folder).mkdir()
        for rank in range(10):
            shutil.copy(TRACE, tmp_path / folder / f"rank{rank}.pt.trace.json.gz")
    analyses = api.analyze([tmp_path], jobs=1)
    c = api.compare(analyses)
    assert len(c.labels) == 50
    width = 100
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(comparison_view(c, 5, width))
    text = buf.getvalue()
    assert all(len(line) <= width for line in text.splitlines())
    summary = text[:text.index("Comparison, ")]
    rows = [line.split()[0] for line in summary.splitlines()
            if line.strip().startswith(tuple("abcde"))]
    assert rows == list(c.labels), "one row per trace, every label whole"

    fits = columns_that_fit(width)
    tables = comparison_tables(c, width)
    groups = trace_groups(c.labels, c.baseline, fits - 1)
    assert len(tables) == 1 + len(groups)
    assert sorted(i for g in groups for i in g) == [i for i in range(50) if i != c.baseline]
    assert all(len(g) <= fits - 1 for g in groups)
    for table in tables[1:]:  # the baseline leads every group's table
        assert "(baseline)" in str(table.columns[1].header)
    # a folder's traces stay together where they fit
    assert trace_groups(["a/0", "a/1", "b/0", "b/1", "b/2"], 0, 3) == [[1], [2, 3, 4]]

    # Markdown: the summary (a header row per table, then one row per trace), then groups
    # of at most MAX_COLUMNS traces, each led by the baseline; every trace in one group
    text = analysis_markdown.render(analyses, c, top=5)
    section = text[text.index("## Comparison"):text.index("## Verdict")
                   if "## Verdict" in text else None]
    tables = [block.splitlines() for block in section.split("\n\n") if block.startswith("|")]
    summary, *groups = tables
    assert [row.split(" | ")[0].lstrip("| ").split(" ")[0] for row in summary[2:]] == list(
        c.labels)
    limit = MAX_COLUMNS
    heads = [row[0].strip("| ").split(" | ")[1:] for row in groups
             if row[0].startswith("| metric")]
    assert all(len(h) <= limit and h[0].endswith("(baseline)") for h in heads)
    assert sorted(label.split(" ")[0] for h in heads for label in h[1:]) == sorted(
        label for i, label in enumerate(c.labels) if i != c.baseline)


def test_few_traces_keep_one_table(tmp_path: Path) -> None:
    for name in ("x", "y"):
        shutil.copy(TRACE, tmp_path / f"{name}.pt.trace.json.gz")
    analyses = api.analyze([tmp_path], jobs=1)
    c = api.compare(analyses)
    assert len(comparison_tables(c, 100)) == 1
    text = analysis_markdown.render(analyses, c)
    assert text.count("| metric |") == 1 and "one row each" not in text
