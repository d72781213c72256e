"""Scenario ``pipeline``: stage splitting, schedules for every layout, the bubble, and the
core check that every strategy trains exactly like one process (2 gloo ranks)."""

from __future__ import annotations

import itertools
import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
from analysis_tables import make_table, op
from torch import nn

from profiler_kit.errors import UsageError
from profiler_kit.scenario import RunConfig, builtin
from profiler_kit.scenarios.pipeline import (
    PipelineScenario,
    check_params,
    layer_count,
    model_spec,
    skip_reason,
)
from profiler_kit.scenarios.pipeline.bubble import CPU_BASIS, rank_bubble, trace_bubbles
from profiler_kit.scenarios.pipeline.models import (
    ModelSpec,
    balanced_split,
    build_layers,
    make_batch,
    placement,
)
from profiler_kit.scenarios.pipeline.schedule import B, F, list_schedule
from profiler_kit.trace.table import Cat
from profiler_kit.util.ports import free_port

STEPS = 3  # k: training steps before the losses are compared

TINY_TRANSFORMER = {"model": "transformer", "layers": 2, "hidden": 32, "heads": 2,
                    "seq_len": 8, "vocab": 50, "global_batch": 8, "micro_batches": 4}
TINY_MOBILENET = {"model": "mobilenetv2", "width_mult": 0.25, "global_batch": 8,
                  "micro_batches": 2}


def params_with(**overrides: Any) -> dict[str, Any]:
    sc = PipelineScenario()
    params = {p.name: p.default for p in sc.params}
    params.update(overrides)
    return params


# --- splitting and placing ------------------------------------------------------------


def brute_force_max(costs: list[int], n_stages: int) -> int:
    best = None
    for cuts in itertools.combinations(range(1, len(costs)), n_stages - 1):
        bounds = (0, *cuts, len(costs))
        worst = max(sum(costs[a:b]) for a, b in itertools.pairwise(bounds))
        best = worst if best is None else min(best, worst)
    assert best is not None
    return best


@pytest.mark.parametrize("costs,n_stages", [
    ([5, 1, 1, 1, 1, 5], 2), ([1, 9, 1, 1, 1, 1, 1, 9], 3), ([3, 3, 3, 3], 4),
    ([10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10], 4), ([7], 1),
])
def test_balanced_split_is_contiguous_and_minimizes_the_costliest_stage(costs, n_stages):
    stages = balanced_split(costs, n_stages)
    assert len(stages) == n_stages
    assert [i for r in stages for i in r] == list(range(len(costs)))
    assert all(len(r) > 0 for r in stages)
    assert max(sum(costs[i] for i in r) for r in stages) == brute_force_max(costs, n_stages)


def test_balanced_split_needs_a_layer_per_stage():
    with pytest.raises(ValueError, match="cannot fill"):
        balanced_split([1, 2], 3)


def test_layouts_of_both_partitions():
    costs = [1] * 8
    assert placement(costs, 2, 1, "balanced").stage_rank == (0, 1)
    loop = placement(costs, 2, 2, "balanced")
    assert loop.stage_rank == (0, 1, 0, 1) and loop.torch_layout
    loopback = placement(costs, 2, 1, "ends-on-rank0")
    assert loopback.stage_rank == (0, 1, 0) and not loopback.torch_layout
    assert loopback.stages_of(0) == [0, 2]
    vee = placement(costs, 2, 2, "ends-on-rank0")
    assert vee.stage_rank == (0, 1, 1, 0) and not vee.torch_layout
    assert placement(costs, 3, 2, "ends-on-rank0").stage_rank == (0, 1, 2, 2, 1, 0)


