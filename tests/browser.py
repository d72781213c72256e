"""Open an HTML file in headless Chromium (Debian's package, driven by Playwright) and
report what a reader would see: errors, requests, drawn charts, a screenshot."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser() -> str:
    """The browser, or skip outside CI; in CI (``CI`` set) a missing browser is a failure."""
    path = chromium_path()
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have chromium and playwright (see .ci/run)")
        pytest.skip("no chromium or playwright here; CI installs them (.ci/run)")
    return path


@dataclass
class PageReport:
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    charts: int = 0  # chart containers on the page
    drawn: list[str] = field(default_factory=list)  # ids of charts with drawn marks
    empty: list[str] = field(default_factory=list)  # ids of charts without
    screenshots: dict[str, Path] = field(default_factory=dict)
    print_tick_colors: set[str] = field(default_factory=set)  # axis labels when printed


def open_report(html: Path, shots: Path, browser: str, timeout_ms: int = 60_000) -> PageReport:
    """Load ``html`` from file://, wait for the charts, screenshot the light and dark
    themes and the page as printed from the dark one."""
    from playwright.sync_api import sync_playwright

    out = PageReport()
    profile = tempfile.mkdtemp(prefix="profkit-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=browser, headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1280, "height": 900},
            )
            try:
                for theme in ("light", "dark"):
                    page = context.new_page()
                    page.emulate_media(color_scheme=theme)
                    page.on("pageerror", lambda e, t=theme: out.errors.append(f"{t}: {e}"))
                    page.on("console", lambda m, t=theme: out.errors.append(f"{t}: {m.text}")
                            if m.type == "error" else None)
                    page.on("request", lambda r: out.requests.append(r.url))
                    page.goto(html.resolve().as_uri(), wait_until="load", timeout=timeout_ms)
                    page.wait_for_selector("body[data-charts-drawn]", timeout=timeout_ms)
                    if theme == "light":
                        # a drawn mark: a path with a shape inside one of the chart's traces
                        marks = page.evaluate("""() => Array.from(
                            document.querySelectorAll('div.plot')).map(el => [el.id,
                            Array.from(el.querySelectorAll('svg.main-svg g.trace path'))
                              .filter(p => (p.getAttribute('d') || '').length > 4).length])""")
                        out.charts = len(marks)
                        out.drawn = [i for i, n in marks if n > 0]
                        out.empty = [i for i, n in marks if n == 0]
                    path = shots / f"report-{theme}.png"
                    page.screenshot(path=str(path), full_page=True)
                    out.screenshots[theme] = path
                    if theme == "dark":  # printed from a dark screen: black on white
                        page.emulate_media(media="print", color_scheme="dark")
                        page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
                        page.wait_for_timeout(300)
                        out.print_tick_colors = set(page.evaluate("""() => Array.from(
                            document.querySelectorAll('g.xtick text, g.ytick text'))
                            .map(t => getComputedStyle(t).fill)"""))
                        path = shots / "report-print.png"
                        page.screenshot(path=str(path), full_page=True)
                        out.screenshots["print"] = path
                    page.close()
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return out
