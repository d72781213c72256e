"""Scenario ``pipeline``: pipeline parallelism (GPipe, 1F1B, interleaved 1F1B) against DDP.

The package: ``models`` (the layers, their FLOPs and placement on ranks), ``schedule``
(the list schedule for any stage layout), ``workload`` (what each rank trains),
``bubble`` (each rank's idle time, from its trace) and ``report`` (pipeline_report.json).

Each strategy trains the same model on the same global batch over ``world_size``
ranks: ``ddp`` replicates the model and splits the batch; the pipeline strategies
split the model into stages with ``torch.distributed.pipelining`` and the batch
into micro-batches. Every rank builds the whole model from the same seed and
keeps its own stages, so all strategies start from the same weights.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from profiler_kit.errors import UsageError
from profiler_kit.measure import distributed
from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy

from .models import MODELS, PARTITIONS, ModelSpec, stages_per_rank

if TYPE_CHECKING:
    from profiler_kit.results import RunResult

PIPELINE_STRATEGIES = ("gpipe", "1f1b", "interleaved-1f1b")
DEFAULT_WORLD_SIZE = 2


def model_spec(params: Mapping[str, Any]) -> ModelSpec:
    return ModelSpec(
        model=params["model"], width_mult=params["width_mult"], layers=params["layers"],
        hidden=params["hidden"], heads=params["heads"], seq_len=params["seq_len"],
        vocab=params["vocab"],
    )


def layer_count(spec: ModelSpec) -> int:
    """How many layers the pipeline can cut between (see models.build_layers)."""
    return 20 if spec.model == "mobilenetv2" else spec.layers + 2


def stage_count(strategy: str, world_size: int, partition: str) -> int:
    per_rank = stages_per_rank(strategy)
    if partition == "ends-on-rank0" and per_rank == 1:
        return world_size + 1  # loop-back: rank 0 holds the first and the last stage
    return world_size * per_rank


def world_size_of(params: Mapping[str, Any]) -> int:
    """``--world-size``, where 0 means torchrun's world size under torchrun, else 2."""
    value = int(params["world_size"])
    if value:
        return value
    if distributed.under_torchrun():
        return int(os.environ["WORLD_SIZE"])
    return DEFAULT_WORLD_SIZE


