"""Two ranks that step at a set pace: a small all-reduce, then a sleep of ``--pace-ms``.

The two-host failure tests need a run that goes on for a known while, in two
configurations (``--pace-ms`` is a sweep), so that a host can be killed or cut off in the
middle of the second; what each step computes does not matter to them. Sleeping keeps the
run's length without spending the CPU that the tests beside them need."""

from __future__ import annotations

import time
from typing import Any

import torch

from profiler_kit.measure import distributed
from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload


class PacedWorkload(Workload):
    def __init__(self, config: RunConfig) -> None:
        self.pace_s = config.params["pace_ms"] / 1000
        self.devices = [torch.device("cpu")]
        self.items_per_step = 1
        self.info = {"rank": config.rank}
        self.grad = torch.ones(1024)

    def step(self) -> None:
        torch.distributed.all_reduce(self.grad, group=distributed.group())
        self.grad.fill_(1.0)
        time.sleep(self.pace_s)

    def outputs(self) -> list[Any]:
        return [self.grad]


class Paced(Scenario):
    name = "paced"
    description = "two ranks stepping at a set pace (an all-reduce, then a sleep)"
    params = (
        distributed.RANK_TIMEOUT_PARAM,
        Param("pace_ms", float, 200.0, "how long each step sleeps after its all-reduce",
              sweep=True),
    )
    strategies = (Strategy("w2", "two ranks", processes=True, world_size=2),)
    baseline = "w2"
    item_unit = "steps"
    supports_amp = False

    def build(self, strategy: Strategy, config: RunConfig) -> Any:
        return PacedWorkload(config)
