"""Scenario ``ddp``: configurations, the training workload, and a whole run with its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from profiler_kit import api, scenario
from profiler_kit.ddp_benchmark.report import load_report
from profiler_kit.errors import UsageError
from profiler_kit.measure import runner
from profiler_kit.measure.passes import MeasureOptions
from profiler_kit.scenario import RunConfig
from profiler_kit.util.ports import free_port

TINY = {"model": "resnet18", "batch_size": 2, "image_size": 32, "world_size": 2}


def _ddp():
    return scenario.builtin("ddp")


def test_configurations_grow_to_the_world_size() -> None:
    ddp = _ddp()
    names = [s.name for s in ddp.expand({"world_size": 3})]
    assert names == ["no-ddp", "ddp-w1", "ddp-w2", "ddp-w3"]
    assert ddp.baseline == "no-ddp"
    by_name = {s.name: s for s in ddp.expand({"world_size": 3})}
    assert all(s.processes for s in by_name.values())
    assert by_name["no-ddp"].world_size == 1 and not by_name["no-ddp"].options["ddp"]
    assert by_name["ddp-w3"].world_size == 3 and by_name["ddp-w3"].options["ddp"]
    # 0: one rank per GPU; without GPUs the CPU default of 2
    expected = torch.cuda.device_count() if torch.cuda.is_available() else 2
    assert len(ddp.expand({"world_size": 0})) == 1 + (expected or 2)


def test_bucket_sizes_sweep_into_points() -> None:
    ddp = _ddp()
    params = runner.resolve_params(ddp, {"bucket_cap_mb": "25,1"}, "cpu")
    assert params["bucket_cap_mb"] == (25.0, 1.0)
    assert runner.points_of(ddp, params) == [{"bucket_cap_mb": 25.0}, {"bucket_cap_mb": 1.0}]
    assert ddp.param("world_size").default_for("cpu") == 0  # auto: 2 on CPU
    assert ddp.param("model").default_for("cuda") == "resnet50"
    assert ddp.param("batch_size").default_for("cuda") == 32
    assert ddp.param("image_size").default_for("cuda") == 224


def test_unknown_model_is_a_usage_error() -> None:
    ddp = _ddp()
    params = runner.resolve_params(ddp, {"model": "resnet-1000"}, "cpu")
    with pytest.raises(UsageError, match="unknown torchvision classification model"):
        ddp.validate(params)


def test_no_ddp_workload_trains_in_phases() -> None:
    ddp = _ddp()
    params = runner.resolve_params(ddp, TINY, "cpu")
    params["bucket_cap_mb"] = params["bucket_cap_mb"][0]
    strategy = ddp.expand(params)[0]
    w = ddp.build(strategy, RunConfig(params=params, device="cpu"))
    try:
        assert [name for name, _ in w.phases()] == ["forward", "backward", "optimizer"]
        assert w.items_per_step == 2
        assert w.info["ddp"] is False and w.info["backend"] == "gloo"
        before = [p.detach().clone() for p in w.model.parameters()]
        first = w.outputs()
        assert torch.equal(first[0], w.outputs()[0]), "outputs() leaves the state alone"
        assert all(torch.equal(a, b) for a, b in zip(before, w.model.parameters(), strict=True))
        w.step()
        changed = any(not torch.equal(a, b)
                      for a, b in zip(before, w.model.parameters(), strict=True))
        assert changed, "a step trains the model"
    finally:
        w.close()


@pytest.mark.slow
def test_run_measures_ranks_and_writes_the_report(tmp_path: Path) -> None:
    ddp = _ddp()
    options = MeasureOptions(repeats=1, iterations=4, warmup=1, profile_wait=0, profile_warmup=0,
                             profile_active=2)
    copy = tmp_path / "copies" / "report.json"
    result = api.run(ddp, {**TINY, "json_report": str(copy)}, device="cpu", options=options,
                     out=tmp_path, strategies=["ddp-w2"])
    (w2,) = result.strategies
    assert (w2.name, w2.status) == ("ddp-w2", "ok"), w2.error
    assert len(w2.per_rank_samples_ns) == 2
    # each step's time is the slowest rank's, never a pooled sample
    slowest = tuple(max(a, b) for a, b in zip(*w2.per_rank_samples_ns, strict=True))
    assert w2.samples_ns == slowest
    assert w2.items_per_step == 4, "throughput counts the examples of every rank"
    assert w2.info["threads_per_rank"] == 1 and w2.info["world_size"] == 2
    folder = result.run_dir / w2.dir
    workers = sorted(p.name.split(".")[0] for p in folder.glob("*.pt.trace.json"))
    assert workers == ["rank0", "rank1"], "each rank writes its own trace"
    assert sorted(Path(f).name.split(".")[0] for f in w2.trace_files) == ["rank0", "rank1"]

    # run.json's environment names the backend and the interconnect (or its absence)
    env = json.loads((result.run_dir / "run.json").read_text())["environment"]["distributed"]
    assert env["backend"] == "gloo" and env["launcher"] == "spawn"
    assert env["interconnect_topology"] or "no interconnect topology" in env["interconnect_note"]

    # the job view of the two ranks, from their traces, in run.json and the summary
    job = json.loads((result.run_dir / "run.json").read_text())["strategies"][0]["info"]["job"]
    assert job["ranks"] == [0, 1] and job["steps"] == 2 and job["collectives"] > 0
    assert set(job["wait_per_step_ns"]) == {"0", "1"}
    assert job["exposed_wait_per_rank_per_step_ns"] >= 0
    assert "exposed communication per rank per step" in (
        result.run_dir / "summary.md").read_text()

    report_path = result.run_dir / "ddp_report.json"  # written by the run itself
    report = json.loads(report_path.read_text())
    assert json.loads(copy.read_text()) == report
    assert report["distributed_backend"] == "gloo" and report["bucket_size"] == 25.0
    (bench,) = report["benchmark_results"]
    (w2_report,) = bench["result"]
    assert (w2_report["configuration"], w2_report["ranks"]) == ("ddp-w2", [0, 1])
    assert w2_report["measurements"] == [ns / 1e9 for ns in w2.samples_ns]
    assert w2_report["per_rank_measurements"] == [[ns / 1e9 for ns in r]
                                                  for r in w2.per_rank_samples_ns]
    assert set(w2_report["times"]["sec_per_iter"]) == {"p50", "p75", "p90", "p95"}
    assert load_report(result.run_dir) == report

    d = api.diff(report_path, result.run_dir)
    rows = {c.configuration: c for c in d.benchmarks[0].configurations}
    assert set(rows) == {"ddp-w2"}
    assert all(p.change_fraction == 0 for c in rows.values() for p in c.percentiles)


@pytest.mark.slow
def test_json_report_to_stdout_gets_stdout_alone(tmp_path: Path) -> None:
    """``--json-report -``: stdout is the report, so it can be piped; the tables, progress
    and hints go to stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "profiler_kit", "run", "ddp", "--json-report", "-",
         "--model", "resnet18", "--batch-size", "2", "--image-size", "32", "--world-size", "1",
         "--strategies", "no-ddp", "--iterations", "2", "--warmup", "1", "--profile-wait", "0",
         "--profile-warmup", "0", "--profile-active", "1", "--repeats", "1",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (tmp_path / "ddp").iterdir()
    assert json.loads(done.stdout) == load_report(run_dir)
    assert "no-ddp" in done.stderr and "profkit tensorboard" in done.stderr