def test_the_layer_list_is_the_torchvision_model():
    from torchvision.models import mobilenet_v2

    spec = ModelSpec("mobilenetv2", width_mult=0.25)
    layers = build_layers(spec, seed=3)
    assert len(layers) == layer_count(spec)
    torch.manual_seed(3)
    reference = mobilenet_v2(weights=None, num_classes=10, width_mult=0.25, dropout=0.0).eval()
    x, _ = make_batch(spec, 2, seed=3)
    with torch.no_grad():
        assert torch.equal(nn.Sequential(*layers).eval()(x), reference(x))
    spec = ModelSpec("transformer", layers=3, hidden=16, heads=2, seq_len=8, vocab=20)
    layers = build_layers(spec, seed=0)
    assert len(layers) == layer_count(spec) == 5
    ids, _ = make_batch(spec, 2, seed=0)
    assert nn.Sequential(*layers)(ids).shape == (2, 10)


# --- schedules for the ends-on-rank0 layouts --------------------------------------------


def execute(order: dict[int, list[Any]], stage_rank: tuple[int, ...], n_mb: int) -> None:
    """Run the per-rank orders as blocking ranks would; fail on a deadlock or a bad order."""
    n_stages = len(stage_rank)
    done: set[tuple[Any, int, int]] = set()
    pos = {r: 0 for r in order}
    while any(pos[r] < len(order[r]) for r in order):
        progressed = False
        for r in order:
            if pos[r] == len(order[r]):
                continue
            a = order[r][pos[r]]
            s, kind, m = a.stage_index, a.computation_type, a.microbatch_index
            assert stage_rank[s] == r
            if kind == F:
                ready = s == 0 or (F, s - 1, m) in done
            else:
                ready = (F, s, m) in done and (s == n_stages - 1 or (B, s + 1, m) in done)
            if ready:
                done.add((kind, s, m))
                pos[r] += 1
                progressed = True
        assert progressed, f"deadlock at {pos}"
    assert done == {(k, s, m) for k in (F, B) for s in range(n_stages) for m in range(n_mb)}


@pytest.mark.parametrize("stage_rank", [(0, 1, 0), (0, 1, 1, 0), (0, 1, 2, 0), (0, 1, 2, 2, 1, 0)])
@pytest.mark.parametrize("policy", ["gpipe", "1f1b", "interleaved-1f1b"])
@pytest.mark.parametrize("n_mb", [1, 4, 6])
def test_list_schedules_run_every_action_once_without_deadlock(stage_rank, policy, n_mb):
    order = list_schedule(stage_rank, n_mb, policy)
    execute(order, stage_rank, n_mb)


def test_gpipe_order_runs_all_forwards_first_and_1f1b_does_not():
    gpipe = list_schedule((0, 1, 0), 4, "gpipe")[0]
    kinds = [a.computation_type for a in gpipe]
    assert kinds == [F] * 8 + [B] * 8
    one_f_one_b = [a.computation_type for a in list_schedule((0, 1, 0), 4, "1f1b")[0]]
    assert one_f_one_b.index(B) < len(one_f_one_b) - one_f_one_b[::-1].index(F) - 1


# --- parameters and skips -------------------------------------------------------------


def test_skip_reason_when_the_model_has_too_few_layers():
    params = params_with(**{**TINY_TRANSFORMER, "layers": 1})
    reason = skip_reason("interleaved-1f1b", params)
    assert reason is not None and "3 layers" in reason and "4 stages" in reason
    assert skip_reason("gpipe", params) is None
    assert skip_reason("ddp", params_with(world_size=64)) is None
    assert PipelineScenario().skip_reason(PipelineScenario.strategies[3], params) == reason
    assert skip_reason("interleaved-1f1b", params_with()) is None
    assert "at least 2 ranks" in (skip_reason("gpipe", params_with(world_size=1)) or "")
    assert skip_reason("ddp", params_with(world_size=1)) is None


def test_schedules_micro_batch_limits_are_skips():
    reason = skip_reason("interleaved-1f1b", params_with(micro_batches=5))
    assert reason is not None and "multiple of 2" in reason
    reason = skip_reason("1f1b", params_with(micro_batches=1))
    assert reason is not None and "at least as many micro-batches as stages (2)" in reason
    assert skip_reason("1f1b", params_with(micro_batches=1, partition="ends-on-rank0")) is None


