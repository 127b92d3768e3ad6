import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x / 0.7, dim=-1)


def get_inputs():
    return [torch.randn(6, 100)]


def get_init_inputs():
    return []


def get_test_inputs():
    return [[torch.randn(1, 3)], [torch.randn(5, 257) * 30]]
