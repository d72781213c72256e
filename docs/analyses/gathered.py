"""What the guide gathers from the analyses' own pages, so that adding an analysis touches
its page and nothing else of the guide (a MkDocs hook named in ``mkdocs.yml``):

- each page of ``docs/analyses/`` that the nav does not list goes at the end of its
  *Analyses* section, under the page's title (:func:`on_config`);
- each page's *In the JSON* section (its keys of ``profkit analyze --json``) is gathered
  into the JSON reference where it says so (:func:`on_page_markdown`).

The tests read the JSON keys documented with :func:`json_reference`, the same gathering.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent
NAV_SECTION = "Analyses"
JSON_HEADING = "## In the JSON"
GATHER_MARK = "<!-- the analyses' own JSON sections -->"


def title(page: Path) -> str:
    """A page's first ``# `` heading."""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem


def json_section(page: Path) -> str | None:
    """The body of the page's *In the JSON* section (None: it has none)."""
    text = page.read_text(encoding="utf-8")
    if f"\n{JSON_HEADING}\n" not in text:
        return None
    body = text.split(f"\n{JSON_HEADING}\n", 1)[1]
    return re.split(r"\n## ", body, maxsplit=1)[0].strip()


def gathered() -> str:
    """Each analysis page's JSON section under its title, with a link to the page (from
    the reference at the docs' root)."""
    parts = []
    for page in sorted(HERE.glob("*.md")):
        body = json_section(page)
        if body is not None:
            parts.append(f"### {title(page)}\n\nFrom [{title(page)}](analyses/{page.name}).\n\n"
                         + _from_root(body))
    return "\n\n".join(parts)


def json_reference() -> str:
    """The JSON reference as the guide shows it: ``analysis-json.md``, the gathered
    sections in their place."""
    text = (DOCS / "analysis-json.md").read_text(encoding="utf-8")
    return text.replace(GATHER_MARK, gathered())


def _from_root(body: str) -> str:
    """A page's relative links, written from the docs' root."""
    return re.sub(r"\]\((?![a-z]+:|#|/)([^)]+)\)",
                  lambda m: "](" + _rooted(m.group(1)) + ")", body)


def _rooted(link: str) -> str:
    return link[3:] if link.startswith("../") else f"analyses/{link}"


def on_config(config):
    for entry in config["nav"]:
        if isinstance(entry, dict) and NAV_SECTION in entry:
            listed = {next(iter(e.values())) for e in entry[NAV_SECTION]}
            for page in sorted(HERE.glob("*.md")):
                if f"analyses/{page.name}" not in listed:
                    entry[NAV_SECTION].append({title(page): f"analyses/{page.name}"})
    return config


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "analysis-json.md":
        return markdown.replace(GATHER_MARK, gathered())
    return markdown
