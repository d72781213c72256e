"""A user scenario whose second strategy is interrupted (Ctrl-C) while it is timed."""

from __future__ import annotations

from typing import Any

import torch

from profiler_kit.scenario import RunConfig, Scenario, Strategy, Workload


class CountingWorkload(Workload):
    def __init__(self, strategy: str) -> None:
        self.strategy = strategy
        self.x = torch.ones(4, 4)
        self.devices = [torch.device("cpu")]
        self.items_per_step = 4
        self.calls = 0

    def step(self) -> None:
        self.calls += 1
        if self.strategy == "ctrl_c" and self.calls > 2:
            raise KeyboardInterrupt
        self.y = self.x @ self.x

    def outputs(self) -> list[Any]:
        return [self.x @ self.x]


class Interrupted(Scenario):
    name = "interrupted"
    description = "the user presses Ctrl-C during the second strategy"
    strategies = (Strategy("first", "finishes"), Strategy("ctrl_c", "interrupted"),
                  Strategy("never", "never starts"))
    baseline = "first"
    supports_amp = False

    def build(self, strategy: Strategy, config: RunConfig) -> Workload:
        return CountingWorkload(strategy.name)
