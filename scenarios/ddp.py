"""Scenario ``ddp``: how DistributedDataParallel training scales with world size and bucket size.

PyTorch's DDP benchmark (torch/benchmarks/distributed/ddp/benchmark.py), made sound:
a torchvision classifier trained on synthetic in-memory data, first in one process
without any wrapper (``no-ddp``, the baseline), then under DDP with 1, 2, ... ranks
(``ddp-w1`` ...). Every rank runs the same batch size, so ideal scaling keeps the
seconds per iteration flat and multiplies the aggregate examples/s by the world size.
Each step's time is the slowest rank's (the runner combines the ranks that way), and
the run also writes ``ddp_report.json`` in PyTorch's report schema (plus extras).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from profiler_kit.errors import UsageError
from profiler_kit.measure import distributed
from profiler_kit.results import RunResult
from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload

BASELINE = "no-ddp"
DEFAULT_WORLD_SIZE = 2
NUM_CLASSES = 1000  # torchvision's default head, as in PyTorch's benchmark


def strategies_for(world_size: int) -> list[Strategy]:
    """``no-ddp`` then ``ddp-w1`` .. ``ddp-w<world_size>``; all run in their own processes,
    so the baseline gets the same one-thread-per-rank conditions as the DDP ranks."""
    found = [
        Strategy(BASELINE, "one process, plain model, no DDP wrapper (the baseline)",
                 processes=True, world_size=1, options={"ddp": False}),
    ]
    for w in range(1, world_size + 1):
        found.append(
            Strategy(f"ddp-w{w}", f"DistributedDataParallel over {w} rank(s), one batch each",
                     processes=True, world_size=w, options={"ddp": True})
        )
    return found


def resolve_world_size(value: int) -> int:
    """``0`` means torchrun's world size under torchrun, else one rank per GPU (2 on a
    machine without GPUs)."""
    if value > 0:
        return value
    if distributed.under_torchrun():
        return int(os.environ["WORLD_SIZE"])
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return count if count > 0 else DEFAULT_WORLD_SIZE


class DDP(Scenario):
    name = "ddp"
    description = (
        "DistributedDataParallel training of a torchvision classifier: no-ddp, then 1..N "
        "ranks; seconds/iteration percentiles and examples/s, slowest rank per step"
    )
    params = (
        Param("model", str, "resnet18", "torchvision classification model (random weights)",
              cuda_default="resnet50"),
        Param("batch_size", int, 8, "images per rank per step", cuda_default=32, min_value=1),
        Param("image_size", int, 32, "input height and width", cuda_default=224, min_value=8),
        Param("world_size", int, 0,
              "largest number of ranks (configurations ddp-w1 .. ddp-wN); 0: torchrun's world "
              "size under torchrun, else one rank per GPU (2 on CPU)", min_value=0),
        Param("bucket_cap_mb", float, 25.0, "DDP gradient bucket size in MiB (sweep: 25,1)",
              sweep=True, min_value=0.0),
        distributed.RANK_TIMEOUT_PARAM,
        distributed.GATHER_LIMIT_PARAM,
        Param("json_report", str, "",
              "also copy the run's ddp_report.json to this file (- for stdout)", output=True),
    )
    strategies = tuple(strategies_for(DEFAULT_WORLD_SIZE))
    baseline = BASELINE
    item_unit = "images"
    supports_amp = False

    def expand(self, params: Mapping[str, Any]) -> list[Strategy]:
        return strategies_for(resolve_world_size(int(params.get("world_size", 0))))

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {**params, "world_size": resolve_world_size(int(params.get("world_size", 0)))}

    def validate(self, params: Mapping[str, Any]) -> None:
        import torchvision

        known = set(torchvision.models.list_models(module=torchvision.models))
        if params["model"] not in known:
            raise UsageError(
                f"--model: unknown torchvision classification model {params['model']!r} "
                f"(for example resnet18, resnet50, mobilenet_v2)"
            )

    def build(self, strategy: Strategy, config: RunConfig) -> DDPWorkload:
        return classifier_workload(strategy, config)

    # Hooks the runner and `profkit run` call after the run (see Scenario).

    def annotate_run(self, result: RunResult) -> RunResult:
        """Add each multi-rank configuration's job view (straggler, waiting against
        transferring), from its traces, to its info."""
        from .job_info import annotate_jobs

        return annotate_jobs(result)

    def console_tables(self, result: RunResult) -> list[Any]:
        """The run in the layout of PyTorch's DDP benchmark (percentiles, examples/s)."""
        from profiler_kit.ddp_benchmark.report import build
        from profiler_kit.render.console.ddp import tables

        return tables(build(result))

    def finish_run(self, result: RunResult) -> None:
        """Write ``ddp_report.json`` into the run folder (and a copy to ``--json-report``)."""
        from profiler_kit.ddp_benchmark.report import write_for_run
        from profiler_kit.util import outputs

        written = write_for_run(result)
        copy_to = str(result.params.get("json_report") or "")
        if copy_to:
            target = None if copy_to == outputs.STDOUT else Path(copy_to)
            outputs.write(target, written.read_text(encoding="utf-8"))


