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
def test_the_notebook_runs_and_shows_its_tables_and_figures(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "kept without outputs: the tests make them"
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = {kind for o in outputs for kind in o.get("data", {})}
    assert "text/html" in shown  # the DataFrames and the traces' summaries
    if path.stem != "multi_rank_job":
        assert "application/vnd.plotly.v1+json" in shown  # a figure, inline
