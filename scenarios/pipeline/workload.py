"""The ``pipeline`` scenario's workloads, built inside each rank after the process group is up.

``DataParallelWorkload`` keeps the whole model on every rank and its share of the batch;
``PipelineWorkload`` keeps this rank's stages and drives one
``torch.distributed.pipelining`` schedule. Both train with the same loss (mean
cross-entropy), the same SGD and the same data, so after k steps their losses
equal a single-process run that accumulates gradients over the same chunks
(micro-batches, or the ranks' shares for DDP).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.functional import cross_entropy
from torch.profiler import record_function

from profiler_kit.measure import distributed
from profiler_kit.scenario import RunConfig, Workload
from profiler_kit.scenarios.ddp import DDPWorkload

from .models import (
    LEARNING_RATE,
    MOMENTUM,
    ModelSpec,
    Placement,
    build_layers,
    layer_costs,
    make_batch,
    placement,
    stages_per_rank,
)


def optimizer(params: Any) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=LEARNING_RATE, momentum=MOMENTUM)


def plan(spec: ModelSpec, strategy: str, world_size: int, partition: str, seed: int) -> Placement:
    """The stages and their ranks, from FLOPs counted on the meta device (the same on all ranks)."""
    with torch.device("meta"):
        layers = build_layers(spec, seed)
        sample, _ = make_batch(spec, 2, seed, "meta")
    return placement(layer_costs(layers, sample), world_size, stages_per_rank(strategy), partition)


class DataParallelWorkload(DDPWorkload):
    """DistributedDataParallel over all ranks; each rank trains on global_batch / world_size.

    The ``ddp`` scenario's training step on this scenario's model and data; its outputs
    are the eval-mode loss over the global batch, as the pipelines report theirs.
    """

    def __init__(self, config: RunConfig, spec: ModelSpec) -> None:
        device = torch.device(config.device)
        self.world_size = config.world_size
        batch = config.params["global_batch"]
        model = nn.Sequential(*build_layers(spec, config.seed)).to(device)
        x, y = make_batch(spec, batch, config.seed, device)
        share = batch // config.world_size  # this rank's items; the runner sums ranks
        lo = config.rank * share
        super().__init__(model, x[lo:lo + share], y[lo:lo + share],
                         optimizer(model.parameters()), ddp=True,
                         info={"param_count": sum(p.numel() for p in model.parameters()),
                               "local_batch": share})

    def last_loss(self) -> float:
        """Mean loss of the last step over the global batch (a collective: every rank calls it)."""
        assert self._loss is not None, "no step has run"
        loss = self._loss.detach().clone()
        dist.all_reduce(loss, group=self.group)
        return float(loss) / self.world_size

    def outputs(self) -> Sequence[torch.Tensor]:
        """Loss of the current weights in eval mode over the global batch (changes no state)."""
        module = self.model.module
        module.eval()
        try:
            with torch.no_grad():
                loss = cross_entropy(module(self.inputs), self.target)
        finally:
            module.train()
        dist.all_reduce(loss, group=self.group)
        return [loss.cpu() / self.world_size]


class PipelineWorkload(Workload):
    """This rank's stages of the model under one torch.distributed.pipelining schedule."""

    def __init__(self, config: RunConfig, spec: ModelSpec, strategy: str) -> None:
        from torch.distributed.pipelining import (
            PipelineStage,
            Schedule1F1B,
            ScheduleGPipe,
            ScheduleInterleaved1F1B,
        )

        from .schedule import ListSchedule

        params = config.params
        self.device = torch.device(config.device)
        self.devices = [self.device]
        self.n_microbatches = params["micro_batches"]
        self.spec, self.seed, self.rank = spec, config.seed, config.rank
        self.global_batch = params["global_batch"]
        self.placement = plan(spec, strategy, config.world_size, params["partition"], config.seed)
        n_stages = len(self.placement.stages)
        local = self.placement.stages_of(config.rank)
        layers = build_layers(spec, config.seed)
        self.modules = [
            nn.Sequential(*(layers[i] for i in self.placement.stages[s])).to(self.device)
            for s in local
        ]
        del layers
        self.group = distributed.group()  # None: the world
        self.stages = [PipelineStage(m, s, n_stages, self.device, group=self.group)
                       for m, s in zip(self.modules, local, strict=True)]
        self.has_first, self.has_last = 0 in local, n_stages - 1 in local
        # The runner sums the ranks' items: the samples enter the pipeline at the first stage.
        self.items_per_step = params["global_batch"] if self.has_first else 0
        self.last_rank = self.placement.stage_rank[-1]
        if self.placement.torch_layout and strategy == "gpipe":
            self.schedule: Any = ScheduleGPipe(self.stages[0], self.n_microbatches,
                                               loss_fn=cross_entropy)
        elif self.placement.torch_layout and strategy == "1f1b":
            self.schedule = Schedule1F1B(self.stages[0], self.n_microbatches,
                                         loss_fn=cross_entropy)
        elif self.placement.torch_layout:
            self.schedule = ScheduleInterleaved1F1B(self.stages, self.n_microbatches,
                                                    loss_fn=cross_entropy)
        else:
            self.schedule = ListSchedule(self.stages, self.n_microbatches, cross_entropy,
                                         self.placement.stage_rank, strategy)
        x, y = make_batch(spec, params["global_batch"], config.seed, self.device)
        self.x = x if self.has_first else None
        self.y = y if self.has_last else None
        self.opt = optimizer([p for m in self.modules for p in m.parameters()])
        self._losses: list[torch.Tensor] = []
        self.info = {
            "schedule": type(self.schedule).__name__,
            "stages": [[r.start, r.stop] for r in self.placement.stages],
            "stage_ranks": list(self.placement.stage_rank),
            "local_stages": local,
            "param_count": sum(p.numel() for m in self.modules for p in m.parameters()),
        }

    def _schedule(self) -> None:
        self._losses = []
        args = (self.x,) if self.has_first else ()
        if self.has_last:
            self.schedule.step(*args, target=self.y, losses=self._losses, return_outputs=False)
        else:
            self.schedule.step(*args, return_outputs=False)

    def _optimizer(self) -> None:
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def phases(self) -> Sequence[tuple[str, Callable[[], None]]]:
        return [("pipeline", self._schedule), ("optimizer", self._optimizer)]

    def step(self) -> None:
        for name, phase in self.phases():
            with record_function(name):
                phase()

    def _broadcast_loss(self, losses: list[torch.Tensor]) -> torch.Tensor:
        if self.has_last:
            loss = torch.stack([v.detach() for v in losses]).mean()
        else:
            loss = torch.zeros((), device=self.device)
        dist.broadcast(loss, src=self.last_rank, group=self.group)
        return loss

    def last_loss(self) -> float:
        """Mean micro-batch loss of the last step (a collective: every rank calls it)."""
        return float(self._broadcast_loss(self._losses))

    def outputs(self) -> Sequence[torch.Tensor]:
        """Loss of the current weights in eval mode over the global batch (changes no state).

        The stages run one after another with plain sends and receives rather than
        through ``schedule.eval``, which torch 2.14 cannot run when one rank holds
        two adjacent stages (the V layout).
        """
        stage_rank = self.placement.stage_rank
        boundary = self._boundary_shapes()
        local = dict(zip(self.placement.stages_of(self.rank), self.modules, strict=True))
        h: torch.Tensor | None = self.x
        loss = torch.zeros((), device=self.device)
        with torch.no_grad():
            for s, r in enumerate(stage_rank):
                if r != self.rank:
                    continue
                if s > 0 and stage_rank[s - 1] != r:
                    h = torch.empty(boundary[s - 1], device=self.device)
                    dist.recv(h, src=stage_rank[s - 1], group=self.group)
                module = local[s]
                module.eval()
                try:
                    assert h is not None
                    h = module(h)
                finally:
                    module.train()
                if s + 1 < len(stage_rank) and stage_rank[s + 1] != r:
                    dist.send(h.contiguous(), dst=stage_rank[s + 1], group=self.group)
                if s == len(stage_rank) - 1:
                    loss = cross_entropy(h, self.y)
        dist.broadcast(loss, src=self.last_rank, group=self.group)
        return [loss.cpu()]

    def _boundary_shapes(self) -> list[torch.Size]:
        """Shape of each stage's output for the global batch, from a forward on the meta device."""
        with torch.device("meta"):
            layers = build_layers(self.spec, self.seed)
            h, _ = make_batch(self.spec, self.global_batch, self.seed, "meta")
            shapes = []
            with torch.no_grad():
                for stage in self.placement.stages:
                    for i in stage:
                        h = layers[i](h)
                    shapes.append(h.shape)
        return shapes

    def close(self) -> None:
        self._losses = []


