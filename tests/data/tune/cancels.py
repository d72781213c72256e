"""A model whose output is a difference of two large, nearly equal matmuls: reduced
precision rounds both and the difference changes beyond any tolerance."""

import torch
from torch import nn


class Cancels(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 16)
        with torch.no_grad():
            self.lin.weight.fill_(10.0)

    def forward(self, x):
        return self.lin(1.0 + 1e-3 * x) - self.lin(torch.ones_like(x))


def model():
    return Cancels()


def inputs(batch_size):
    return torch.randn(batch_size, 64)
