"""Your own model under two strategies: ``profkit run ./examples/my_scenario.py``.

A scenario file defines one ``Scenario`` subclass: the parameters it takes, the
strategies to compare, and ``build``, which returns a ``Workload`` (models and inputs
already on the device) with ``step`` and ``outputs``. profkit does the rest: warm-up,
synchronized timing, a separate profiled pass, the equivalence check against the
baseline, traces for TensorBoard, run.json and summary.md.
"""

from __future__ import annotations

import torch
from torch import nn

from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload


def small_cnn(width: int) -> nn.Module:
    """Stand-in for your model."""
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, 10),
    )


class MyWorkload(Workload):
    def __init__(self, model: nn.Module, x: torch.Tensor, amp_dtype: torch.dtype | None) -> None:
        self.model, self.x, self.amp_dtype = model, x, amp_dtype
        self.devices = [x.device]  # every device a step touches (all are synchronized)
        self.items_per_step = x.shape[0]  # throughput is items_per_step / step time
        self.info = {"param_count": sum(p.numel() for p in model.parameters())}

    def _forward(self) -> torch.Tensor:
        with torch.inference_mode(), torch.profiler.record_function("forward"), torch.autocast(
            self.x.device.type, dtype=self.amp_dtype or torch.float32,
            enabled=self.amp_dtype is not None,
        ):
            return self.model(self.x)

    def step(self) -> None:
        self.y = self._forward()

    def outputs(self) -> list[torch.Tensor]:
        return [self._forward()]  # compared with the baseline's before anything is timed


class MyScenario(Scenario):
    name = "my_cnn"
    description = "A small CNN: default memory layout against channels_last"
    params = (
        Param("batch_size", int, 16, "images per step", cuda_default=256, min_value=1),
        Param("width", int, 16, "channels of the first convolution", min_value=1),
    )
    strategies = (
        Strategy("contiguous", "NCHW tensors (PyTorch's default)"),
        Strategy("channels_last", "NHWC tensors and weights"),
    )
    baseline = "contiguous"

    def build(self, strategy: Strategy, config: RunConfig) -> MyWorkload:
        torch.manual_seed(config.seed)  # same weights and inputs for every strategy
        model = small_cnn(config.params["width"]).eval().to(config.device)
        x = torch.randn(config.params["batch_size"], 3, 32, 32, device=config.device)
        if strategy.base_name == "channels_last":
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        amp = getattr(torch, config.amp_dtype) if config.amp_dtype else None
        return MyWorkload(model, x, amp)
