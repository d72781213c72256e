"""A user scenario whose ``broken`` strategy raises while stepping (as an OOM would)."""

from __future__ import annotations

from typing import Any

import torch

from profiler_kit.scenario import CUDA, Param, RunConfig, Scenario, Strategy, Workload


class TinyWorkload(Workload):
    def __init__(self, strategy: str, config: RunConfig) -> None:
        torch.manual_seed(config.seed)
        self.strategy = strategy
        self.model = torch.nn.Linear(8, 4)
        self.x = torch.randn(config.params["batch"], 8)
        self.devices = [torch.device("cpu")]
        self.items_per_step = config.params["batch"]
        self.info = {"param_count": 36}

    def step(self) -> None:
        if self.strategy == "broken":
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)")
        with torch.inference_mode(), torch.profiler.record_function("forward"):
            y = self.model(self.x)
        if self.strategy == "wrong":
            y = y + 1
        self.y = y

    def outputs(self) -> list[Any]:
        with torch.inference_mode():
            y = self.model(self.x)
        return [y + 1 if self.strategy == "wrong" else y]

    def close(self) -> None:
        pass


class Failing(Scenario):
    name = "failing"
    description = "one strategy raises, one computes something else"
    params = (Param("batch", int, 4, "rows", min_value=1),)
    strategies = (
        Strategy("base", "works"),
        Strategy("broken", "raises in step"),
        Strategy("wrong", "adds one to the outputs"),
        Strategy("after", "works, runs after the failures"),
        Strategy("gpu_only", "needs CUDA", requires=(CUDA,)),
    )
    baseline = "base"

    def build(self, strategy: Strategy, config: RunConfig) -> TinyWorkload:
        return TinyWorkload(strategy.name, config)
