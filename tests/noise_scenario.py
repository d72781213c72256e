"""A tiny user scenario for the noise verdicts of one run: ``sleep`` and ``sleep-again``
are the same step (an A/A pair inside the run), ``sleep-twice`` sleeps twice per step, so
it does measurably more (twice the time, half the throughput)."""

from __future__ import annotations

import time
from typing import Any

from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload


class SleepPair(Scenario):
    name = "sleep-pair"
    description = "time.sleep per step: the same sleep twice, and one sleeping twice as long"
    params = (Param("sleep_ms", float, 4.0, "milliseconds slept per step", min_value=0.1),)
    strategies = (
        Strategy("sleep", "one sleep per step"),
        Strategy("sleep-again", "the same, measured as another strategy"),
        Strategy("sleep-twice", "two sleeps per step"),
    )
    baseline = "sleep"
    item_unit = "steps"
    supports_amp = False

    def build(self, strategy: Strategy, config: RunConfig) -> Any:
        return SleepWorkload(2 if strategy.name == "sleep-twice" else 1,
                             float(config.params["sleep_ms"]))


class SleepWorkload(Workload):
    def __init__(self, sleeps: int, sleep_ms: float) -> None:
        import torch

        self.torch = torch
        self.sleeps, self.seconds = sleeps, sleep_ms / 1000
        self.devices = [torch.device("cpu")]
        self.items_per_step = 1

    def step(self) -> None:
        for _ in range(self.sleeps):
            time.sleep(self.seconds)

    def outputs(self) -> list[Any]:
        return [self.torch.ones(1)]
