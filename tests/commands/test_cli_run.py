"""``profkit run`` and ``profkit list`` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler_kit.cli import main
from profiler_kit.render.wording.diff_views import strategy_verdict
from profiler_kit.results import read_run

HERE = Path(__file__).parents[1]
QUICK = ["--iterations", "2", "--warmup", "0", "--profile-wait", "0", "--profile-warmup", "1",
         "--profile-active", "1"]


@pytest.mark.parametrize("argv", [
    ["run", "concurrent", "--batch-size", "0"],
    ["run", "concurrent", "--iterations", "-3"],
    ["run", "concurrent", "--bogus", "1"],
    ["run", "concurrent", "--models", "resnet18,nonexistent_net"],
    ["run", "concurrent", "--strategies", "sequential,warp"],
    ["run", "concurrent", "--memory-snapshot", "--device", "cpu"],
    ["run", "concurrent", "--counters", "--device", "cpu"],
    ["run", "no_such_scenario"],
    ["run", "./missing_scenario.py"],
    ["run"],
])
def test_bad_arguments_are_one_line_and_exit_2(argv, capsys, tmp_path) -> None:
    assert main([*argv, "--out", str(tmp_path)] if len(argv) > 2 else argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("profkit: error: ") and err.count("\n") == 1
    assert "Traceback" not in err
    assert not any(tmp_path.iterdir())


def test_failing_strategy_exits_1_and_keeps_the_others(capsys, tmp_path) -> None:
    status = main(["run", str(HERE / "user_scenarios" / "failing.py"), "--out", str(tmp_path),
                   "--device", "cpu", *QUICK])
    assert status == 1
    out = capsys.readouterr().out
    assert "failed broken: RuntimeError: CUDA out of memory" in " ".join(out.split())
    (run_dir,) = (tmp_path / "failing").iterdir()
    doc = json.loads((run_dir / "run.json").read_text())
    assert [s["status"] for s in doc["strategies"]][:4] == ["ok", "failed", "failed", "ok"]


def test_ctrl_c_exits_130_with_run_json_interrupted(tmp_path) -> None:
    status = main(["run", str(HERE / "user_scenarios" / "interrupted.py"), "--out",
                   str(tmp_path), *QUICK])
    assert status == 130
    (run_dir,) = (tmp_path / "interrupted").iterdir()
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["interrupted"] is True
    assert "Interrupted" in (run_dir / "summary.md").read_text()


def test_user_scenario_file_runs_like_a_builtin(capsys, tmp_path) -> None:
    example = HERE.parent / "examples" / "my_scenario.py"
    assert main(["run", str(example), "--out", str(tmp_path), "--batch-size", "4", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "channels_last" in out and "profkit tensorboard" in out
    _check_verdicts(tmp_path, out)


def _check_verdicts(out_dir: Path, console: str) -> None:
    """Every strategy but the baseline ends with a verdict from the traces: in run.json as
    figures (its step change term by term, the terms adding up to the change in step
    time; or, where the profiled steps contradict the timing, the reason the explanation
    is withheld), and worded alike in summary.md and on the console."""
    (run_dir,) = (p for p in out_dir.rglob("run.json"))
    doc = json.loads(run_dir.read_text())
    run = read_run(run_dir)
    summary = (run_dir.parent / "summary.md").read_text()
    flat = " ".join(console.split())
    for s, strategy in zip(doc["strategies"], run.strategies, strict=True):
        if s["status"] != "ok":
            continue
        assert "verdict" not in s  # figures, not a line
        if s["name"] == doc["scenario"]["baseline"]:
            assert s["explanation"] is None and s["explanation_withheld"] is None
            assert s["step_change_ns"] == {}
            continue
        line = strategy_verdict(strategy)
        assert line.startswith(f"{s['name']}: ")
        if s["explanation_withheld"] is not None:
            # the profiled steps told another story than the timing (a busy machine)
            assert "where the timed medians say" in s["explanation_withheld"]
            assert s["explanation"] is None and s["step_change_ns"] == {}
        else:
            change = dict(s["step_change_ns"])
            total = change.pop("step")
            assert sum(change.values()) == pytest.approx(total, abs=1e-3)
            assert s["explanation"]["delta_ns"] == pytest.approx(total)
        assert f"- {line}" in summary
        assert " ".join(line.split()) in flat


@pytest.mark.slow
def test_concurrent_end_to_end(capsys, tmp_path) -> None:
    status = main(["run", "concurrent", "--models", "resnet18,resnet18",
                   "--batch-size", "2", "--image-size", "16", "--amp", "--streams", "--out",
                   str(tmp_path), *QUICK])
    assert status == 0
    out = capsys.readouterr().out
    (run_dir,) = (tmp_path / "concurrent").iterdir()
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["schema"] == "profkit.run/1" and doc["interrupted"] is False
    assert doc["scenario"]["name"] == "concurrent" and doc["scenario"]["baseline"] == "sequential"
    assert doc["params"] == {"batch_size": 2, "image_size": 16,
                             "models": "resnet18,resnet18", "train": False}
    env = doc["environment"]
    for key in ("torch", "torchvision", "cuda", "device_count", "devices", "cpu_threads",
                "hostname", "command_line"):
        assert key in env
    statuses = {s["name"]: s["status"] for s in doc["strategies"]}
    import torch

    if not torch.cuda.is_available():
        assert statuses == {"sequential": "ok", "sequential+amp": "ok", "threads": "ok",
                            "threads+amp": "ok", "streams": "skipped", "streams+amp": "skipped",
                            "devices": "skipped", "devices+amp": "skipped"}
        assert {s["name"] for s in doc["skipped"]} == {"streams", "streams+amp", "devices",
                                                       "devices+amp"}
        assert "needs CUDA; this machine has none" in out
    for s in doc["strategies"]:
        if s["status"] != "ok":
            continue
        # three rounds by default, two samples each; only the first round is profiled
        assert [len(r) for r in s["repeat_samples_ns"]] == [2, 2, 2]
        assert s["stats"]["n"] == 6 and s["profiled"]["n"] == 1
        assert s["noise"] is None or s["noise"]["method"] in ("paired by round", "n/a")
        assert s["throughput_items_per_s"] > 0 and s["speedup"] > 0
        assert s["items_per_step"] == 4
        assert s["equivalence"]["ok"] is True
        if not s["name"].startswith("threads"):  # profiling all threads records no memory
            assert s["peak_memory"]["cpu"]["allocated_bytes"] > 0
            assert "cpu_memory" not in s["info"]
        else:  # and the run says so, rather than leaving the memory blank
            assert "cpu" not in s["peak_memory"]
            assert "profile_all_threads" in s["info"]["cpu_memory"]
        assert set(s["hotspots"]) == {"convolution", "batchnorm", "gemm", "other"}
        assert s["info"]["param_count"] > 0
        folder = run_dir / s["dir"]
        assert [f for f in s["trace_files"] if (run_dir / f).is_file()] == s["trace_files"]
        assert len(s["trace_files"]) == 1
        assert (folder / "key_averages.txt").is_file()
        rows = json.loads((folder / "key_averages.json").read_text())
        assert any("conv" in r["name"] for r in rows)  # in worker threads too
        assert s["hotspots"]["convolution"] > 0
    assert doc["strategies"][0]["speedup"] == pytest.approx(1.0)
    summary = (run_dir / "summary.md").read_text()
    assert "threads+amp" in summary and "profkit tensorboard" in summary
    assert "CPU not recorded: its ops run in worker threads, profiled with profile_all_threads" \
        in summary
    assert f"profkit tensorboard {run_dir}" in " ".join(out.split())
    _check_verdicts(tmp_path, out)
    amp = next(s for s in doc["strategies"] if s["name"] == "sequential+amp")
    # or, where the profiled steps contradict the timing (a busy machine), withheld
    assert (amp["explanation"] is not None and amp["explanation"]["side"] in ("cpu", "device")
            or amp["explanation_withheld"] is not None)
    _check_predictions(run_dir, doc, summary)


def _check_predictions(run_dir: Path, doc: dict, summary: str) -> None:
    """The AMP twins predicted from their counterparts' traces, their ops timed on this
    machine in the dtype their autocast ran (``precision bf16 (measured)``), in run.json,
    summary.md and report.html, the timed step from the counterpart's timed median;
    threads get a record that no what-if models them."""
    from profiler_kit.analysis.whatif.replay import replay
    from profiler_kit.trace.loader import load

    by_name = {s["name"]: s for s in doc["strategies"]}
    assert by_name["sequential"]["prediction"] is None
    for name in ("sequential+amp", "threads+amp"):
        s, base = by_name[name], by_name[name.removesuffix("+amp")]
        p = s["prediction"]
        dtype = {"bfloat16": "bf16", "float16": "fp16"}[s["amp_dtype"]]
        assert p["change"] == f"precision {dtype} (measured)" and p["source"] == base["name"]
        assert p["measured_ns"] == s["stats"]["median_ns"]
        assert p["trace_step_ns"] == replay(load(run_dir / s["trace_files"][0])
                                            ).measured_step_ns
        assert p["source_step_ns"] == replay(load(run_dir / base["trace_files"][0])
                                             ).measured_step_ns
        assert p["predicted_ns"] is not None and p["timed_ns"] is not None
        assert p["timed_ns"] == pytest.approx(
            base["stats"]["median_ns"] * p["predicted_ns"] / p["source_step_ns"], rel=0.05)
        assert p["error"] == pytest.approx((p["timed_ns"] - p["measured_ns"]) / p["measured_ns"])
        (touched,) = p["replay_notes"]  # what the change touched, worded in summary.md
        assert touched["code"] == "ops_measured" and touched["figures"]["device"] == doc["device"]
        assert f"timed on {doc['device']} from the trace's shapes" in summary
        assert f"precision {dtype} (measured) on {base['name']}" in summary
    assert by_name["threads"]["prediction"]["note"].startswith("no what-if models this strategy")
    assert "Predicted by the what-if replay" in summary
    report = run_dir / "report.html"
    if report.is_file():  # plotly installed
        assert 'id="whatif"' in report.read_text()


def test_list_shows_every_scenario_with_strategies_params_and_needs(capsys) -> None:
    assert main(["list"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in ("concurrent", "multimodel", "pipeline", "ddp"):
        assert f"{name}:" in out
    for text in ("sequential (baseline)", "threads", "CUDA, --streams", "≥2 GPUs",
                 "--batch-size", "200", "densenet121,resnet101", "--train"):
        assert text in out
