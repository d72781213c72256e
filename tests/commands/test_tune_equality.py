"""``profkit tune``'s verdicts that hold on a busy machine: results judged against float64
(PyTorch's benchmark-harness rule, on hand-made tensors), a baseline that fails is one line
and no answer, each knob listed once, and no recommendation from rounds judged unstable.
Nothing here depends on timings."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from profiler_kit import results
from profiler_kit.cli import main
from profiler_kit.errors import ModelError
from profiler_kit.measure import equivalence as eq
from profiler_kit.noise import PAIRED_BY_ROUND, NoiseVerdict, speedup_verdict
from profiler_kit.render.console import tune as tune_console
from profiler_kit.scenarios import tune, tune_stack

DATA = Path(__file__).parents[1] / "data" / "tune"


def _matmul() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x @ w in float64 (the reference), in float32 (the baseline) and under bfloat16
    autocast, from the same float64 values."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 256, generator=g, dtype=torch.float64)
    w = torch.randn(256, 128, generator=g, dtype=torch.float64) / 16
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = x.float() @ w.float()
    assert low.dtype == torch.bfloat16
    return x @ w, x.float() @ w.float(), low


def _reference(*pairs: tuple[torch.Tensor, torch.Tensor | None]) -> eq.Outputs:
    """The baseline's outputs as ``profkit tune``'s baseline hands them to the runner."""
    baseline = [b for b, _ in pairs]
    f64 = [r for _, r in pairs]
    return eq.snapshot(eq.Outputs(baseline, None if None in f64 else f64,
                                  "no float64 kernel" if None in f64 else "",
                                  [f"output {i}" for i in range(len(pairs))]))


def test_a_bfloat16_output_close_enough_to_float64_passes_and_says_what_was_compared() -> None:
    exact, baseline, low = _matmul()
    check = eq.compare(_reference((baseline, exact)), [low], "bfloat16")
    assert isinstance(check, eq.Float64Equivalence) and check.checked and check.ok
    # bfloat16 is off float64 by far more than float32 is, within the dtype's slack
    assert 1e-4 < check.max_rel_error < eq.REDUCED_PRECISION_SLACK["bfloat16"]
    assert 0 < check.baseline_error < 1e-5
    assert check.tolerance == pytest.approx(3 * check.baseline_error + 0.08)
    assert check.criterion == "float64 rule: RMSE against float64 <= 3 x the baseline's + 0.08"
    assert "closest to its bound: output 0" in check.detail
    recorded = check.to_json()  # run.json and tune.json keep the baseline's error too
    assert recorded["baseline_error"] == check.baseline_error and recorded["output"] == "output 0"


def test_an_output_that_is_wrong_fails_in_float32_and_in_bfloat16() -> None:
    exact, baseline, low = _matmul()
    ref = _reference((baseline, exact))
    noisy = baseline + 0.05 * baseline.std() * torch.randn(baseline.shape,
                                                          generator=torch.Generator().manual_seed(1))
    off = eq.compare(ref, [noisy], None)
    assert off.checked and not off.ok
    assert off.max_rel_error > off.tolerance == pytest.approx(2 * off.baseline_error + 1e-5)
    assert "output 0: error " in off.detail and "more than 2 x" in off.detail
    scaled = eq.compare(ref, [(baseline * 1.3).bfloat16()], "bfloat16")
    assert not scaled.ok and scaled.max_rel_error == pytest.approx(0.3, rel=0.05)


def test_an_output_float32_cannot_compute_accurately_holds_a_knob_to_the_baseline_error() -> None:
    """The multiplier rule: a knob as far off float64 as the float32 baseline itself passes
    (where allclose to the baseline fails), one five times as far off fails."""
    g = torch.Generator().manual_seed(2)
    exact = torch.randn(4000, generator=g, dtype=torch.float64)
    baseline = (exact + 1e-3 * torch.randn(4000, generator=g, dtype=torch.float64)).float()
    like_it = (exact + 1e-3 * torch.randn(4000, generator=g, dtype=torch.float64)).float()
    worse = (exact + 5e-3 * torch.randn(4000, generator=g, dtype=torch.float64)).float()
    ref = _reference((baseline, exact))
    assert not eq.compare([baseline], [like_it], None).ok  # profkit run's allclose rule
    same = eq.compare(ref, [like_it], None)
    assert same.ok and same.criterion.startswith("float64 rule: RMSE")
    assert same.baseline_error == pytest.approx(1e-3, rel=0.1)
    assert not eq.compare(ref, [worse], None).ok


def test_the_multiplier_and_tolerances_follow_the_harness() -> None:
    assert eq.multiplier("float32", (64, 128), 64 * 128, 1e-4) == 2.0
    assert eq.multiplier("bfloat16", (64, 128), 64 * 128, 1e-3) == 3.0
    assert eq.multiplier("float32", (10,), 10, 1e-4) == 3.0  # fewer than 1000 values
    assert eq.multiplier("float32", (8, 512, 1, 1), 4096, 1e-4) == 3.0  # 1x1 spatial
    assert eq.float64_tolerances("float32") == (1e-4, 1e-5)
    assert eq.float64_tolerances("float16") == (1e-3, 0.02)
    assert eq.float64_tolerances("bfloat16", slack=0.5) == (1e-3, 0.5)  # training's


def test_large_outputs_are_judged_by_cosine_similarity() -> None:
    g = torch.Generator().manual_seed(3)
    exact = torch.randn(eq.COSINE_MIN_NUMEL, generator=g, dtype=torch.float64)
    baseline = exact.float()
    ref = _reference((baseline, exact))
    # 5 % noise: far beyond the RMSE rule's bound, within a cosine similarity of 0.99
    close = baseline + 0.05 * torch.randn(baseline.shape, generator=g)
    passed = eq.compare(ref, [close], None)
    assert passed.ok and "cosine similarity" in passed.criterion
    assert 0 < passed.max_rel_error < 0.01 and passed.tolerance == pytest.approx(0.01)
    assert eq.check_output(baseline[:1000], close[:1000], exact[:1000]).ok is False
    far = eq.compare(ref, [baseline + 0.5 * torch.randn(baseline.shape, generator=g)], None)
    assert not far.ok and "below 0.99" in far.detail


def test_without_float64_every_output_is_held_to_the_cosine_similarity() -> None:
    exact, baseline, low = _matmul()
    ref = _reference((baseline, None))
    check = eq.compare(ref, [low], "bfloat16")
    assert check.ok and "cosine similarity to the baseline" in check.criterion
    assert check.baseline_error is None and "no float64 kernel" in check.detail
    assert not eq.compare(ref, [-low], "bfloat16").ok


def test_profkit_runs_check_is_unchanged_for_plain_outputs() -> None:
    exact, baseline, low = _matmul()
    ref = eq.snapshot([baseline])
    assert type(ref) is list
    check = eq.compare(ref, [low], "bfloat16")
    assert type(check) is results.Equivalence and check.criterion == "relative error of norm"


def test_shape_count_and_non_finite_outputs_are_reported_with_the_outputs_name() -> None:
    exact, baseline, _ = _matmul()
    ref = eq.snapshot(eq.Outputs([baseline], [exact], names=["gradient of fc.weight"]))
    assert "gradient of fc.weight has shape (128, 64)" in eq.compare(
        ref, [baseline.t()], None).detail
    assert "2 outputs" in eq.compare(ref, [baseline, baseline], None).detail
    nan = baseline.clone()
    nan[0, 0] = float("nan")
    assert "non-finite" in eq.compare(ref, [nan], None).detail


def test_the_baseline_of_a_training_step_comes_with_its_float64_gradients() -> None:
    from profiler_kit.scenario import RunConfig

    user = tune.load_user_model(str(DATA / "slow_contiguous.py"))
    assert user.loss is not None
    workload = tune.TuneWorkload(user, tune.BASELINE,
                                 RunConfig(params={"batch_size": 2}, device="cpu"))
    try:
        out = workload.outputs()
    finally:
        workload.close()
    assert isinstance(out, eq.Outputs) and out.float64 is not None
    assert len(out.float64) == len(out) and out.names[0] == "output"
    assert all(n.startswith("gradient of ") for n in out.names[1:])
    assert all(r.dtype == torch.float64 and r.shape == t.shape
               for t, r in zip(out, out.float64, strict=True))
    assert 0 <= workload.info["float64_error"] < 1e-3


# ---------------------------------------------------------------- a failing baseline


@pytest.mark.parametrize(("name", "error"), [
    ("baseline_raises.py", "RuntimeError: shape '[3, -1]' is invalid"),
    ("baseline_nan.py", "NotFinite: output is not finite"),
])
def test_a_failing_baseline_is_one_line_with_the_models_error_and_no_answer(
        name, error, tmp_path, capsys) -> None:
    status = main(["tune", str(DATA / name), "--device", "cpu", "--knobs", "threads",
                   "--repeats", "1", "--iterations", "2", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert status == 1
    assert err.count("\n") == 0 and err.startswith("profkit: error: tune: ")
    assert "fails in float32 eager" in err and error in err
    assert "Recommended" not in captured.out and "Knobs, ranked" not in captured.out
    assert not (tmp_path / "tune").exists()  # nothing was measured


def test_with_debug_a_failing_baseline_shows_the_models_traceback() -> None:
    with pytest.raises(ModelError) as raised:
        main(["--debug", "tune", str(DATA / "baseline_raises.py"), "--device", "cpu"])
    assert raised.value.exit_code == 1
    assert isinstance(raised.value.__cause__, RuntimeError)  # the model's own error


# ---------------------------------------------------------------- each knob once


def test_each_knob_is_listed_once_on_the_console_and_in_tune_json(tmp_path, capsys) -> None:
    """Two rounds, a rejected knob and skipped ones: one row each in the ranked table, no
    line per round, no second table of the run (the run folder keeps those)."""
    knobs = ["autocast", "channels_last", "tf32"]
    status = main(["tune", str(DATA / "cancels.py"), "--device", "cpu", "--knobs",
                   ",".join(knobs), "--repeats", "2", "--iterations", "2",
                   "--no-batch-sweep", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    names = [tune.BASELINE, *knobs]
    rows = [line.split("│")[2].strip() for line in out.splitlines()
            if line.startswith("│") and line.count("│") > 3]
    assert sorted(r for r in rows if r) == sorted(names)
    # the knob's name starts no other line (no progress line per round, no run table)
    for n in names:
        assert not any(line.lstrip("│ ").startswith(n) for line in out.splitlines()
                       if not line.startswith("│")), n
    (run_dir,) = (tmp_path / "tune").iterdir()
    answer = json.loads((run_dir / "tune.json").read_text())
    assert [k["name"] for k in answer["knobs"]] == names
    by = {k["name"]: k for k in answer["knobs"]}
    assert by["autocast"]["status"] == "failed" and not by["autocast"]["equality"]["ok"]
    assert by["autocast"]["equality"]["criterion"].startswith("float64 rule")
    assert by["autocast"]["equality"]["baseline_error"] > 0
    assert by[tune.BASELINE]["float64"]["baseline_error"] > 0
    assert {by[n]["status"] for n in ("channels_last", "tf32")} == {"skipped"}
    assert answer["recommended"] is None


# ---------------------------------------------------------------- unstable rounds


def _row(name: str, median_ms: float, speedup: float, noise: Any):
    samples = [int(median_ms * 1e6)] * 5
    return results.StrategyResult(
        name=name, status=results.OK, samples_ns=tuple(samples), stats=results.stats(samples),
        items_per_step=8, throughput_items_per_s=8 / (median_ms / 1e3), speedup=speedup,
        noise=noise, equivalence=results.Equivalence(True, True, 0.0, None, "allclose"))


def _verdict(beyond: bool | None, low: float | None = None, high: float | None = None,
             doubt: str = "", reason: str = "") -> NoiseVerdict:
    """A noise verdict as ``profiler_kit.noise`` gives it (``doubt``: why it is not
    judged whatever its interval, e.g. ``unstable``)."""
    return NoiseVerdict(PAIRED_BY_ROUND, beyond, low, high, 0.05, reason, doubt)


def test_a_knob_judged_unstable_is_shown_as_such_and_never_recommended() -> None:
    """The trial on a busy machine: bimodal baseline rounds (125.7 / 1.34 / 123.9 ms) made
    threads 86x; a verdict whose ``beyond_noise`` is not True recommends nothing."""
    unstable = _verdict(None, 0.6, 120.0, "unstable",
                        "the baseline is unstable: round medians 126 / 1.34 / 124 ms")
    rows = [_row(tune.BASELINE, 125.7, 1.0, None), _row("threads", 1.45, 86.36, unstable),
            _row("compile", 120.0, 1.05, _verdict(False, -0.02, 0.1))]
    assert not tune_stack.is_winner(rows[1]) and tune_stack.doubt(unstable) == "unstable"
    best, pending, notes = tune_stack.walk(rows, tune.BASELINE)
    assert best is None and pending is None and notes == []
    text = _text(tune_console.ranked_table(
        SimpleNamespace(at=lambda point: rows, item_unit="items"), None))
    threads = next(line for line in text.splitlines() if " threads " in line)
    assert "unstable rounds: not judged" in threads and "recommended" not in threads
    # a doubt makes no winner even beyond noise; not judged and slower beyond noise neither
    assert not tune_stack.is_winner(_row("t", 1.0, 80.0, _verdict(True, 0.5, 90.0, "unstable")))
    assert not tune_stack.is_winner(_row("t", 1.0, 80.0, _verdict(None)))
    assert not tune_stack.is_winner(_row("t", 1.0, 1.2, _verdict(True, -0.5, -0.2)))
    assert tune_stack.is_winner(_row("t", 1.0, 1.3, _verdict(True, 0.2, 0.5)))


def test_the_trials_bimodal_baseline_rounds_recommend_nothing() -> None:
    """The rounds themselves, through the noise model ``profkit tune`` uses."""
    ms = 1_000_000
    base = [[int(125.7 * ms)] * 5, [int(1.34 * ms)] * 5, [int(123.9 * ms)] * 5]
    threads = [[int(1.45 * ms)] * 5] * 3
    v = speedup_verdict(base, threads)
    assert v.beyond_noise is not True
    rows = [_row(tune.BASELINE, 123.9, 1.0, None), _row("threads", 1.45, 86.36, v)]
    assert not tune_stack.is_winner(rows[1])
    assert tune_stack.walk(rows, tune.BASELINE)[0] is None


def _text(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()