def test_impossible_batches_are_usage_errors():
    with pytest.raises(UsageError, match="divisible by --micro-batches"):
        check_params(params_with(global_batch=10, micro_batches=4))
    with pytest.raises(UsageError, match="divisible by --world-size"):
        check_params(params_with(global_batch=9, micro_batches=1, world_size=2))
    with pytest.raises(UsageError, match="--heads"):
        check_params(params_with(model="transformer", hidden=30, heads=4))


def test_world_size_zero_means_torchrun_world_else_two(monkeypatch):
    from profiler_kit.scenarios.pipeline import world_size_of

    monkeypatch.delenv("PROFKIT_RANK_WORKER", raising=False)
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"):
        monkeypatch.delenv(var, raising=False)
    assert world_size_of(params_with()) == 2
    assert world_size_of(params_with(world_size=3)) == 3
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert world_size_of(params_with()) == 4
    assert [s.world_size for s in PipelineScenario().expand(params_with())] == [4] * 4


def test_builtin_scenario_and_its_strategies():
    sc = builtin("pipeline")
    assert sc.baseline == "ddp"
    strategies = sc.expand(params_with(world_size=4))
    assert [s.name for s in strategies] == ["ddp", "gpipe", "1f1b", "interleaved-1f1b"]
    assert all(s.processes and s.world_size == 4 for s in strategies)


# --- the bubble -------------------------------------------------------------------------


def test_cpu_bubble_counts_waiting_for_communication_without_compute():
    events = [
        op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
        op("aten::addmm", 0, 300),
        op("gloo:recv", 250, 450, cat=Cat.USER_ANNOTATION),  # waits 300..700
        op("aten::addmm", 700, 200),
        op("ProfilerStep#2", 1000, 1000, cat=Cat.USER_ANNOTATION),
        op("aten::addmm", 1000, 900),
        op("gloo:send", 1850, 100, cat=Cat.USER_ANNOTATION),  # 1900..1950 exposed
        op("aten::addmm", 2500, 100),  # outside every step: ignored
    ]
    bubble = rank_bubble(make_table(events))
    assert bubble.basis == CPU_BASIS and bubble.steps == 2
    assert bubble.step_ns == 2000
    assert bubble.busy_ns == 500 + 900
    assert bubble.idle_ns == 400 + 50
    assert bubble.idle_share == pytest.approx(450 / 2000)


def test_gpu_bubble_is_device_idle_within_steps():
    from analysis_tables import kernel

    events = [
        op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
        kernel("volta_sgemm", 100, 300),
        kernel("volta_sgemm", 350, 150),
        kernel("ncclDevKernel_SendRecv", 900, 400),  # 100 inside the step
    ]
    bubble = rank_bubble(make_table(events))
    assert bubble.busy_ns == 400 + 100
    assert bubble.idle_share == pytest.approx(0.5)
    assert bubble.p2p_ns == 100  # the part of the SendRecv kernel inside the step


def test_gpu_bubble_counts_work_not_annotations_and_shows_p2p():
    from analysis_tables import kernel

    events = [
        op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
        kernel("## forward ##", 0, 1000, cat=Cat.GPU_USER_ANNOTATION),  # a span, not work
        kernel("volta_sgemm", 100, 300),
        kernel("ncclDevKernel_SendRecv", 600, 200),  # waiting for a neighbour, on the GPU
    ]
    bubble = rank_bubble(make_table(events))
    assert bubble.busy_ns == 300 + 200 and bubble.p2p_ns == 200
    assert bubble.idle_share == pytest.approx(0.5)


