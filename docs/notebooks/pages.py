"""The example notebooks as pages of the guide: each executed here, in a real Jupyter kernel,
and written as Markdown beside it (``quick_tour.ipynb`` -> ``quick_tour.md``): its text,
its code, and what the code showed (text, DataFrames as HTML, plotly figures drawn by the
plotly.js that the guide's build copies from the ``plotly`` package: :func:`on_files`, a
MkDocs hook named in ``mkdocs.yml``; the pages work offline).

    python docs/notebooks/pages.py          # rewrite the pages
    python docs/notebooks/pages.py --check  # exit 1 where a page is not what its notebook gives

The tests run the check, so the pages stay what the notebooks show.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIGURE = "application/vnd.plotly.v1+json"
PLOTLY_JS = "assets/plotly.min.js"  # in the built guide
PLOTLY_FROM_PAGE = "../../" + PLOTLY_JS  # a page's URL is notebooks/NAME/


def executed(path: Path):
    """The notebook, run from its own folder."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def _relative(text: str) -> str:
    """Paths of this checkout written from the repository's root (the same page anywhere)."""
    return text.replace(str(ROOT) + "/", "")


def _output(o, figure_id: str) -> list[str]:
    data = o.get("data", {})
    if o.get("output_type") == "stream":
        return ["```text", _relative(o["text"]).rstrip("\n"), "```", ""]
    if FIGURE in data:
        spec = json.dumps(data[FIGURE], sort_keys=True)
        return [f'<div id="{figure_id}" class="notebook-figure"></div>',
                f'<script>(function (f) {{ Plotly.newPlot("{figure_id}", f.data, f.layout); }})'
                f"({spec});</script>", ""]
    if "text/html" in data:
        return ['<div class="notebook-output">', _relative(data["text/html"]).strip(),
                "</div>", ""]
    if "text/plain" in data:
        return ["```text", _relative(data["text/plain"]).rstrip("\n"), "```", ""]
    return []


def page(path: Path, nb=None) -> str:
    """The Markdown page of one notebook (``nb``: it executed; else executed now)."""
    nb = executed(path) if nb is None else nb
    out = [f"<!-- written by docs/notebooks/pages.py from {path.name}: edit the notebook -->",
           f'<script src="{PLOTLY_FROM_PAGE}"></script>', "",
           f"[Download the notebook]({path.name}) and run it from a checkout of profkit.", ""]
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            out += [cell.source, ""]
            continue
        out += ["```python", cell.source, "```", ""]
        for j, o in enumerate(cell.outputs):
            out += _output(o, f"{path.stem}-{i}-{j}")
    return "\n".join(out).rstrip("\n") + "\n"


def on_files(files, config):
    """MkDocs hook: plotly.js, from the installed ``plotly`` package, into the built guide
    (the notebook pages draw their figures with it, offline)."""
    from importlib import resources

    from mkdocs.structure.files import File

    source = resources.files("plotly") / "package_data" / "plotly.min.js"
    files.append(File.generated(config, PLOTLY_JS, abs_src_path=str(source)))
    return files


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    stale = []
    for nb in sorted(HERE.glob("*.ipynb")):
        target = nb.with_suffix(".md")
        text = page(nb)
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(target.name)
        else:
            target.write_text(text, encoding="utf-8")
    if stale:
        print(f"not what the notebooks give (python docs/notebooks/pages.py): "
              f"{', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
