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
from profiler_kit.render.console import tune as tune_console
from profiler_kit.scenarios import tune, tune_stack

DATA = Path(__file__).parents[1] / "data" / "tune"
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
    assert cl.speedup > 1.5
    # beside other work that differed between the two, not judged (and never a winner)
    assert is_winner(cl) or (cl.noise.doubt and cl.noise.beyond_noise is None), cl.noise
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
    result = _run("cancels.py", ["tf32", "cudnn_benchmark", "autocast_bf16"],
                  tmp_path, MeasureOptions(iterations=2, warmup=1, repeats=1, profile_active=1))
    skipped = {s.name: s.reason for s in result.strategies if s.status == "skipped"}
    assert set(skipped) == {"tf32", "cudnn_benchmark", "autocast_bf16"}
    assert all("CUDA" in r for r in skipped.values())


def test_a_file_without_the_functions_is_one_line(capsys) -> None:
    with pytest.raises(UsageError, match="defines no inputs"):
        tune.load_user_model(str(DATA / "no_inputs.py"))
    assert main(["tune", str(DATA / "no_inputs.py")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "inputs" in err


@pytest.mark.parametrize("flags", [["--batch-sizes", "4,x"], ["--max-batch-size", "0"]])
def test_bad_sweep_sizes_are_one_line_before_anything_runs(flags, tmp_path, capsys) -> None:
    assert main(["tune", str(DATA / "cancels.py"), *flags, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and flags[0] in err
    assert not (tmp_path / "tune").exists()


def test_the_command_prints_the_recommended_settings(tmp_path, capsys) -> None:
    status = main(["tune", str(DATA / "slow_contiguous.py"), "--device", "cpu",
                   "--knobs", "channels_last", "--repeats", "1", "--iterations", "6",
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    # the answer first, as profkit run prints its Answer: line, then the table behind it
    assert out.index("Recommended") < out.index("Knobs, ranked") < out.index("results: ")
    if "Busy machine: " in out and "not judged" in out:  # judged beside other work: no
        assert "Recommended: keep float32 eager" in out  # recommendation from it
        return
    assert "Recommended settings (channels_last, " in out
    assert "model = model.to(memory_format=torch.channels_last)" in out
    assert out.index("model = model.to(") < out.index("Knobs, ranked")


def test_a_rejected_knob_is_an_answer_not_a_failed_command(tmp_path, capsys) -> None:
    """autocast changes the results of the cancelling model: it is listed as rejected
    with its reason and the command still ends with 0, as the baseline ran."""
    status = main(["tune", str(DATA / "cancels.py"), "--device", "cpu", "--knobs", "autocast",
                   "--repeats", "1", "--iterations", "3", "--no-batch-sweep",
                   "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    run = json.loads(next(tmp_path.glob("tune/*/run.json")).read_text())
    autocast = next(s for s in run["strategies"] if s["name"] == "autocast")
    assert autocast["status"] == "failed" and "autocast" in out
    assert "Recommended: keep float32 eager" in out
    assert out.index("Recommended: keep float32 eager") < out.index("Knobs, ranked")


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_tf32_and_cudnn_benchmark_run_and_restore_the_flags_on_cuda(tmp_path) -> None:
    import torch

    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark)
    scenario = tune.TuneScenario(tune.load_user_model(str(DATA / "slow_contiguous.py")))
    result = api.run(scenario, {"batch_size": 4}, device="cuda",
                     strategies=[tune.BASELINE, "tf32", "cudnn_benchmark", "autocast",
                                 "autocast_bf16"],
                     options=FAST, out=tmp_path)
    assert all(s.status == "ok" for s in result.strategies)
    amp = {s.name: s.amp_dtype for s in result.strategies if s.amp}
    assert amp == {"autocast": "float16", "autocast_bf16": "bfloat16"}
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.benchmark) == before


# ---------------------------------------------------------------- greedy stacking


def test_two_winning_knobs_are_stacked_and_the_stack_is_recommended(tmp_path) -> None:
    result = _run("two_slow_paths.py", ["autocast", "channels_last"], tmp_path, WITHIN)
    by = {s.name: s for s in result.strategies}
    doubted = [n for n in ("channels_last", "autocast") if by[n].noise.doubt]
    if doubted:  # beside other work: not judged, never a winner, nothing stacked on it
        assert not any(is_winner(by[n]) for n in doubted)
        assert "channels_last+autocast" not in by
        return
    assert set(by) == {tune.BASELINE, "autocast", "channels_last", "channels_last+autocast"}
    stack = by["channels_last+autocast"]
    # the stack ran under the runner's rules: checked against the baseline, then timed
    assert stack.status == "ok" and stack.equivalence.checked and stack.equivalence.ok
    assert stack.info["knob"] == "channels_last+autocast" and stack.amp_dtype == "bfloat16"
    # channels_last saves 0.15 s a step and autocast 0.1 s (the model's own sleeps): the
    # best single knob is channels_last, and the stack is faster than it by far
    assert tune_stack.single_winners(result.strategies, tune.BASELINE)[0].name == "channels_last"
    assert stack.stats.median_ns * 5 < by["channels_last"].stats.median_ns
    best, pending, notes = tune_stack.walk(result.strategies, tune.BASELINE)
    if tune_stack.faster_than(stack, by["channels_last"]).doubt:
        # timed after channels_last, beside different work: not judged, so not kept
        assert best.name == "channels_last" and pending is None
        assert notes[0].startswith("channels_last+autocast: dropped, not judged")
        return
    assert best.name == "channels_last+autocast" and pending is None
    assert notes == ["channels_last+autocast: kept, faster than channels_last beyond noise"]
    code = tune.snippet([best.name])
    assert "channels_last" in code and "torch.autocast" in code
    assert code.index("channels_last") < code.index("autocast")
    assert not any("+" in s.name and s.name != best.name for s in result.strategies)


def test_a_stack_that_saves_nothing_more_is_dropped(tmp_path) -> None:
    result = _run("one_slow_path.py", ["channels_last", "autocast"], tmp_path, WITHIN)
    by = {s.name: s for s in result.strategies}
    doubted = [n for n in ("channels_last", "autocast") if by[n].noise.doubt]
    if doubted:  # beside other work: not judged, never a winner, nothing stacked on it
        assert not any(is_winner(by[n]) for n in doubted)
        return
    assert is_winner(by["channels_last"]) and is_winner(by["autocast"])
    best, pending, notes = tune_stack.walk(result.strategies, tune.BASELINE)
    assert best.name in ("channels_last", "autocast") and pending is None  # never the stack
    stack_name = f"{best.name}+" + ({"channels_last", "autocast"} - {best.name}).pop()
    assert stack_name in by and by[stack_name].status == "ok"  # measured, then dropped
    # not faster; or, beside other work that differed between the two, not judged
    assert len(notes) == 1 and notes[0].startswith(
        (f"{stack_name}: dropped, not faster", f"{stack_name}: dropped, not judged"))
    # the independent check, from the model's own sleeps: the best knob's steps already
    # skip the 0.2 s wait and the stack's still wait the 0.05 s floor, so the stack had
    # nothing more to save. (Not the two's fastest steps against each other: beside other
    # work the best knob's fastest step was once 12 % above the floor and the stack's not.)
    floor_ns, slow_ns = 0.05e9, 0.2e9
    assert by[best.name].stats.min_ns < floor_ns + slow_ns
    assert by[stack_name].stats.min_ns >= floor_ns


def test_a_stack_measured_while_the_machine_got_quieter_is_not_judged_faster() -> None:
    """A stack is timed after its knobs, not in turns with them: when other work took a
    core while the best knob ran and none while the stack ran, the stack's 20 % shorter
    steps are the machine's, so it is not judged faster (and not kept); with the same
    quiet on both sides the same steps are faster beyond noise."""
    from types import SimpleNamespace

    from profiler_kit.contention import RoundContention

    busy = RoundContention(wall_s=1.0, cores=2, others_cores=1.0, own_threads=1)
    quiet = RoundContention(wall_s=1.0, cores=2, others_cores=0.02, own_threads=1)
    rounds = lambda ms: tuple(tuple(int((ms + 0.1 * i + r) * 1e6) for i in range(10))  # noqa: E731
                              for r in range(3))

    def result(name, ms, contention):
        return SimpleNamespace(name=name, status="ok", equivalence=None, stats=True,
                               repeat_samples_ns=rounds(ms), samples_ns=rounds(ms)[0],
                               contention=(contention,) * 3)

    best = result("channels_last", 100.0, busy)
    stack = result("channels_last+autocast", 80.0, quiet)
    v = tune_stack.faster_than(stack, best)
    assert v.doubt == "contended" and not tune_stack._beats(stack, best)
    assert tune_stack._why_not(stack, best).startswith("not judged")
    calm = result("channels_last", 100.0, quiet)
    assert tune_stack._beats(stack, calm)


def test_the_greedy_search_never_stacks_two_compile_modes() -> None:
    assert not tune_stack._compatible("channels_last+compile", "compile_max_autotune")
    assert not tune_stack._compatible("compile_reduce_overhead", "cuda_graphs")
    assert tune_stack._compatible("compile", "channels_last")
    # one autocast dtype at a time; a stack keeps the dtype its knob names
    assert not tune_stack._compatible("channels_last+autocast", "autocast_bf16")
    assert tune.stacked("channels_last+autocast_bf16").options == {"amp_dtype": "bfloat16"}
    strategy = tune.stacked("channels_last+autocast+tf32")
    assert strategy.amp and strategy.requires == ("cuda",) and strategy.opt_in is None


def test_no_stack_runs_each_knob_alone_only(tmp_path) -> None:
    scenario = tune.TuneScenario(tune.load_user_model(str(DATA / "two_slow_paths.py")),
                                 stack=False)
    result = api.run(scenario, {"batch_size": 4}, device="cpu",
                     strategies=[tune.BASELINE, "autocast", "channels_last"], options=WITHIN,
                     out=tmp_path)
    assert [s.name for s in result.strategies] == [tune.BASELINE, "autocast", "channels_last"]


# ---------------------------------------------------------------- threads and recompiles


def test_the_threads_knob_sets_the_intra_op_threads_and_restores_them(tmp_path) -> None:
    import os

    import torch

    before = torch.get_num_threads()
    result = _run("cancels.py", ["threads"], tmp_path, FAST)
    threads = {s.name: s for s in result.strategies}["threads"]
    assert torch.get_num_threads() == before
    if threads.status == "skipped":  # a one-CPU machine has no other count to try
        assert (os.cpu_count() or 1) == 1 and before == 1
        return
    logical = os.cpu_count() or 1
    expected = logical if logical > before else max(1, before // 2)
    assert threads.status == "ok" and threads.info["threads"] == expected != before
    assert f"torch.set_num_threads({expected})" in tune.snippet(["threads"])


def test_recompilations_are_counted_next_to_graph_breaks(tmp_path) -> None:
    options = MeasureOptions(iterations=2, warmup=1, repeats=1, profile_active=1)
    steady = _run("cancels.py", ["compile"], tmp_path / "steady", options)
    varying = _run("recompiles.py", ["compile"], tmp_path / "varying", options)
    steady_c = {s.name: s for s in steady.strategies}["compile"]
    varying_c = {s.name: s for s in varying.strategies}["compile"]
    if "failed" in (steady_c.status, varying_c.status):  # no C++ compiler here
        return
    assert steady_c.info["recompilations"] == 0 and steady_c.info["graph_breaks"] == 0
    # the model branches on a count of its calls, so the timed steps compile again
    assert varying_c.info["recompilations"] >= 1
    assert varying_c.equivalence.ok  # the branch does not change the result
    table = _text(tune_console.ranked_table(varying, None))
    assert f"{varying_c.info['compile_s']:.1f} s" in table
    assert f"0 / {varying_c.info['recompilations']}" in table


def _text(renderable) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


def test_the_ranked_table_orders_by_throughput_and_never_ranks_a_rejected_knob(
        tmp_path) -> None:
    result = _run("cancels.py", ["autocast", "threads"], tmp_path, FAST)
    ranked = tune_console.ranked(result.at(""))
    assert "autocast" not in [s.name for s in ranked]  # its results change
    rates = [s.throughput_items_per_s for s in ranked]
    assert rates == sorted(rates, reverse=True)
    for s in ranked:  # throughput is the items per step over the median step
        assert s.throughput_items_per_s == pytest.approx(4 / (s.stats.median_ns / 1e9))
    lines = _text(tune_console.ranked_table(result, None)).splitlines()
    rows = [next(i for i, line in enumerate(lines) if f" {s.name} " in line) for s in ranked]
    assert rows == sorted(rows)
    assert any("autocast" in line and "rejected: results change" in line for line in lines)


# ---------------------------------------------------------------- batch-size sweep


def test_an_out_of_memory_past_a_size_is_a_result_of_the_sweep(tmp_path) -> None:
    from profiler_kit.scenarios import tune_batch

    user = tune.load_user_model(str(DATA / "oom_past_16.py"))
    sizes = tune_batch.doubling(4, 64)
    assert sizes == [4, 8, 16, 32, 64]
    points = tune_batch.sweep(user, tune.BASELINE, sizes, "cpu", None,
                              MeasureOptions(iterations=3, warmup=1, repeats=1), tmp_path)
    assert [(p.batch_size, p.status) for p in points] == [
        (4, "ok"), (8, "ok"), (16, "ok"), (32, "out of memory"), (64, "not run")]
    assert "OutOfMemoryError" in points[3].detail and "\n" not in points[3].detail
    for p in points[:3]:
        # every step waits 20 ms (the model's sleep): the throughput is at most size / 20 ms,
        # and is the size over the median step
        assert p.median_ns >= 20e6
        assert p.items_per_s == pytest.approx(p.batch_size / (p.median_ns / 1e9))


def test_a_cpu_allocation_failure_is_an_out_of_memory_too(tmp_path) -> None:
    from profiler_kit.scenarios import tune_batch

    user = tune.load_user_model(str(DATA / "allocates_past_16.py"))
    points = tune_batch.sweep(user, tune.BASELINE, [16, 32], "cpu", None,
                              MeasureOptions(iterations=2, warmup=1, repeats=1), tmp_path)
    assert [p.status for p in points] == ["ok", "out of memory"]
    assert "can't allocate memory" in points[1].detail


def test_the_sweep_stops_at_its_deadline_and_leaves_out_compile(tmp_path) -> None:
    from profiler_kit.scenarios import tune_batch

    assert tune_batch.sweep_knobs("channels_last+compile+autocast") == "channels_last+autocast"
    assert tune_batch.sweep_knobs("compile") == tune.BASELINE
    user = tune.load_user_model(str(DATA / "oom_past_16.py"))
    points = tune_batch.sweep(user, tune.BASELINE, [1, 2, 4], "cpu", None,
                              MeasureOptions(iterations=2, warmup=0, repeats=1),
                              tmp_path, deadline_s=0.0)
    assert [p.status for p in points] == ["ok", "not run", "not run"]
    assert "0 s were spent" in points[1].detail


def _points(peaks_mib: dict[int, float | None], oom: int | None = None) -> list:
    from profiler_kit.scenarios import tune_batch

    mib = 2**20
    out = [tune_batch.BatchPoint(b, tune_batch.OK, 1, 1.0,
                                 None if p is None else round(p * mib))
           for b, p in peaks_mib.items()]
    if oom is not None:
        out.append(tune_batch.BatchPoint(oom, tune_batch.OUT_OF_MEMORY))
    return out


def test_the_sweep_checks_the_memory_fit_of_its_first_two_sizes() -> None:
    """The peaks of a CUDA sweep (figures made here: 100 MiB + 2 MiB per item): the line
    through 8 and 16 items predicts 32 and 64, and the largest batch for 300 MiB is 100,
    between the 64 that ran and the 128 that ran out of memory."""
    from profiler_kit.scenarios import tune_batch

    mib = 2**20
    linear = {b: 100 + 2 * b for b in (8, 16, 32, 64)}
    check = tune_batch.check_fit(_points(linear, oom=128), 300 * mib)
    assert check is not None and check.fitted_on == (8, 16)
    assert (check.bytes_per_item, check.fixed_bytes) == (2 * mib, 100 * mib)
    assert check.predicted_peak_bytes == {32: 164 * mib, 64: 228 * mib}
    assert check.predicted_largest == 100 and check.first_out_of_memory == 128
    assert check.holds is True
    line = tune_console.fit_check_line(check)
    assert "2 MiB per item + 100 MiB" in line and "largest batch for 300 MiB: 100" in line
    assert "; held: every later peak within 10%" in line

    # a peak 25 % over the line at 64 items, and an out-of-memory the line did not foresee
    bent = tune_batch.check_fit(_points({**linear, 64: 285}, oom=128), 600 * mib)
    assert bent is not None and bent.holds is False and bent.predicted_largest == 250
    assert "64 items: predicted" in bent.why
    assert "128 items ran out of memory, within the predicted largest batch 250" in bent.why
    # two sizes only: a line, nothing to check it with
    two = tune_batch.check_fit(_points({8: 116, 16: 132}), None)
    assert two is not None and two.holds is None and two.predicted_largest is None
    # the CPU reports no peaks
    assert tune_batch.check_fit(_points({8: None, 16: None, 32: None}), None) is None
    assert "not checked" in tune_console.fit_check_line(None)


def test_the_command_stacks_sweeps_and_writes_tune_json(tmp_path, capsys) -> None:
    status = main(["tune", str(DATA / "oom_past_16.py"), "--device", "cpu", "--knobs",
                   "threads", "--repeats", "1", "--iterations", "5", "--batch-size", "8",
                   "--max-batch-size", "64", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    assert "Knobs, ranked" in out and "Batch size sweep" in out and "out of memory" in out
    (run_dir,) = (tmp_path / "tune").iterdir()
    answer = json.loads((run_dir / "tune.json").read_text())
    sweep = answer["batch_sweep"]["points"]
    assert [(p["batch_size"], p["status"]) for p in sweep] == [
        (8, "ok"), (16, "ok"), (32, "out of memory"), (64, "not run")]
    assert answer["batch_sweep"]["fit_check"] is None  # the CPU reports no peaks
    assert "memory fit: not checked" in out
    run = json.loads((run_dir / "run.json").read_text())
    assert answer["recommended"] in (None, *[s["name"] for s in run["strategies"]])


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_cuda_graphs_replay_the_baselines_results_on_cuda(tmp_path) -> None:
    for name in ("cancels.py", "slow_contiguous.py"):  # inference, and a training step
        scenario = tune.TuneScenario(tune.load_user_model(str(DATA / name)), stack=False)
        result = api.run(scenario, {"batch_size": 4}, device="cuda",
                         strategies=[tune.BASELINE, "cuda_graphs"], options=FAST,
                         out=tmp_path / name)
        graphs = {s.name: s for s in result.strategies}["cuda_graphs"]
        assert graphs.status == "ok" and graphs.equivalence.ok, (name, graphs.error)
