"""``profkit tune examples/tune_resnet.py``: torchvision ResNet-18, random weights, inference.

Add ``def loss(outputs, inputs): ...`` to tune a training step instead.
"""

import torch
import torchvision


def model():
    return torchvision.models.resnet18(weights=None, num_classes=10)


def inputs(batch_size):
    return torch.randn(batch_size, 3, 64, 64)
