"""A two-rank scenario with a known straggler: rank 1 sleeps ``--delay-ms`` before each
all-reduce, so rank 0 waits about that long for it in every step."""

from __future__ import annotations

import time
from typing import Any

import torch

from profiler_kit.measure import distributed
from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload


class StragglerWorkload(Workload):
    def __init__(self, config: RunConfig) -> None:
        torch.manual_seed(0)
        self.rank = config.rank
        self.delay_s = config.params["delay_ms"] / 1000
        self.devices = [torch.device("cpu")]
        self.items_per_step = 1
        self.info = {"rank": config.rank}
        self.w = torch.randn(32, 32)
        self.grad = torch.zeros(4096)

    def step(self) -> None:
        with torch.profiler.record_function("forward"):
            self.grad += (self.w @ self.w).sum()
        if self.rank == 1:
            time.sleep(self.delay_s)
        torch.distributed.all_reduce(self.grad, group=distributed.group())

    def outputs(self) -> list[Any]:
        return [self.w]


class Straggler(Scenario):
    name = "straggler"
    description = "rank 1 sleeps before every all-reduce"
    params = (
        distributed.RANK_TIMEOUT_PARAM,
        Param("delay_ms", float, 50.0, "how long rank 1 sleeps before each all-reduce"),
    )
    strategies = (Strategy("w2", "two ranks, rank 1 late", processes=True, world_size=2),)
    baseline = "w2"
    item_unit = "steps"
    supports_amp = False

    def build(self, strategy: Strategy, config: RunConfig) -> Any:
        return StragglerWorkload(config)