def test_gpu_bubble_on_the_a100_ddp_trace():
    """Kernels, copies and sets over the CPU-side steps, recomputed from the raw JSON."""
    import gzip
    import json
    from decimal import Decimal

    path = Path(__file__).parents[1] / "data" / "a100_ddp_nccl_rank0.json.gz"
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]

    def ns(us):
        return int(Decimal(str(us)) * 1000)

    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
                   if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                   and e["name"].startswith("ProfilerStep#"))
    work = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
                  if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    busy = 0
    for lo, hi in steps:  # the steps do not overlap
        end = lo
        for s, e in work:
            s, e = max(s, lo, end), min(e, hi)
            if e > s:
                busy += e - s
                end = e
    step_ns = sum(hi - lo for lo, hi in steps)
    from profiler_kit.trace.loader import load

    bubble = rank_bubble(load(path))
    assert (bubble.step_ns, bubble.busy_ns) == (step_ns, busy)
    assert bubble.idle_share == pytest.approx(1 - busy / step_ns)
    assert 0.7 < bubble.idle_share < 0.8  # GPU-side annotations counted as busy gave 0.34


# --- the core check: every strategy trains like one process -----------------------------


def loss_worker(rank: int, world: int, port: int, cases: list[tuple[str, dict[str, Any]]],
                out: str) -> None:
    """One rank: build each case's strategy, train k steps, record losses; rank 0 also
    computes the single-process references with the same thread count."""
    from profiler_kit.scenarios.pipeline.workload import reference_loss

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    sc = PipelineScenario()
    results: dict[str, Any] = {}
    for strategy_name, params in cases:
        key = f"{params['model']}/{params['partition']}/{strategy_name}"
        strategy = next(s for s in sc.expand(params) if s.name == strategy_name)
        config = RunConfig(params=params, device="cpu", seed=0, rank=rank, world_size=world)
        t0 = time.perf_counter()
        workload = sc.build(strategy, config)
        initial = float(workload.outputs()[0])
        workload.step()
        first = workload.last_loss()
        for _ in range(STEPS - 1):
            workload.step()
        results[key] = {"loss": workload.last_loss(), "first_loss": first,
                        "initial_eval_loss": initial, "schedule": workload.info.get("schedule"),
                        "items": workload.items_per_step, "seconds": time.perf_counter() - t0,
                        "eval_error": workload.info["eval_loss_rel_error_vs_one_process"]}
        workload.close()
    if rank == 0:
        for key, (strategy_name, params) in zip(list(results), cases, strict=True):
            chunks = world if strategy_name == "ddp" else params["micro_batches"]
            results[key]["reference"] = reference_loss(
                model_spec(params), params["global_batch"], chunks, STEPS)
        Path(out).write_text(json.dumps(results))
    dist.barrier()
    dist.destroy_process_group()


