"""A tiny CNN slow by design on two independent paths: 0.15 s unless its input is
channels_last, 0.1 s unless autocast is on. Each knob wins alone; stacked, both waits go."""

import time

import torch
from torch import nn

CHANNELS_LAST_SAVES_S = 0.15
AUTOCAST_SAVES_S = 0.1


class TwoSlowPaths(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        if not x.is_contiguous(memory_format=torch.channels_last):
            time.sleep(CHANNELS_LAST_SAVES_S)
        if not torch.is_autocast_enabled(x.device.type):
            time.sleep(AUTOCAST_SAVES_S)
        return self.conv(x).float().mean(dim=(2, 3))


def model():
    return TwoSlowPaths()


def inputs(batch_size):
    return torch.randn(batch_size, 3, 8, 8)
