"""``profkit tune examples/tune_resnet.py``: torchvision ResNet-18, random weights, training."""

import torch
import torchvision


def model():
    return torchvision.models.resnet18(weights=None, num_classes=10)


def inputs(batch_size):
    return torch.randn(batch_size, 3, 64, 64)


def loss(outputs, inputs):
    return outputs.float().square().mean()