def run_cases(tmp_path: Path, cases: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    import torch.multiprocessing as mp

    out = tmp_path / "losses.json"
    mp.spawn(loss_worker, args=(2, free_port(), cases, str(out)), nprocs=2, join=True)
    return json.loads(out.read_text())


def assert_like_one_process(results: dict[str, Any]) -> None:
    initial = {round(r["initial_eval_loss"], 5) for r in results.values()}
    assert len(initial) == 1, f"strategies disagree before training: {results}"
    for key, r in results.items():
        assert r["loss"] == pytest.approx(r["reference"], rel=1e-5, abs=1e-6), key
        assert r["loss"] != r["first_loss"], f"{key} did not train"
        assert r["eval_error"] < 1e-5, key  # build's own check against one process


ALL = ("ddp", "gpipe", "1f1b", "interleaved-1f1b")


@pytest.mark.slow
def test_every_strategy_trains_like_one_process(tmp_path):
    """k steps of every strategy, both partitions, both models, against one process.

    One pair of ranks runs every case (starting ranks costs more than a case). BatchNorm
    makes MobileNetV2's loss depend on how the batch is chunked, so the reference
    accumulates over the same chunks (micro-batches, or the ranks' shares for DDP).
    """
    cases = [(name, params_with(**TINY_TRANSFORMER, partition=partition))
             for partition in ("balanced", "ends-on-rank0") for name in ALL
             if not (partition == "ends-on-rank0" and name == "ddp")]
    cases += [(name, params_with(**TINY_MOBILENET)) for name in ("ddp", "gpipe")]
    results = run_cases(tmp_path, cases)
    assert len(results) == len(cases) == 9
    assert_like_one_process({k: r for k, r in results.items() if k.startswith("transformer")})
    assert_like_one_process({k: r for k, r in results.items() if k.startswith("mobilenet")})
    schedules = {k: r["schedule"] for k, r in results.items()}
    assert schedules["transformer/balanced/gpipe"] == "ScheduleGPipe"
    assert schedules["transformer/balanced/1f1b"] == "Schedule1F1B"
    assert schedules["transformer/balanced/interleaved-1f1b"] == "ScheduleInterleaved1F1B"
    assert schedules["transformer/ends-on-rank0/gpipe"] == "ListSchedule"
    assert schedules["transformer/ends-on-rank0/interleaved-1f1b"] == "ListSchedule"
    assert results["transformer/balanced/ddp"]["items"] == 4  # each rank's half


# --- end to end through profkit run ----------------------------------------------------


@pytest.mark.slow
def test_profkit_run_pipeline_end_to_end(tmp_path):
    from profiler_kit import api
    from profiler_kit.measure.passes import MeasureOptions

    options = MeasureOptions(repeats=1, iterations=2, warmup=1, profile_wait=0, profile_warmup=1,
                             profile_active=1, record_shapes=False, profile_memory=False)
    params = {**TINY_TRANSFORMER, "layers": 1, "micro_batches": "2"}
    result = api.run("pipeline", params, device="cpu", options=options, out=tmp_path,
                     strategies=["ddp", "gpipe", "interleaved-1f1b"])
    by_name = {s.name: s for s in result.strategies}
    assert by_name["interleaved-1f1b"].status == "skipped"
    assert "4 stages" in (by_name["interleaved-1f1b"].reason or "")
    for name in ("ddp", "gpipe"):
        s = by_name[name]
        assert s.status == "ok", s.error
        assert s.items_per_step == 8  # global batch, summed over the ranks
        assert len(s.per_rank_samples_ns) == 2
        assert all(a == max(a, b) for a, b in zip(s.samples_ns, s.per_rank_samples_ns[1],
                                                   strict=True))
        traces = sorted(str(result.run_dir / f) for f in s.trace_files)
        assert [Path(t).name.split(".")[0] for t in traces] == ["rank0", "rank1"]
        for b in trace_bubbles(traces):
            assert b.steps == 1 and b.idle_share is not None and 0 <= b.idle_share < 1
        shares = s.info["idle_share_by_rank"]
        assert shares == [b["idle_share"] for b in s.info["bubble"]] and len(shares) == 2
        job = s.info["job"]  # the job view of the two ranks
        assert job["ranks"] == [0, 1] and job["steps"] == 1
    gpipe_job = by_name["gpipe"].info["job"]
    assert gpipe_job["p2p_transfers"] > 0 and 0 <= gpipe_job["pipeline_bubble_share"] <= 1
    record = json.loads((result.run_dir / "run.json").read_text())
    gpipe_record = next(s for s in record["strategies"] if s["name"] == "gpipe")
    assert len(gpipe_record["info"]["idle_share_by_rank"]) == 2
    assert record["environment"]["distributed"]["backend"] == "gloo"
    assert "idle per rank" in (result.run_dir / "summary.md").read_text()
    report = json.loads((result.run_dir / "pipeline_report.json").read_text())
    assert set(report["points"][0]["strategies"]) == {"ddp", "gpipe"}
    assert "4 stages" in report["points"][0]["skipped"]["interleaved-1f1b"]
    gpipe = report["points"][0]["strategies"]["gpipe"]
    assert len(gpipe["bubble"]) == 2 and gpipe["speedup_vs_ddp"] is not None


def test_results_tables_show_the_idle_share_of_every_rank():
    import io

    from rich.console import Console

    from profiler_kit.render.console import run as run_console
    from profiler_kit.render.markdown.run import render_markdown
    from profiler_kit.results import RunResult, StrategyResult, stats

    samples = [100_000_000] * 3
    result = RunResult(
        run_dir=Path("traces/pipeline/x"), scenario="pipeline", description="d",
        baseline="ddp", item_unit="samples", device="cpu", params={}, sweep=(), points=(),
        options={}, environment={}, started_at="t0",
        strategies=(
            StrategyResult(name="ddp", status="ok", samples_ns=tuple(samples),
                           stats=stats(samples), info={"param_count": 10}),
            StrategyResult(name="gpipe", status="ok", samples_ns=tuple(samples),
                           stats=stats(samples),
                           info={"param_count": 5, "idle_share_by_rank": [0.43, 0.19]}),
        ),
    )
    buf = io.StringIO()
    run_console.render(Console(file=buf, width=150, color_system=None), result)
    assert "idle per rank" in buf.getvalue() and "43.0 % / 19.0 %" in buf.getvalue()
    markdown = render_markdown(result)
    assert "idle per rank" in markdown and "| 43.0 % / 19.0 % |" in markdown


def test_results_show_the_straggler_and_wait_transfer_lines():
    import io

    from rich.console import Console

    from profiler_kit.render.console import run as run_console
    from profiler_kit.render.markdown.run import render_markdown
    from profiler_kit.results import RunResult, StrategyResult, stats

    samples = [100_000_000] * 3
    job = {"ranks": [0, 1], "collectives": 4,
           "straggler": {"rank": 1, "last_arrivals": 3, "instances": 4,
                         "others_wait_per_step_ns": 12_500_000},
           "exposed_wait_per_rank_per_step_ns": 6_250_000,
           "exposed_transfer_per_rank_per_step_ns": 1_000_000,
           "p2p_transfers": 8, "p2p_wait_per_rank_per_step_ns": 2_000_000,
           "pipeline_bubble_share": 0.25}
    result = RunResult(
        run_dir=Path("traces/pipeline/x"), scenario="pipeline", description="d",
        baseline="gpipe", item_unit="samples", device="cpu", params={}, sweep=(), points=(),
        options={}, environment={}, started_at="t0",
        strategies=(StrategyResult(name="gpipe", status="ok", samples_ns=tuple(samples),
                                   stats=stats(samples), info={"job": job}),),
    )
    buf = io.StringIO()
    run_console.render(Console(file=buf, width=300, color_system=None), result)
    line = ("gpipe: straggler rank 1 (last in 3 of 4 collectives; the others wait 12.5 ms per "
            "step for it); exposed communication per rank per step: wait 6.25 ms, transfer "
            "1 ms; 8 send/recv pairs, waiting 2 ms per rank per step; pipeline bubble 25.0 %")
    assert line in buf.getvalue()
    assert f"- {line}" in render_markdown(result)


class FixedLoss:
    """A workload whose distributed eval loss is given (stands in for the ranks' result)."""

    device = torch.device("cpu")

    def __init__(self, loss: float) -> None:
        self.loss = loss
        self.info: dict[str, Any] = {}

    def outputs(self) -> list[torch.Tensor]:
        return [torch.tensor(self.loss)]


def test_build_check_fails_a_strategy_that_computes_something_else():
    from profiler_kit.scenarios.pipeline.workload import (
        check_against_one_process,
        one_process_eval_loss,
    )

    spec = ModelSpec("transformer", layers=1, hidden=16, heads=2, seq_len=4, vocab=20)
    config = RunConfig(params={"global_batch": 4}, device="cpu", seed=0, rank=1)
    right = FixedLoss(one_process_eval_loss(spec, 4, 0, torch.device("cpu")))
    check_against_one_process(right, spec, config)
    assert right.info["eval_loss_rel_error_vs_one_process"] == 0.0
    with pytest.raises(RuntimeError, match="rank 1: eval loss .* differs from one process"):
        check_against_one_process(FixedLoss(right.loss * 1.01), spec, config)
