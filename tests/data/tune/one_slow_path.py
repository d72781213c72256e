"""A tiny CNN that waits 0.2 s unless its input is channels_last or autocast is on, and
always waits 0.05 s: each knob wins alone, and stacking them saves nothing more."""

import time

import torch
from torch import nn

FLOOR_S = 0.05
EITHER_SAVES_S = 0.2


class OneSlowPath(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        time.sleep(FLOOR_S)
        if not (x.is_contiguous(memory_format=torch.channels_last)
                or torch.is_autocast_enabled(x.device.type)):
            time.sleep(EITHER_SAVES_S)
        return self.conv(x).float().mean(dim=(2, 3))


def model():
    return OneSlowPath()


def inputs(batch_size):
    return torch.randn(batch_size, 3, 8, 8)
