"""A model that fails in float32 eager: its view does not fit the batch."""

import torch
from torch import nn


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).view(3, -1)


def model():
    return Broken()


def inputs(batch_size):
    return torch.randn(batch_size, 4)
