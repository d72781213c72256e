"""A user scenario that writes its own report after the run to ``--report FILE``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from profiler_kit.scenario import CUDA, Param, RunConfig, Scenario, Strategy, Workload
from profiler_kit.util import outputs


class Linear(Workload):
    def __init__(self, config: RunConfig) -> None:
        torch.manual_seed(config.seed)
        self.model = torch.nn.Linear(8, 4)
        self.x = torch.randn(4, 8)
        self.devices = [torch.device("cpu")]
        self.items_per_step = 4

    def step(self) -> None:
        with torch.inference_mode():
            self.model(self.x)

    def outputs(self) -> list[Any]:
        with torch.inference_mode():
            return [self.model(self.x)]


class Reporting(Scenario):
    name = "reporting"
    description = "one tiny strategy and a report written after the run"
    params = (Param("report", str, "", "also write the report here", output=True),)
    strategies = (Strategy("base", "a linear layer"),
                  Strategy("gpu_only", "needs CUDA", requires=(CUDA,)))
    baseline = "base"
    item_unit = "rows"

    def build(self, strategy: Strategy, config: RunConfig) -> Linear:
        return Linear(config)

    def finish_run(self, result: Any) -> None:
        target = str(result.params.get("report") or "")
        if target:
            outputs.write(None if target == "-" else Path(target),
                          '{"schema": "profkit.reporting/1"}\n')
