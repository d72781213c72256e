"""The example notebooks of docs/notebooks run end to end in a real Jupyter kernel, on the
traces in tests/data, as a user opening them would."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "docs" / "notebooks").glob("*.ipynb"))


def test_there_are_the_three_notebooks_the_guide_names() -> None:
    assert [p.name for p in NOTEBOOKS] == ["multi_rank_job.ipynb", "quick_tour.ipynb",
                                           "whatif.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_notebook_runs_and_its_page_in_the_guide_is_what_it_shows(path: Path) -> None:
    """Run as a user would, in a real kernel; the guide's page of it (written by
    docs/notebooks/pages.py, its figures drawn offline) is what this run showed."""
    import importlib.util

    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "kept without outputs: the tests make them"
    spec = importlib.util.spec_from_file_location("pages", path.parent / "pages.py")
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    nb = pages.executed(path)
    assert pages.page(path, nb) == path.with_suffix(".md").read_text(encoding="utf-8"), \
        "the page is stale: python docs/notebooks/pages.py"
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = {kind for o in outputs for kind in o.get("data", {})}
    assert "text/html" in shown  # the DataFrames and the traces' summaries
    if path.stem != "multi_rank_job":
        assert "application/vnd.plotly.v1+json" in shown  # a figure, inline
