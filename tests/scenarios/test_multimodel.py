"""The multimodel scenario: every layout of the N models computes the same thing."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from profiler_kit.errors import UsageError
from profiler_kit.scenario import RunConfig, Strategy, builtin
from profiler_kit.scenarios.multimodel_workload import PHASES, initial_weights

SCENARIO = builtin("multimodel")
STRATEGIES = {s.name: s for s in SCENARIO.strategies}
TINY = {"d_in": 6, "d_out": 5, "batch": 3, "lr": 0.05, "momentum": 0.9}


def _params(n: int, seq_len: int = 0, **over: Any) -> dict[str, Any]:
    return {**TINY, "n_model": n, "seq_len": seq_len, **over}


def _build(name: str, n: int, seq_len: int = 0, amp: str | None = None, **over: Any):
    strategy = STRATEGIES[name]
    if amp:
        strategy = strategy.amp_twin()
    config = RunConfig(params=_params(n, seq_len, **over), device="cpu", amp_dtype=amp, seed=3)
    return SCENARIO.build(strategy, config)


def test_strategies_and_baseline() -> None:
    assert [s.name for s in SCENARIO.strategies] == ["linear", "conv1d", "gconv1d", "bmm", "vmap"]
    assert SCENARIO.baseline == "linear"
    assert SCENARIO.param("n_model").sweep
    assert SCENARIO.param("d_in").default_for("cuda") == 256
    assert SCENARIO.param("d_out").default_for("cuda") == 512
    assert SCENARIO.param("batch").default_for("cuda") == 32
    assert SCENARIO.param("momentum").default == 0.9
    assert SCENARIO.param("seq_len").default == 0


@pytest.mark.parametrize("seq_len", [0, 4])
@pytest.mark.parametrize("n", [1, 3, 8])
@pytest.mark.parametrize("name", ["conv1d", "gconv1d", "bmm", "vmap"])
def test_same_outputs_and_gradients_as_linear(name: str, n: int, seq_len: int) -> None:
    ref = _build("linear", n, seq_len).outputs()
    got = _build(name, n, seq_len).outputs()
    out_shape = (n, TINY["batch"], seq_len, TINY["d_out"]) if seq_len else (
        n, TINY["batch"], TINY["d_out"])
    assert ref[0].shape == out_shape
    assert ref[1].shape == (n, TINY["d_out"], TINY["d_in"])
    assert ref[2].shape == (n, TINY["d_out"])
    assert ref[1].abs().sum() > 0  # a real gradient, not zeros
    for r, g in zip(ref, got, strict=True):
        assert g.shape == r.shape
        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-6)


def test_models_are_independent() -> None:
    """Model i's output is linear(x[i], W[i], b[i]): a layout bug (a wrong permute,
    groups mixed up) would give another model's weights or input."""
    weight, bias = initial_weights(4, TINY["d_in"], TINY["d_out"], seed=3)
    assert not torch.equal(weight[1], weight[0])  # the models really differ
    # outputs() draws its fixed input from a generator seeded with seed + 1
    x = torch.randn(4, TINY["batch"], TINY["d_in"], generator=torch.Generator().manual_seed(4))
    for name in STRATEGIES:
        out = _build(name, 4).outputs()[0]
        for i in range(4):
            expected = torch.nn.functional.linear(x[i], weight[i], bias[i])
            torch.testing.assert_close(out[i], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_amp_twin_matches_within_bf16_tolerance(name: str) -> None:
    ref = _build("linear", 4, seq_len=3).outputs()
    got = _build(name, 4, seq_len=3, amp="bfloat16").outputs()
    assert got[0].dtype == torch.float32
    for r, g in zip(ref, got, strict=True):
        torch.testing.assert_close(g, r, rtol=3e-2, atol=3e-2)
    # bf16 really was used: the forward output is not the fp32 one bit for bit
    assert not torch.equal(got[0], ref[0])


def test_training_steps_stay_in_lockstep() -> None:
    """Same data, same weights, same optimizer: after a few steps every strategy has
    the same gradients (the last step's), so step() trains identically everywhere."""
    grads = {}
    for name in STRATEGIES:
        w = _build(name, 3, seq_len=2)
        for _ in range(3):
            w.step()
        grads[name] = w.net.per_model_grads()
        w.close()
    for name, (gw, gb) in grads.items():
        torch.testing.assert_close(gw, grads["linear"][0], rtol=1e-4, atol=1e-5, msg=name)
        torch.testing.assert_close(gb, grads["linear"][1], rtol=1e-4, atol=1e-5, msg=name)


def test_outputs_do_not_disturb_training_state() -> None:
    w = _build("gconv1d", 2)
    before = [p.detach().clone() for p in w.net.parameters()]
    first = w.outputs()
    assert all(p.grad is None for p in w.net.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, w.net.parameters(), strict=True))
    w.step()
    assert not all(torch.equal(a, b) for a, b in zip(before, w.net.parameters(), strict=True))
    again = w.outputs()  # still from the initial weights
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))


def test_phases_are_the_five_named_ones_and_marked_in_the_profile() -> None:
    w = _build("bmm", 2)
    assert [name for name, _ in w.phases()] == list(PHASES)
    assert list(PHASES) == ["data", "zero_grad", "forward", "backward", "optimizer"]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _name, run_phase in w.phases():
            run_phase()
    names = {e.key for e in prof.key_averages()}
    assert set(PHASES) <= names