@pytest.mark.slow
def test_same_command_runs_under_torchrun(tmp_path: Path) -> None:
    """Two processes started by torchrun on loopback: each is one rank, nothing is spawned,
    rank 0 alone writes the run folder and prints; both ranks' traces land in it."""
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--nnodes",
         "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
         "-m", "profiler_kit", "run", "ddp", "--model", "resnet18", "--batch-size", "2",
         "--image-size", "32", "--strategies", "ddp-w2", "--iterations", "3", "--warmup", "1",
         "--profile-wait", "0", "--profile-warmup", "0", "--profile-active", "1",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=400, cwd=tmp_path,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("profkit tensorboard") == 1, "only rank 0 prints"
    (run_dir,) = (tmp_path / "ddp").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    (w2,) = record["strategies"]
    assert w2["status"] == "ok" and len(w2["per_rank_samples_ns"]) == 2
    assert record["environment"]["distributed"]["launcher"] == "torchrun"
    assert record["environment"]["distributed"]["backend"] == "gloo"
    workers = sorted(p.name.split(".")[0] for p in (run_dir / w2["dir"]).glob("*.pt.trace.json"))
    assert workers == ["rank0", "rank1"]
    report = json.loads((run_dir / "ddp_report.json").read_text())
    assert report["metadata"]["launcher"] == "torchrun"
    assert report["benchmark_results"][0]["result"][0]["ranks"] == [0, 1]


@pytest.mark.slow
def test_a_a_pair_of_repeated_runs_is_within_noise(tmp_path: Path) -> None:
    """Two runs of the same code on this machine, each configuration in three independent
    rounds: the diff judges noise between runs and calls no change real. (One round each,
    an A/A pair of runs once saw +37 % at p75 and p = 2.8e-10: samples of one run share its
    conditions and say nothing about the next run's. With repeats but no margin, the t
    interval alone excluded 0 at +3.7 %: repeats back to back share the run's drift.)"""
    ddp = _ddp()
    options = MeasureOptions(iterations=5, warmup=1, profile_wait=0, profile_warmup=0,
                             profile_active=1, repeats=3)
    runs = [api.run(ddp, TINY, device="cpu", options=options, out=tmp_path / side,
                    strategies=["ddp-w1"]) for side in ("a", "b")]
    for run in runs:
        (w1,) = run.strategies
        assert w1.status == "ok", w1.error
        assert [len(r) for r in w1.repeat_samples_ns] == [5, 5, 5]
    d = api.diff(runs[0].run_dir, runs[1].run_dir)
    (c,) = d.benchmarks[0].configurations
    assert (c.configuration, c.noise_model, c.base_repeats, c.test_repeats) == (
        "ddp-w1", "between runs", 3, 3)
    # the configuration's verdict (its median); each percentile row has its own 95 %
    # interval, so over many A/A pairs about one row in twenty lies outside by chance.
    # Beside other work that changed between the two runs, a change the interval would
    # call real is not judged (contended) instead; one the interval calls within noise
    # stays within noise, with the doubt as its reason: never beyond noise. (A parallel
    # test suite once left the second run 0.6 of a core: 36 % slower, with the other
    # work's share only a third of a core higher; the time its thread waited for a core
    # tells. Another time the second run was 26 % slower, doubted, and within the wide
    # interval of three rounds a side.)
    (p50,) = [p for p in c.percentiles if p.percentile == 50]
    if p50.noise.doubt:
        assert c.beyond_noise is not True and p50.noise.doubt in ("contended", "unstable"), c
        return
    assert c.beyond_noise is False, c
    margin = p50.noise.min_effect_fraction
    assert margin == 0.05
    assert p50.noise.ci_low_fraction <= margin and p50.noise.ci_high_fraction >= -margin
