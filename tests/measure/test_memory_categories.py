"""Memory by category from PyTorch's memory profiler, recorded in the profiled pass.

The reference is PyTorch's own ``export_memory_timeline(path.json, device="cpu")`` on the
same profiling cycle: the stored categories must equal it, byte for byte at the peak.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from profiler_kit.cli import main
from profiler_kit.measure import memory_categories

HERE = Path(__file__).parents[1]
QUICK = ["--iterations", "2", "--warmup", "0", "--repeats", "1", "--profile-wait", "0",
         "--profile-warmup", "1", "--profile-active", "2"]


def test_categories_equal_export_memory_timeline(tmp_path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(32, 64)
    reference: dict = {}

    def export(prof) -> None:
        prof.export_memory_timeline(str(tmp_path / "ref.json"), device="cpu")
        reference["doc"] = json.loads((tmp_path / "ref.json").read_text())

    ready = memory_categories.handler(export, tmp_path, "w", ["cpu"])
    with profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready,
                 schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                 record_shapes=True, profile_memory=True, with_stack=True) as prof:
        for _ in range(3):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            prof.step()
    doc = json.loads((tmp_path / f"w{memory_categories.SUFFIX}").read_text())
    cpu = doc["devices"]["cpu"]
    times, sizes = reference["doc"]
    assert cpu["times_us"] == times
    assert cpu["bytes"] == [row[1:] for row in sizes]
    ref_peak = max(sizes, key=lambda row: sum(row[1:]))
    peak = cpu["peak"]
    assert peak["total_bytes"] == sum(ref_peak[1:])
    assert list(peak["by_category"].values()) == ref_peak[1:]
    # at least the weights count as parameters (PyTorch's profiler may hold an old and a new
    # version of an updated weight at the same instant, so not exactly)
    n_params = sum(p.numel() for p in model.parameters()) * 4
    assert peak["by_category"]["parameter"] >= n_params


def test_run_with_stack_keeps_categories_beside_the_trace(tmp_path) -> None:
    example = HERE.parent / "examples" / "my_scenario.py"
    assert main(["run", str(example), "--out", str(tmp_path), "--batch-size", "4",
                 "--with-stack", *QUICK]) == 0
    files = sorted(tmp_path.rglob(f"*{memory_categories.SUFFIX}"))
    assert files
    for path in files:
        doc = json.loads(path.read_text())
        assert doc["format"] == 1 and doc["devices"]["cpu"]["peak"]["total_bytes"] > 0


def test_categories_without_one_allocation_are_left_out(tmp_path) -> None:
    """A profile that recorded no allocation (``profile_all_threads``: concurrent's threads
    strategies) leaves a timeline whose total never moves, only the tensors from before
    it: no peak is claimed from it, and the reason is the note."""
    from profiler_kit.sources.memory_categories import read_category_peaks

    names = ["parameter", "input", "unknown"]
    rows = [[200, 6, 12]] * 3  # pre-existing, then version bumps that move nothing
    doc = {"format": 1, "categories": names, "devices": {"cpu": {
        "times_us": [5, 5, 9], "bytes": rows,
        "peak": {"time_us": 5, "total_bytes": 218,
                 "by_category": dict(zip(names, rows[0], strict=True))}}}}
    path = tmp_path / "main.memory_categories.json"
    path.write_text(json.dumps(doc))
    peaks, note = read_category_peaks(path)
    assert peaks == [] and note is not None
    assert note.code == "categories_left_out" and note.figures["devices"] == ("cpu",)
