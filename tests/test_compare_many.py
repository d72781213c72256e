"""``compare`` of many traces stays readable: a summary with one row per trace, then the
full table per group of traces (a folder's traces together, the baseline in each), each
within the console's width; few traces keep the one table."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from rich.console import Console

from profiler_kit import api
from profiler_kit.render.analysis_console import (
    columns_that_fit,
    comparison_tables,
    comparison_view,
    trace_groups,
)

TRACE = Path(__file__).parent / "data" / "a100_triton_kernel.json.gz"


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


def test_few_traces_keep_one_table(tmp_path: Path) -> None:
    for name in ("x", "y"):
        shutil.copy(TRACE, tmp_path / f"{name}.pt.trace.json.gz")
    c = api.compare(api.analyze([tmp_path], jobs=1))
    assert len(comparison_tables(c, 100)) == 1
