"""A tiny user scenario for the TensorBoard test: two small conv nets, run one after the
other or in two threads, so a run takes about a second and its traces hold convolution,
batchnorm, GEMM and thread activity like a real run's."""

from __future__ import annotations

import threading
from typing import Any

from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload


class TinyPair(Scenario):
    name = "tiny-pair"
    description = "two tiny conv nets on 2x3x16x16 inputs"
    params = (Param("batch_size", int, 2, "images per model per step", min_value=1),)
    strategies = (
        Strategy("sequential", "one model after the other"),
        Strategy("threads", "one Python thread per model"),
    )
    baseline = "sequential"
    supports_amp = False

    def build(self, strategy: Strategy, config: RunConfig) -> Any:
        return TinyPairWorkload(strategy.name, config)


class TinyPairWorkload(Workload):
    def __init__(self, strategy: str, config: RunConfig) -> None:
        import torch

        self.torch = torch
        self.threaded = strategy == "threads"
        device = torch.device(config.device)
        self.devices = [device]
        batch = int(config.params["batch_size"])
        self.items_per_step = 2 * batch
        torch.manual_seed(config.seed)
        self.models = [self._model().to(device).eval() for _ in range(2)]
        self.inputs = [torch.randn(batch, 3, 16, 16, device=device) for _ in range(2)]

    def _model(self) -> Any:
        nn = self.torch.nn
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(8 * 16, 10))

    def _forward(self, index: int, results: list[Any]) -> None:
        with self.torch.inference_mode():
            results[index] = self.models[index](self.inputs[index])

    def step(self) -> None:
        self._run()

    def _run(self) -> list[Any]:
        results: list[Any] = [None, None]
        if not self.threaded:
            for i in range(2):
                self._forward(i, results)
            return results
        threads = [threading.Thread(target=self._forward, args=(i, results)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def outputs(self) -> list[Any]:
        return self._run()

    def close(self) -> None:
        self.models.clear()
        self.inputs.clear()