class DDPWorkload(Workload):
    """One rank's training step: forward, backward, optimizer, each a record_function phase.

    The model trains under DistributedDataParallel over :func:`distributed.group` when
    ``ddp`` is set, else plain (one process, no wrapper). Both the ``ddp`` and the
    ``pipeline`` scenarios train with it; ``outputs`` are the logits and gradients of
    one step from the current weights, computed on a local copy.
    """

    def __init__(self, model: Any, inputs: Any, target: Any, optimizer: Any, *, ddp: bool,
                 ddp_options: Mapping[str, Any] | None = None,
                 info: Mapping[str, Any] | None = None) -> None:
        """``info`` is recorded in run.json as given (its order included)."""
        import torch

        self.device = inputs.device
        self.devices: Sequence[Any] = [self.device]
        self.items_per_step = int(inputs.shape[0])
        self._plain = model
        self.ddp = ddp
        self.group = distributed.group()
        if ddp:
            from torch.nn.parallel import DistributedDataParallel

            model = DistributedDataParallel(
                model,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                process_group=self.group,
                **(ddp_options or {}),
            )
        self.model = model
        self.inputs, self.target = inputs, target
        self.criterion = torch.nn.CrossEntropyLoss()
        self.optimizer = optimizer
        self._loss: Any = None
        self.info = dict(info or {})

    def _forward(self) -> None:
        from torch.profiler import record_function

        with record_function("forward"):
            self._loss = self.criterion(self.model(self.inputs), self.target)

    def _backward(self) -> None:
        from torch.profiler import record_function

        with record_function("backward"):
            self._loss.backward()

    def _optimizer(self) -> None:
        from torch.profiler import record_function

        with record_function("optimizer"):
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)

    def phases(self) -> list[tuple[str, Any]]:
        return [("forward", self._forward), ("backward", self._backward),
                ("optimizer", self._optimizer)]

    def step(self) -> None:
        self._forward()
        self._backward()
        self._optimizer()

    def outputs(self) -> list[Any]:
        """Logits and gradients of one step from the current weights, on a local copy
        (no collective, so one rank may call it alone; the workload's state is untouched)."""
        local = copy.deepcopy(self._plain)
        out = local(self.inputs)
        self.criterion(out, self.target).backward()
        return [out.detach()] + [p.grad.detach() for p in local.parameters() if p.grad is not None]

    def close(self) -> None:
        self._loss = None
        self.optimizer.zero_grad(set_to_none=True)


def classifier_workload(strategy: Strategy, config: RunConfig) -> DDPWorkload:
    """The ``ddp`` scenario's workload: a torchvision classifier on synthetic images."""
    import torch
    import torchvision

    p = config.params
    device = torch.device(config.device)
    batch, size = int(p["batch_size"]), int(p["image_size"])
    torch.manual_seed(config.seed)  # the same initial weights on every rank
    model = torchvision.models.get_model(p["model"], weights=None,
                                         num_classes=NUM_CLASSES).to(device)
    ddp = bool(strategy.options.get("ddp", False))
    bucket = p.get("bucket_cap_mb", 25.0)
    bucket = float(bucket[0] if isinstance(bucket, (tuple, list)) else bucket)
    # Synthetic data made on the device, different on every rank (as a sampler would).
    gen = torch.Generator(device=device).manual_seed(config.seed + 1 + config.rank)
    inputs = torch.rand(batch, 3, size, size, device=device, generator=gen)
    target = torch.randint(0, NUM_CLASSES, (batch,), device=device, generator=gen)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=1e-4)
    info = {
        "model": p["model"],
        "batch_size": batch,
        "image_size": size,
        "ddp": ddp,
        "world_size": config.world_size,
        "backend": distributed.backend_for(config.device),
        "bucket_cap_mb": bucket if ddp else None,
        "threads_per_rank": torch.get_num_threads() if device.type == "cpu" else None,
        "param_count": sum(t.numel() for t in model.parameters()),
    }
    return DDPWorkload(model, inputs, target, optimizer, ddp=ddp,
                       ddp_options={"broadcast_buffers": False, "bucket_cap_mb": bucket},
                       info=info)
