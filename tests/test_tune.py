"""``profkit tune``: real tiny models under real knobs on the CPU (no mocks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler_kit import api
from profiler_kit.cli import main
from profiler_kit.commands.tune import is_winner
from profiler_kit.errors import UsageError
from profiler_kit.measure.passes import MeasureOptions
from profiler_kit.scenarios import tune

DATA = Path(__file__).parent / "data" / "tune"
FAST = MeasureOptions(iterations=3, warmup=1, repeats=2, profile_active=1)
# one round of 6 samples: judged within the run, whose bootstrap of the median stands up
# to a shared 2-core machine (3 paired rounds' interval is too wide to call anything there)
WITHIN = MeasureOptions(iterations=6, warmup=1, repeats=1, profile_active=1)


def _run(name: str, knobs: list[str], tmp_path: Path, options: MeasureOptions = FAST):
    scenario = tune.TuneScenario(tune.load_user_model(str(DATA / name)))
    return api.run(scenario, {"batch_size": 4}, device="cpu",
                   strategies=[tune.BASELINE, *knobs], options=options, out=tmp_path)


def test_channels_last_wins_over_a_slow_contiguous_baseline_when_training(tmp_path) -> None:
    result = _run("slow_contiguous.py", ["channels_last"], tmp_path, WITHIN)
    by = {s.name: s for s in result.strategies}
    cl = by["channels_last"]
    assert cl.status == "ok" and cl.equivalence.ok  # outputs and gradients match
    assert cl.speedup > 1.5 and is_winner(cl)
    assert cl.info["training"] is True
    assert tune.snippet([cl.name]).startswith("model = model.to(memory_format")


def test_autocast_that_changes_results_is_rejected_and_never_wins(tmp_path) -> None:
    result = _run("cancels.py", ["autocast", "channels_last"], tmp_path)
    by = {s.name: s for s in result.strategies}
    assert by["autocast"].equivalence.checked and not by["autocast"].equivalence.ok
    assert not is_winner(by["autocast"])
    assert by["channels_last"].status == "skipped" and "4-D" in by["channels_last"].reason


def test_compile_time_is_reported_apart_from_step_time(tmp_path) -> None:
    options = MeasureOptions(iterations=2, warmup=1, repeats=1, profile_active=1)
    result = _run("cancels.py", ["compile"], tmp_path, options)
    comp = {s.name: s for s in result.strategies}["compile"]
    if comp.status == "failed":  # no C++ compiler: one line, the baseline still stands
        assert "\n" not in comp.error
        return
    assert comp.info["compile_s"] > 0 and comp.info["graph_breaks"] == 0
    assert comp.stats.median_ns < comp.info["compile_s"] * 1e9  # compile is not in the step
    run = json.loads((result.run_dir / "run.json").read_text())
    assert any("compile_s" in s["info"] for s in run["strategies"])


def test_cuda_knobs_are_listed_as_skipped_on_the_cpu(tmp_path) -> None:
    result = _run("cancels.py", ["tf32", "cudnn_benchmark"],
                  tmp_path, MeasureOptions(iterations=2, warmup=1, repeats=1, profile_active=1))
    skipped = {s.name: s.reason for s in result.strategies if s.status == "skipped"}
    assert set(skipped) == {"tf32", "cudnn_benchmark"}
    assert all("CUDA" in r for r in skipped.values())


def test_a_file_without_the_functions_is_one_line(capsys) -> None:
    with pytest.raises(UsageError, match="defines no inputs"):
        tune.load_user_model(str(DATA / "no_inputs.py"))
    assert main(["tune", str(DATA / "no_inputs.py")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "inputs" in err


def test_the_command_prints_the_recommended_settings(tmp_path, capsys) -> None:
    status = main(["tune", str(DATA / "slow_contiguous.py"), "--device", "cpu",
                   "--knobs", "channels_last", "--repeats", "1", "--iterations", "6",
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    assert "Recommended settings:" in out and "channels_last" in out


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_tf32_and_cudnn_benchmark_run_and_restore_the_flags_on_cuda(tmp_path) -> None:
    import torch

    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark)
    scenario = tune.TuneScenario(tune.load_user_model(str(DATA / "slow_contiguous.py")))
    result = api.run(scenario, {"batch_size": 4}, device="cuda",
                     strategies=[tune.BASELINE, "tf32", "cudnn_benchmark", "autocast"],
                     options=FAST, out=tmp_path)
    assert all(s.status == "ok" for s in result.strategies)
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark) == before
