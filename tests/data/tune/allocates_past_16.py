"""A model whose step allocates a buffer of 2**44 bytes per item past 16 items: the CPU
allocator refuses it (a RuntimeError, not torch.OutOfMemoryError), as a real
out-of-memory on the CPU looks."""

import torch
from torch import nn

FITS = 16


class AllocatesPast16(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 2)

    def forward(self, x):
        if x.shape[0] > FITS:
            scratch = torch.empty(x.shape[0] * 2**44, dtype=torch.uint8)
            x = x + scratch[:1].float()
        return self.lin(x)


def model():
    return AllocatesPast16()


def inputs(batch_size):
    return torch.randn(batch_size, 8)
