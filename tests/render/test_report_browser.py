"""The HTML report as a reader gets it: opened from file:// in headless Chromium, offline.

A real run's report.html (the example scenario, four strategies) and a multi-trace
report of real GPU traces are each loaded in the light and the dark theme; every chart
must draw, nothing may log an error, and no request may leave the file. Screenshots are kept under
tests/artifacts/ (not committed) for a person to look at.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from browser import open_report, require_browser

from profiler_kit import api

ROOT = Path(__file__).parents[2]
DATA = Path(__file__).parents[1] / "data"
ARTIFACTS = Path(__file__).parents[1] / "artifacts"
SIZE_LIMIT = 10 * 1024 * 1024


def embedded_charts(html: Path) -> list[dict]:
    text = html.read_text(encoding="utf-8")
    payload = text.split('<script type="application/json" id="profkit-charts">')[1]
    return json.loads(payload.split("</script>")[0])


def check_in_browser(html: Path, name: str) -> list[dict]:
    browser = require_browser()
    shots = ARTIFACTS / name
    shots.mkdir(parents=True, exist_ok=True)
    page = open_report(html, shots, browser)
    charts = embedded_charts(html)
    print("\nscreenshots: " + " ".join(str(p) for p in page.screenshots.values()))
    assert page.errors == []
    assert page.requests and all(url.startswith("file://") for url in page.requests), \
        [u for u in page.requests if not u.startswith("file://")]
    assert page.empty == []
    assert page.charts == len(charts) and sorted(page.drawn) == sorted(c["id"] for c in charts)
    assert page.print_tick_colors == {"rgb(0, 0, 0)"}  # printed black on white
    return charts


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    done = subprocess.run(
        [sys.executable, "-m", "profiler_kit", "run", str(ROOT / "examples" / "my_scenario.py"),
         "--amp", "--iterations", "5", "--warmup", "1", "--batch-size", "8", "--repeats", "1",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    (run,) = (out / "my_cnn").iterdir()
    assert f"charts: {run / 'report.html'}" in done.stdout
    return run


@pytest.mark.slow
def test_a_real_runs_report_draws_every_chart_offline(run_dir: Path) -> None:
    html = run_dir / "report.html"  # written by profkit run itself
    assert html.stat().st_size < SIZE_LIMIT  # four strategies, plotly.js included
    charts = check_in_browser(html, "run")
    ids = {c["id"] for c in charts}
    # four strategies: the strategy charts, CPU time by class, one step of each, memory
    assert {"step-time", "throughput", "overhead", "cpu-classes"} <= ids
    assert sum(c["kind"] == "timeline" for c in charts) == 4
    assert any(c["id"].startswith("memory") for c in charts)


def test_a_multi_trace_report_draws_every_chart_offline(tmp_path: Path) -> None:
    traces = [DATA / n for n in ("a100_ddp_nccl_rank0.json.gz",
                                 "h100_vit_image_classification.json.gz",
                                 "mi300_resnet_act_checkpoint.json.gz")]
    html = api.report(traces, tmp_path / "traces.html", jobs=1)
    charts = check_in_browser(html, "traces")
    ids = {c["id"] for c in charts}
    assert {"profiled-steps", "gpu-classes", "cpu-classes", "idle-causes"} <= ids
    # each trace's recommendations carry predicted steps: one what-if chart each
    assert {"whatif-0", "whatif-1", "whatif-2"} <= ids
    assert sum(c["kind"] == "timeline" for c in charts) == 3
    # the ViT and ResNet traces have nn.Module events: their module icicles draw too
    assert [c["data"][0]["type"] for c in charts if c["id"].startswith("modules")] == \
        ["icicle", "icicle"]
