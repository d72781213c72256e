"""``profkit analyze`` of a run folder: compared against the run's own baseline (from
run.json, not the first folder in name order), with short labels (the strategy and the
worker, without the trace handler's time stamp)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from profiler_kit import api
from profiler_kit.results import RunResult, StrategyResult
from profiler_kit.util import artifacts

DATA = Path(__file__).parents[1] / "data"
TRACE = DATA / "cpu_torch_profiler.pt.trace.json.gz"


def ddp_run(tmp_path: Path) -> Path:
    """A ddp run's layout: a point folder, no-ddp (the baseline), ddp-w1, ddp-w2 (2 ranks)."""
    run_dir = tmp_path / "ddp" / "20260101-000000-abcd"
    point = "bucket_cap_mb=25.0"
    ranks = {"no-ddp": 1, "ddp-w1": 1, "ddp-w2": 2}
    strategies = []
    for n, (name, world) in enumerate(ranks.items()):
        folder = run_dir / point / name
        folder.mkdir(parents=True)
        for rank in range(world):
            shutil.copy(TRACE, folder / f"rank{rank}.17953777617624085{n}{rank}.pt.trace.json.gz")
        strategies.append(StrategyResult(name=name, status="ok", point=point,
                                         dir=f"{point}/{name}", world_size=world))
    run = RunResult(run_dir=run_dir, scenario="ddp", description="", baseline="no-ddp",
                    item_unit="images", device="cpu", params={}, sweep=("bucket_cap_mb",),
                    points=({"bucket_cap_mb": 25.0},), options={}, environment={},
                    strategies=tuple(strategies), started_at="2026-01-01T00:00:00+00:00")
    artifacts.write_json_atomic(run_dir / artifacts.RUN_JSON, run.to_json())
    return run_dir


def test_the_runs_baseline_and_short_labels(tmp_path: Path) -> None:
    run_dir = ddp_run(tmp_path)
    analyses = api.analyze([run_dir])
    assert [a.label for a in analyses] == ["ddp-w1", "ddp-w2/rank0", "ddp-w2/rank1", "no-ddp"]
    comparison = api.compare(analyses)
    assert comparison.labels[comparison.baseline] == "no-ddp"
    # the user's choice still wins
    assert api.compare(analyses, "ddp-w1").baseline == 0

    r = subprocess.run([sys.executable, "-m", "profiler_kit", "compare", str(run_dir),
                        "--json", "-"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["comparison"]["baseline"] == "no-ddp"


def test_repeated_cycles_keep_their_time_stamps(tmp_path: Path) -> None:
    """Two traces of one worker in one folder (profile_repeat 2): the stamps tell them apart."""
    folder = tmp_path / "s"
    folder.mkdir()
    for stamp in ("1795377761762408591", "1795377761999999999"):
        shutil.copy(TRACE, folder / f"rank0.{stamp}.pt.trace.json.gz")
    labels = [a.label for a in api.analyze([folder])]
    assert labels == ["rank0.1795377761762408591", "rank0.1795377761999999999"]
    assert api.analyze([folder]).baseline is None
