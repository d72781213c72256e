from torch import nn


def model():
    return nn.Linear(2, 2)
