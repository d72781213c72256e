"""A model whose float32 output is NaN where the input is negative: nothing to compare with."""

import torch
from torch import nn


class Sqrt(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).sqrt()


def model():
    return Sqrt()


def inputs(batch_size):
    return torch.randn(batch_size, 4)
