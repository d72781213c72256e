"""The runner: measure() passes and files, and run() with failures, skips, Ctrl-C, sweeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from profiler_kit.errors import UsageError
from profiler_kit.measure import runner
from profiler_kit.measure.passes import MeasureOptions, measure
from profiler_kit.measure.runner import RunRequest
from profiler_kit.results import read_run
from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload, from_file
from profiler_kit.util import artifacts

HERE = Path(__file__).parents[1]
TINY = MeasureOptions(repeats=1, iterations=3, warmup=1, profile_wait=0, profile_warmup=1,
                      profile_active=2)


class MatmulWorkload(Workload):
    def __init__(self, n: int) -> None:
        torch.manual_seed(0)
        self.a = torch.randn(n, n)
        self.devices = [torch.device("cpu")]
        self.items_per_step = n
        self.info = {"n": n}

    def step(self) -> None:
        with torch.profiler.record_function("forward"):
            self.out = torch.relu(self.a @ self.a)

    def outputs(self) -> list[torch.Tensor]:
        return [torch.relu(self.a @ self.a)]

    def close(self) -> None:
        pass


class Sweep(Scenario):
    name = "sweep"
    description = "matmul at several sizes"
    params = (Param("n", int, 16, "matrix size", sweep=True, min_value=1),
              Param("scale", float, 1.0, "unused"))
    strategies = (Strategy("plain", "a @ a"), Strategy("again", "a @ a again"))
    baseline = "plain"
    supports_amp = False

    def build(self, strategy: Strategy, config: RunConfig) -> MatmulWorkload:
        return MatmulWorkload(config.params["n"])


def test_measure_times_then_profiles_and_writes_traces_and_key_averages(tmp_path) -> None:
    m = measure(MatmulWorkload(32), TINY, tmp_path / "plain", "main")
    assert len(m.samples_ns) == 3 and all(s > 0 for s in m.samples_ns)
    assert len(m.profiled_samples_ns) == 2  # the active steps only
    assert m.items_per_step == 32 and m.info == {"n": 32}
    assert len(m.trace_files) == 1 and m.trace_files[0].endswith(".pt.trace.json")
    trace = json.loads(Path(m.trace_files[0]).read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert "forward" in names and any(str(n).startswith("ProfilerStep#") for n in names)
    assert "allocated_bytes" in m.peak_memory["cpu"]
    assert m.peak_memory["cpu"]["allocated_bytes"] >= 32 * 32 * 4  # the product it allocates
    rows = json.loads((tmp_path / "plain" / "key_averages.json").read_text())
    mm = next(r for r in rows if r["name"] in ("aten::mm", "aten::matmul"))
    assert mm["count"] == 2 and mm["self_cpu_time_ns"] >= 0
    assert {"self_cpu_time_ns", "cpu_time_total_ns", "device_time_total_ns",
            "cpu_memory_bytes"} <= set(mm)
    assert "Self CPU" in (tmp_path / "plain" / "key_averages.txt").read_text()


def test_measure_gzip_and_rank_worker_names(tmp_path) -> None:
    m = measure(MatmulWorkload(8), MeasureOptions(repeats=1, iterations=1, warmup=0, profile_wait=0,
                                                  profile_warmup=1, profile_active=1,
                                                  gzip=True), tmp_path, "rank1")
    assert m.trace_files[0].endswith(".pt.trace.json.gz")
    assert Path(m.trace_files[0]).name.startswith("rank1")
    assert (tmp_path / "key_averages.rank1.json").is_file()


def test_failing_and_wrong_strategies_are_recorded_and_the_others_run(tmp_path) -> None:
    result = runner.run(RunRequest(from_file(HERE / "user_scenarios" / "failing.py"), {},
                                   device="cpu", options=TINY, out=tmp_path))
    by_name = {s.name: s for s in result.strategies}
    assert [s.name for s in result.strategies] == ["base", "broken", "wrong", "after",
                                                   "gpu_only"] or torch.cuda.is_available()
    assert by_name["base"].status == "ok" and by_name["after"].status == "ok"
    assert by_name["broken"].status == "failed"
    assert by_name["broken"].error.startswith("RuntimeError: CUDA out of memory")
    assert by_name["wrong"].status == "failed"
    assert "does not compute what 'base' computes" in by_name["wrong"].error
    assert result.exit_status == 1
    doc = json.loads((result.run_dir / artifacts.RUN_JSON).read_text())
    assert doc["schema"] == artifacts.RUN_SCHEMA and doc["interrupted"] is False
    assert {f["name"] for f in doc["failed"]} == {"broken", "wrong"}
    if not torch.cuda.is_available():
        assert doc["skipped"] == [{"name": "gpu_only", "point": "",
                                   "reason": "needs CUDA; this machine has none"}]
    assert by_name["after"].speedup is not None
    assert read_run(result.run_dir).strategies[0].stats.n == 3


def test_ctrl_c_keeps_what_finished_and_records_the_interruption(tmp_path) -> None:
    result = runner.run(RunRequest(from_file(HERE / "user_scenarios" / "interrupted.py"), {},
                        device="cpu", options=TINY, out=tmp_path))
    assert result.interrupted and result.exit_status == 130
    recorded = read_run(result.run_dir)
    assert recorded.interrupted is True and recorded.finished_at
    assert [(s.name, s.status) for s in recorded.strategies] == [
        ("first", "ok"), ("ctrl_c", "interrupted")]
    assert (result.run_dir / "first" / "key_averages.json").is_file()


def test_sweep_points_get_their_own_folders(tmp_path) -> None:
    result = runner.run(RunRequest(Sweep(), {"n": "4,8"}, device="cpu", options=TINY, out=tmp_path))
    assert [s.label for s in result.strategies] == ["n=4/plain", "n=4/again", "n=8/plain",
                                                    "n=8/again"]
    assert all(s.status == "ok" for s in result.strategies)
    assert (result.run_dir / "n=8" / "again" / "key_averages.json").is_file()
    assert result.strategies[2].items_per_step == 8
    recorded = read_run(result.run_dir)
    assert recorded.sweep == ("n",) and recorded.points == ({"n": 4}, {"n": 8})
    assert recorded.params["n"] == [4, 8]
    assert recorded.strategies == result.strategies  # params hold the sweep as a list


def test_a_new_run_never_reuses_a_folder(tmp_path) -> None:
    made = {artifacts.new_run_dir(tmp_path, "x") for _ in range(20)}
    assert len(made) == 20


def test_bad_input_is_refused_before_anything_runs(tmp_path) -> None:
    scenario = Sweep()
    with pytest.raises(UsageError, match="no parameter --bogus"):
        runner.run(RunRequest(scenario, {"bogus": 1}, device="cpu", out=tmp_path))
    with pytest.raises(UsageError, match="at least 1, got 0"):
        runner.run(RunRequest(scenario, {"n": "4,0"}, device="cpu", out=tmp_path))
    with pytest.raises(UsageError, match="--scale: expected float"):
        runner.run(RunRequest(scenario, {"scale": "big"}, device="cpu", out=tmp_path))
    with pytest.raises(UsageError, match="--iterations must be at least 1"):
        runner.run(RunRequest(scenario, {}, device="cpu", out=tmp_path,
                   options=MeasureOptions(repeats=1, iterations=-1)))
    with pytest.raises(UsageError, match="no strategy 'nope'"):
        runner.run(RunRequest(scenario, {}, device="cpu", out=tmp_path, strategies=["nope"]))
    with pytest.raises(UsageError, match="no AMP variants"):
        runner.run(RunRequest(scenario, {}, device="cpu", out=tmp_path, amp=True))
    assert not any(tmp_path.iterdir())


def test_strategy_selection_opt_in_and_amp_twins() -> None:
    from profiler_kit.scenario import builtin

    concurrent = builtin("concurrent")
    params = {"models": "resnet18,resnet18"}
    names = [s.name for s in runner.select_strategies(concurrent, params, amp=True)]
    assert names == ["sequential", "sequential+amp", "threads", "threads+amp", "devices",
                     "devices+amp"]
    names = [s.name for s in runner.select_strategies(concurrent, params, opt_in=["streams"])]
    assert names == ["sequential", "threads", "streams", "devices"]
    picked = runner.select_strategies(concurrent, params, names=["threads+amp", "sequential"])
    assert [s.name for s in picked] == ["sequential", "threads+amp"]


def test_a_subset_without_the_baseline_is_still_checked_against_it(tmp_path) -> None:
    result = runner.run(RunRequest(from_file(HERE / "user_scenarios" / "failing.py"), {},
                                   device="cpu", options=TINY, out=tmp_path,
                                   strategies=["wrong", "after"]))
    by_name = {s.name: s for s in result.strategies}
    assert list(by_name) == ["wrong", "after"]
    assert by_name["wrong"].status == "failed" and by_name["wrong"].equivalence.checked
    assert by_name["after"].status == "ok" and by_name["after"].equivalence.ok
    assert by_name["after"].equivalence.criterion == "allclose"
    assert by_name["after"].speedup is None  # no baseline time in this run


def test_repeats_measure_each_strategy_in_rounds_and_profile_once(tmp_path) -> None:
    """--repeats 3: every strategy is built and timed three times, rounds taking turns;
    the statistics pool the rounds, each round's samples are kept apart in run.json,
    speedups follow the pooled throughput, and only the first round leaves traces."""
    from dataclasses import replace

    from profiler_kit import results
    from profiler_kit.scenario import RunConfig as _RunConfig

    order: list[str] = []

    class Counted(Sweep):
        def build(self, strategy: Strategy, config: _RunConfig) -> MatmulWorkload:
            order.append(strategy.name)
            return super().build(strategy, config)

    options = replace(TINY, repeats=3)
    result = runner.run(RunRequest(Counted(), {"n": "8"}, device="cpu", options=options,
                                   out=tmp_path))
    assert order == ["plain", "again"] * 3, "one fresh workload per round, rounds take turns"
    for s in result.strategies:
        assert s.status == "ok", s.error
        assert [len(r) for r in s.repeat_samples_ns] == [3, 3, 3]
        assert s.samples_ns == tuple(v for r in s.repeat_samples_ns for v in r)
        assert s.stats == results.stats(s.samples_ns)
        assert s.throughput_items_per_s == pytest.approx(8e9 / s.stats.median_ns)
        assert len(s.trace_files) == 1
        assert len(list((result.run_dir / s.dir).glob("*.pt.trace.json"))) == 1
    plain, again = result.strategies
    assert again.speedup == pytest.approx(again.throughput_items_per_s
                                          / plain.throughput_items_per_s)
    assert read_run(result.run_dir).strategies == result.strategies
    assert result.options["repeats"] == 3
    with pytest.raises(UsageError, match="--repeats must be at least 1"):
        runner.run(RunRequest(Counted(), {}, device="cpu", out=tmp_path,
                              options=replace(TINY, repeats=0)))


class AmpDtypes(Sweep):
    """An AMP strategy in the device's dtype and one that names its own."""
    strategies = (Strategy("plain", "a @ a"), Strategy("amp", "device dtype", amp=True),
                  Strategy("amp_fp16", "float16", amp=True, options={"amp_dtype": "float16"}))

    def build(self, strategy: Strategy, config: RunConfig) -> MatmulWorkload:
        workload = MatmulWorkload(config.params["n"])
        workload.info = {"amp_dtype": config.amp_dtype}
        return workload