def test_data_is_drawn_on_the_device_each_step() -> None:
    w = _build("linear", 2, seq_len=3)
    data = dict(w.phases())["data"]
    data()
    x1 = w._x
    data()
    assert x1 is not None and w._x is not None
    assert x1.shape == (2, TINY["batch"], 3, TINY["d_in"]) and x1.device == w.device
    assert not torch.equal(x1, w._x)  # fresh samples every step


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_info_has_param_count_and_build_time(name: str) -> None:
    n = 5
    w = _build(name, n)
    assert w.info["param_count"] == n * (TINY["d_in"] * TINY["d_out"] + TINY["d_out"])
    assert sum(p.numel() for g in w.optimizer.param_groups for p in g["params"]) == (
        w.info["param_count"])
    assert isinstance(w.info["build_time_ns"], int) and w.info["build_time_ns"] > 0
    assert w.items_per_step == n * TINY["batch"]
    assert w.devices == [torch.device("cpu")]


def test_bad_sizes_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--n-model"):
        _build("linear", 0)
    with pytest.raises(UsageError, match="--seq-len"):
        _build("linear", 1, seq_len=-1)
    with pytest.raises(UsageError, match="unknown strategy"):
        SCENARIO.build(Strategy("nope", ""), RunConfig(params=_params(1), device="cpu"))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_cuda_matches_linear_and_trains_with_float16(name: str) -> None:
    def on_cuda(strategy_name: str, amp: str | None = None):
        strategy = STRATEGIES[strategy_name]
        strategy = strategy.amp_twin() if amp else strategy
        config = RunConfig(params=_params(4, 3), device="cuda", amp_dtype=amp, seed=3)
        return SCENARIO.build(strategy, config)

    ref = on_cuda("linear").outputs()
    for r, g in zip(ref, on_cuda(name).outputs(), strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)
    amp = on_cuda(name, "float16")
    assert amp.scaler.is_enabled()  # float16 needs the gradient scaler
    for r, g in zip(ref, amp.outputs(), strict=True):
        torch.testing.assert_close(g, r, rtol=3e-2, atol=3e-2)
    for _ in range(3):
        amp.step()
    torch.cuda.synchronize()
    assert all(torch.isfinite(p).all() for p in amp.net.parameters())


def test_bad_n_model_on_the_command_line_is_one_line_and_exit_2(capsys) -> None:
    from profiler_kit.cli import main

    assert main(["run", "multimodel", "--device", "cpu", "--n-model", "0"]) == 2
    err = capsys.readouterr().err
    assert "--n-model" in err and "Traceback" not in err


# -- end to end: `profkit run multimodel` on the CPU ---------------------------------

E2E = {"d_in": 16, "d_out": 32, "batch": 8}


@pytest.mark.slow
def test_profkit_run_sweep_end_to_end(tmp_path, capsys, monkeypatch) -> None:
    from profiler_kit.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # whole table titles and cells

    status = main([
        "run", "multimodel", "--device", "cpu", "--n-model", "1,4",
        "--d-in", str(E2E["d_in"]), "--d-out", str(E2E["d_out"]), "--batch", str(E2E["batch"]),
        "--iterations", "5", "--warmup", "1",
        "--profile-wait", "0", "--profile-warmup", "1", "--profile-active", "2",
        "--out", str(tmp_path),
    ])
    printed = capsys.readouterr().out
    assert status == 0, printed
    (run_dir,) = (tmp_path / "multimodel").iterdir()
    run = json.loads((run_dir / "run.json").read_text())
    results = {(r["point"], r["name"]): r for r in run["strategies"]}
    expected = {(f"n_model={n}", s) for n in (1, 4) for s in STRATEGIES}
    assert set(results) == expected
    for (point, name), r in results.items():
        n = int(point.split("=")[1])
        assert r["status"] == "ok", (point, name, r.get("error"))
        assert r["equivalence"]["ok"]
        # one TensorBoard run per (N, strategy): its own folder with its own trace
        folder = run_dir / point / name
        assert r["dir"] == f"{point}/{name}"
        assert list(folder.glob("*.pt.trace.json")), folder
        assert all(f.startswith(f"{point}/{name}/") for f in r["trace_files"])
        # the five phases, timed; together they are the step
        assert list(r["phases"]) == list(PHASES)
        step = r["stats"]
        phase_means = sum(p["mean_ns"] for p in r["phases"].values())
        assert phase_means == pytest.approx(step["mean_ns"], rel=1e-6)
        # (medians need not add up: with 5 samples on a busy machine they can be far apart,
        # so the test holds the phases to the means, which add exactly)
        assert all(p["median_ns"] > 0 for p in r["phases"].values())
        # memory in bytes, plausible against what one step must hold
        peak = r["peak_memory"]["cpu"]["allocated_bytes"]
        assert isinstance(peak, int)
        param_bytes = 4 * r["info"]["param_count"]
        x_bytes, y_bytes = (4 * n * E2E["batch"] * E2E[d] for d in ("d_in", "d_out"))
        # backward holds the weight gradients and the output at once...
        assert peak >= param_bytes + y_bytes, (point, name, peak)
        # ...and nothing like ten copies of everything
        assert peak <= 4 * (param_bytes + x_bytes + 2 * y_bytes) + 256 * 1024, (point, name, peak)
        assert r["info"]["param_count"] == n * (E2E["d_in"] * E2E["d_out"] + E2E["d_out"])
        assert r["info"]["build_time_ns"] > 0
    assert run["sweep"] == ["n_model"]
    # one table per N, titled with its point; phases and build time shown beside them
    assert "[n_model=1]" in printed and "[n_model=4]" in printed
    assert printed.count("Median time per phase") == 2
    assert "Median step time across the sweep" in printed
    summary = (run_dir / "summary.md").read_text()
    assert "## n_model=4" in summary and "| strategy | data | zero_grad |" in summary
