"""A model that runs out of memory past 16 items, as a memory-limited device would: it
raises torch.OutOfMemoryError itself (a real one needs a device this small). Each step
waits 20 ms, so its throughput is at most batch / 0.02 s."""

import time

import torch
from torch import nn

FITS = 16
STEP_FLOOR_S = 0.02


class RunsOutPast16(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 2)

    def forward(self, x):
        if x.shape[0] > FITS:
            raise torch.OutOfMemoryError(f"simulated: {x.shape[0]} items do not fit, {FITS} do")
        time.sleep(STEP_FLOOR_S)
        return self.lin(x)


def model():
    return RunsOutPast16()


def inputs(batch_size):
    return torch.randn(batch_size, 8)
