"""The user guide: `mkdocs build --strict` passes (no broken link or anchor, every page in
the nav, no page the nav names missing), the site loads nothing from elsewhere, every
command has its page listing every option, and the README stays a front page."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from profiler_kit import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 250


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "index.html").is_file()
    # offline: no font, script or stylesheet from another host
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "fonts.googleapis.com" not in text, page
        outside = re.findall(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//[^\"]*\"",
                             text)
        assert not outside, (page, outside)
    _notebook_figures_draw_offline(site)


def _notebook_figures_draw_offline(site: Path) -> None:
    """The notebook pages' figures, in a real browser with every other host cut off: each
    draws (plotly.js from the built guide itself)."""
    from browser import chromium_path, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route("http*://**", lambda route: route.abort())
            for name in ("quick_tour", "whatif"):
                page.goto((site / "notebooks" / name / "index.html").as_uri())
                page.wait_for_function(
                    "Array.from(document.querySelectorAll('.notebook-figure'))"
                    ".every(e => e.querySelector('svg.main-svg'))", timeout=30_000)
                drawn = page.eval_on_selector_all(
                    ".notebook-figure", "els => els.map(e => e.querySelectorAll("
                    "'svg.main-svg').length > 0)")
                assert drawn and all(drawn), (name, drawn)
            assert not errors, errors
        finally:
            browser.close()


def test_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme_first_commands_install_run_and_test() -> None:
    """The two commands at the top: install and run the main job; the suite, as CI runs it."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert blocks[0].strip() == ('python3 -m venv .venv && . .venv/bin/activate && '
                                 'pip install -e ".[run,test]" && '
                                 'profkit run concurrent --amp --streams')
    assert blocks[1].strip() == (". .venv/bin/activate && "
                                 "python -m pytest -q -n 3 --dist loadfile")


def _subparsers() -> dict:
    parser = cli.build_parser()
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return action.choices


@pytest.mark.parametrize("name", sorted(cli.commands()))
def test_every_command_has_a_page_with_its_options(name: str) -> None:
    page = DOCS / "commands" / f"{name}.md"
    assert page.is_file(), f"profkit {name} has no page: {page.relative_to(ROOT)}"
    text = page.read_text(encoding="utf-8")
    assert f"profkit {name}" in text
    options = {opt for action in _subparsers()[name]._actions
               if action.help != argparse.SUPPRESS
               for opt in action.option_strings if opt.startswith("--") and opt != "--help"}
    missing = sorted(opt for opt in options if not re.search(re.escape(opt) + r"\b", text))
    assert not missing, f"{page.relative_to(ROOT)} does not mention {missing}"


def test_every_command_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in cli.commands():
        assert f"commands/{name}.md" in nav, name


def test_an_analysis_page_needs_no_edit_elsewhere_in_the_guide() -> None:
    """A page added to docs/analyses/ joins the nav's Analyses section and its *In the
    JSON* section the JSON reference, without an edit to mkdocs.yml or analysis-json.md."""
    from json_docs import gathered, reference

    nav = [{"Home": "index.md"}, {"Analyses": [{"Steps and GPU busy": "analyses/steps.md"}]}]
    gathered.on_config({"nav": nav})
    listed = [next(iter(e.values())) for e in nav[1]["Analyses"]]
    pages = sorted(p.name for p in (ROOT / "docs" / "analyses").glob("*.md"))
    assert listed[0] == "analyses/steps.md" and len(listed) == len(pages)
    assert {"GPU counters": "analyses/gpu-counters.md"} in nav[1]["Analyses"]
    text = reference()
    assert gathered.GATHER_MARK not in text
    assert "### GPU counters\n\nFrom [GPU counters](analyses/gpu-counters.md)" in text
    assert "`energy_per_item_j`" in text and "](sm-occupancy.md)" not in text


def test_readme_links_resolve() -> None:
    """The front page's relative links name files that exist (the guide checks its own)."""
    text = README.read_text(encoding="utf-8")
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)
               if not re.match(r"[a-z]+:", t)}
    missing = sorted(t for t in targets if t and not (ROOT / t).exists())
    assert not missing, f"README.md links to missing files: {missing}"
