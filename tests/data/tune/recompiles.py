"""A model whose forward branches on a Python int that alternates between calls (with the
same result either way): torch.compile guards on it, so a later call compiles again."""

import torch
from torch import nn


class Alternates(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls % 2:
            return self.lin(x)
        return self.lin(x) * 1.0


def model():
    return Alternates()


def inputs(batch_size):
    return torch.randn(batch_size, 16)