EVAL_LOSS_RTOL = 1e-4


def one_process_eval_loss(spec: ModelSpec, global_batch: int, seed: int,
                          device: torch.device) -> float:
    """The eval-mode loss of the whole model on the global batch, in this process."""
    model = nn.Sequential(*build_layers(spec, seed)).to(device).eval()
    x, y = make_batch(spec, global_batch, seed, device)
    with torch.no_grad():
        return float(cross_entropy(model(x), y))


def check_against_one_process(workload: Any, spec: ModelSpec, config: RunConfig) -> None:
    """Before timing: the strategy's eval-mode loss from the initial weights must equal one
    process running the whole model (every rank checks; a mismatch fails the strategy).

    The runner cannot compare a multi-process strategy's outputs with the baseline's, so
    each rank does it here; the relative error lands in ``info``.
    """
    got = float(workload.outputs()[0])
    want = one_process_eval_loss(spec, config.params["global_batch"], config.seed,
                                 workload.device)
    error = abs(got - want) / max(abs(want), 1e-12)
    if error > EVAL_LOSS_RTOL:
        raise RuntimeError(
            f"rank {config.rank}: eval loss {got:.6g} differs from one process ({want:.6g}) "
            f"by {error:.2e} (tolerance {EVAL_LOSS_RTOL:g})")
    workload.info["eval_loss_rel_error_vs_one_process"] = error


def reference_loss(spec: ModelSpec, global_batch: int, chunks: int, steps: int,
                   seed: int = 0) -> float:
    """The loss of step ``steps`` trained in one process, accumulating over ``chunks`` chunks.

    What every strategy must reproduce: pipelines chunk the batch into micro-batches,
    DDP into the ranks' shares (the chunking matters only for batch statistics, as in
    MobileNetV2's BatchNorm).
    """
    model = nn.Sequential(*build_layers(spec, seed))
    opt = optimizer(model.parameters())
    x, y = make_batch(spec, global_batch, seed)
    losses: list[torch.Tensor] = []
    for _ in range(steps):
        losses = []
        for xc, yc in zip(x.chunk(chunks), y.chunk(chunks), strict=True):
            loss = cross_entropy(model(xc), yc)
            (loss / chunks).backward()
            losses.append(loss.detach())
        opt.step()
        opt.zero_grad(set_to_none=True)
    return float(torch.stack(losses).mean())
