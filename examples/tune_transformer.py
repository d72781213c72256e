"""``profkit tune examples/tune_transformer.py``: a small nn.TransformerEncoder, inference."""

import torch
from torch import nn


def model():
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                       dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def inputs(batch_size):
    return torch.randn(batch_size, 64, 128)