def test_a_strategy_may_name_its_amp_dtype(tmp_path) -> None:
    result = runner.run(RunRequest(AmpDtypes(), {"n": "4"}, device="cpu", options=TINY,
                                   out=tmp_path))
    dtypes = {s.name: s.info["amp_dtype"] for s in result.strategies}
    assert dtypes == {"plain": None, "amp": "bfloat16", "amp_fp16": "float16"}


def test_each_strategy_is_built_after_the_garbage_of_the_last(tmp_path) -> None:
    """A workload in a reference cycle outlives its strategy until the collector runs; on
    CUDA its tensors then count in the next strategy's allocator peak. The runner collects
    before it builds each strategy."""
    import gc
    import weakref

    built: list[weakref.ref] = []
    alive_at_build: list[int] = []

    class Cyclic(MatmulWorkload):
        def __init__(self, n: int) -> None:
            super().__init__(n)
            alive_at_build.append(sum(r() is not None for r in built))
            built.append(weakref.ref(self))
            self.me = self  # a cycle, as a model's modules and hooks make

    class CyclicSweep(Sweep):
        def build(self, strategy: Strategy, config: RunConfig) -> MatmulWorkload:
            return Cyclic(config.params["n"])

    gc.disable()
    try:
        runner.run(RunRequest(CyclicSweep(), {"n": 8}, device="cpu", options=TINY, out=tmp_path))
    finally:
        gc.enable()
    assert len(alive_at_build) >= 2 and set(alive_at_build) == {0}, alive_at_build