def skip_reason(strategy: str, params: Mapping[str, Any]) -> str | None:
    """Why ``strategy`` cannot run with these parameters, or None when it can."""
    if strategy not in PIPELINE_STRATEGIES:
        return None
    world = world_size_of(params)
    if world < 2:
        return "a pipeline needs at least 2 ranks (--world-size)"
    n_stages = stage_count(strategy, world, params["partition"])
    layers = layer_count(model_spec(params))
    if n_stages > layers:
        return (f"{params['model']} has {layers} layers to cut, {strategy} needs {n_stages} "
                f"stages with world size {world}")
    if (strategy == "1f1b" and params["partition"] == "balanced"
            and params["micro_batches"] < n_stages):
        return (f"Schedule1F1B needs at least as many micro-batches as stages ({n_stages}), "
                f"got {params['micro_batches']}")
    if strategy == "interleaved-1f1b" and params["partition"] == "balanced":
        rounds = max(1, params["micro_batches"] // world)
        if params["micro_batches"] % rounds:
            return (f"ScheduleInterleaved1F1B needs micro-batches ({params['micro_batches']}) "
                    f"to be a multiple of {rounds} (micro-batches // world size)")
    return None


def check_params(params: Mapping[str, Any]) -> None:
    """Raise UsageError for values no strategy can run with."""
    batch, micro, world = params["global_batch"], params["micro_batches"], world_size_of(params)
    if batch % micro:
        raise UsageError(f"--global-batch {batch} must be divisible by --micro-batches {micro}")
    if batch % world:
        raise UsageError(f"--global-batch {batch} must be divisible by --world-size {world}")
    if params["model"] == "transformer" and params["hidden"] % params["heads"]:
        raise UsageError(
            f"--hidden {params['hidden']} must be divisible by --heads {params['heads']}")


class PipelineScenario(Scenario):
    name = "pipeline"
    description = (
        "Pipeline parallelism against data parallelism: GPipe, 1F1B and interleaved 1F1B "
        "(torch.distributed.pipelining) against DDP, on the same model, batch and ranks"
    )
    params = (
        Param("model", str, "mobilenetv2", "mobilenetv2 (CIFAR-10 shape) or transformer "
              "(RoBERTa-shaped encoder classifier)", choices=MODELS),
        Param("world_size", int, 0, "ranks (processes) per strategy; 0: torchrun's world "
              "size under torchrun, else 2", min_value=0),
        Param("micro_batches", int, 4, "micro-batches per step for the pipeline schedules",
              cuda_default=8, min_value=1, sweep=True),
        Param("global_batch", int, 16, "samples per step across all ranks", cuda_default=256,
              min_value=1),
        Param("partition", str, "balanced", "balanced: stages of about equal forward FLOPs, "
              "stage s on rank s mod world size; ends-on-rank0: the first and the last stage on "
              "rank 0", choices=PARTITIONS),
        Param("width_mult", float, 0.5, "MobileNetV2 width multiplier", cuda_default=1.0,
              min_value=0.05),
        Param("layers", int, 4, "transformer encoder layers", cuda_default=12, min_value=1),
        Param("hidden", int, 64, "transformer width", cuda_default=768, min_value=1),
        Param("heads", int, 4, "transformer attention heads", cuda_default=12, min_value=1),
        Param("seq_len", int, 32, "transformer sequence length", cuda_default=128, min_value=1),
        Param("vocab", int, 1000, "transformer vocabulary size", cuda_default=50265, min_value=2),
    )
    strategies = (
        Strategy("ddp", "DistributedDataParallel: the whole model on every rank, the batch "
                 "split across ranks", processes=True, world_size=2),
        Strategy("gpipe", "ScheduleGPipe: all forwards of the micro-batches, then all backwards",
                 processes=True, world_size=2),
        Strategy("1f1b", "Schedule1F1B: one forward, one backward in the steady state",
                 processes=True, world_size=2),
        Strategy("interleaved-1f1b", "ScheduleInterleaved1F1B: two stages per rank",
                 processes=True, world_size=2),
    )
    baseline = "ddp"
    item_unit = "samples"
    supports_amp = False

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {**params, "world_size": world_size_of(params)}

    def expand(self, params: Mapping[str, Any]) -> list[Strategy]:
        check_params(params)
        return [replace(s, world_size=world_size_of(params)) for s in self.strategies]

    def skip_reason(self, strategy: Strategy, params: Mapping[str, Any]) -> str | None:
        """Why the strategy cannot run with these parameters (None: it can)."""
        return skip_reason(strategy.base_name, params)

    def annotate_run(self, result: RunResult) -> RunResult:
        """Add each rank's bubble, and the job view (straggler, waiting against
        transferring, send/recv pairs), from the traces, to every measured strategy's info."""
        from ..job_info import annotate_jobs
        from .report import annotate

        return annotate_jobs(annotate(result))

    def finish_run(self, result: RunResult) -> None:
        """Write pipeline_report.json (throughput, speed-up, bubble per rank) into the run."""
        from .report import write_report

        write_report(result)

    def build(self, strategy: Strategy, config: RunConfig) -> Any:
        check_params(config.params)
        reason = skip_reason(strategy.base_name, config.params)
        if reason:
            raise UsageError(reason)
        from .workload import DataParallelWorkload, PipelineWorkload, check_against_one_process

        spec = model_spec(config.params)
        if strategy.base_name == "ddp":
            workload: Any = DataParallelWorkload(config, spec)
        else:
            workload = PipelineWorkload(config, spec, strategy.base_name)
        check_against_one_process(workload, spec, config)
        return workload
