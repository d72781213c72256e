"""A tiny CNN that is slow by design unless its input is channels_last (a real knob wins)."""

import time

import torch
from torch import nn


class SlowUnlessChannelsLast(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        if not x.is_contiguous(memory_format=torch.channels_last):
            time.sleep(0.2)  # the deliberately slow baseline
        return self.conv(x).mean(dim=(2, 3))


def model():
    return SlowUnlessChannelsLast()


def inputs(batch_size):
    return torch.randn(batch_size, 3, 8, 8)


def loss(outputs, inputs):
    return outputs.square().mean()
